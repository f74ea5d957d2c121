"""Issue 40: a run import looks up only the caption and clip ids its file names, so its cost
follows the run, not the collection. Read from the statements the import sends (every one that
reads the clip or caption table), on a collection fifty times larger than the run."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.formats.errors import ImportRejected
from annotation.models import Caption, Clip, Dataset, Prediction
from annotation.services.datasets import runs as run_service
from annotation.services.datasets.runs import run_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    dataset = Dataset.objects.create(name="big collection")
    Clip.objects.bulk_create([Clip(dataset=dataset, external_id=f"shot{i}", video_id=f"v{i}") for i in range(1000)])
    Caption.objects.bulk_create([Caption(dataset=dataset, external_id=f"t{i}", text=f"topic {i}") for i in range(50)])
    other = Dataset.objects.create(name="another")  # the same ids in another dataset are not this one's
    Clip.objects.create(dataset=other, external_id="shot-only-elsewhere", video_id="x")
    return dataset


def _reads_of(table: str, queries) -> list[dict]:
    return [q for q in queries if re.search(rf'FROM "?{table}"?', q["sql"]) and q["sql"].lstrip().upper().startswith("SELECT")]


def test_only_the_ids_the_run_names_are_read(tmp_path, collection, monkeypatch):
    monkeypatch.setattr(run_service._StagingTable, "LOOKUP_BATCH", 7)  # several batches of lines
    monkeypatch.setattr(run_service._DatasetIds, "QUERY_BATCH", 4)  # several queries per batch
    named = {"t1": ["shot5", "shot9", "shot17"], "t2": ["shot9", "shot400", "shot3", "shot999"], "t3": ["shot5"]}
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{topic} Q0 {shot} {rank} {1 - rank / 10} sys\n"
                            for topic, shots in named.items() for rank, shot in enumerate(shots, start=1)))
    with CaptureQueriesContext(connection) as captured:
        run = run_import(dataset=collection, path=path).run
    clip_reads = _reads_of(Clip._meta.db_table, captured.captured_queries)
    caption_reads = _reads_of(Caption._meta.db_table, captured.captured_queries)
    assert clip_reads and caption_reads
    for query in clip_reads + caption_reads:
        # PostgreSQL: one index probe per id (an array of the ids, _DatasetIds._probe); SQLite: IN.
        asks = "unnest(ARRAY[" if connection.vendor == "postgresql" else " IN ("
        assert "external_id" in query["sql"] and asks in query["sql"], query["sql"]
    shots_read = set(re.findall(r"'(shot\d+)'", " ".join(q["sql"] for q in clip_reads)))
    assert shots_read == {s for shots in named.values() for s in shots}  # each asked once, no other
    assert sum(len(re.findall(r"'shot\d+'", q["sql"])) for q in clip_reads) == len(shots_read)
    stored = set(Prediction.objects.filter(run=run).values_list("caption__external_id", "clip__external_id", "rank"))
    assert stored == {(t, s, r) for t, shots in named.items() for r, s in enumerate(shots, start=1)}


def test_an_id_of_another_dataset_is_refused_naming_its_line(tmp_path, collection, monkeypatch):
    monkeypatch.setattr(run_service._StagingTable, "LOOKUP_BATCH", 2)
    path = tmp_path / "run.trec"
    path.write_text("t1 Q0 shot1 1 0.9 sys\nt1 Q0 shot2 2 0.8 sys\nt1 Q0 shot-only-elsewhere 3 0.7 sys\n"
                    "t9999 Q0 shot3 1 0.9 sys\n")
    with pytest.raises(ImportRejected) as refused:
        run_import(dataset=collection, path=path)
    problems = [(i.line, i.field, i.message) for i in refused.value.issues]
    assert problems == [(3, "doc_id", "unknown clip id 'shot-only-elsewhere' (not in this dataset)"),
                        (4, "query_id", "unknown caption id 't9999' (not in this dataset)")]
    assert not Prediction.objects.exists()


@pytest.mark.postgres
def test_postgresql_probes_the_unique_index_per_id_and_never_reads_the_dataset(tmp_path):
    """Asked as `external_id IN (5,000 ids)`, PostgreSQL's planner read every clip of the dataset
    and filtered them (an index scan on dataset_id, or a sequential scan at 1M clips): the import
    grew with the collection. The lookup statement's plan, on a collection of 20,000 clips with
    planner statistics, must be a probe of the (dataset, external id) index for each id."""
    if connection.vendor != "postgresql":
        pytest.fail("needs PostgreSQL")
    dataset = Dataset.objects.create(name="planned")
    Clip.objects.bulk_create([Clip(dataset=dataset, external_id=f"shot{i:05d}", video_id=f"v{i}")
                              for i in range(20_000)], batch_size=5_000)
    Caption.objects.bulk_create([Caption(dataset=dataset, external_id=f"t{t}", text=f"topic {t}") for t in range(5)])
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Clip._meta.db_table}")
    path = tmp_path / "run.trec"
    path.write_text("".join(f"t{i // 1000} Q0 shot{4 * i:05d} {i % 1000 + 1} {1 - i % 1000 / 1000} sys\n"
                            for i in range(5_000)))  # 5 topics x 1,000 distinct clips
    with CaptureQueriesContext(connection) as captured:
        run = run_import(dataset=dataset, path=path).run
    assert run.prediction_count == 5_000
    (lookup,) = [q["sql"] for q in _reads_of(Clip._meta.db_table, captured.captured_queries)]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + lookup)
        plan = cursor.fetchone()[0][0]["Plan"]

    def nodes(node):
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    reads = [n for n in nodes(plan) if n.get("Relation Name") == Clip._meta.db_table]
    assert reads, plan
    for node in reads:
        assert node["Node Type"] == "Index Scan" and node["Index Name"] == "clip_unique_external_id", node
        assert "external_id" in node["Index Cond"] and "Filter" not in node, node
