"""Exports of the hand-worked example pool (tests/annotation/services/reports/test_report_metrics.py)."""
from __future__ import annotations

import csv
import hashlib
import io
import json

import pytest
from django.conf import settings

from annotation.models import Artefact, PooledPair, RaterProfile
from annotation.selectors.exports import LABEL_EXPORT_KINDS, artefact_list
from annotation.services.exports.labels import EXPORT_FORMATS, ExportError, artefact_file, export_create
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.pools.build import pool_create
from tests.annotation.services.reports.test_report_metrics import VERDICTS, example_pool, load_example

pytestmark = pytest.mark.django_db


def _content(artefact) -> str:
    return artefact_file(artefact=artefact).read_text(encoding="utf-8")


def test_qrels_are_the_corrected_qrels(tmp_path):
    pool = example_pool(tmp_path)
    artefact = export_create(pool=pool, fmt="qrels")
    # Resolved pool pairs, plus each original clip as 1 (q3 v3 stays 1 although raters said no);
    # the disagreement q2 v4 is left out; ordered by caption, then clip.
    assert _content(artefact) == (
        "q1 0 v1 1\nq1 0 v2 1\nq1 0 v3 0\nq1 0 v5 1\nq1 0 v6 0\n"
        "q2 0 v1 1\nq2 0 v2 1\nq2 0 v3 0\nq2 0 v6 0\n"
        "q3 0 v3 1\nq3 0 v4 1\nq3 0 v5 0\nq3 0 v6 0\n"
        "q4 0 v1 0\nq4 0 v5 0\nq4 0 v6 0\n")
    assert artefact.kind == "qrels" and artefact.params["counts"] == {"rows": 16}
    data = artefact_file(artefact=artefact).read_bytes()
    assert artefact.size == len(data) and artefact.sha256 == hashlib.sha256(data).hexdigest()
    assert str(artefact_file(artefact=artefact)).startswith(str(settings.EXPORT_ROOT))


def test_qrels_without_originals_only_hold_pool_verdicts(tmp_path):
    pool = example_pool(tmp_path)
    lines = _content(export_create(pool=pool, fmt="qrels", params={"originals": False})).splitlines()
    assert "q3 0 v3 0" in lines and len(lines) == 16


def test_csv_has_every_label_with_provenance_and_pseudonyms_only(tmp_path):
    pool = example_pool(tmp_path)
    rater = PooledPair.objects.get(pool=pool, caption__external_id="q1", clip__external_id="v1").labels.get().rater
    RaterProfile.objects.filter(user=rater).delete()  # a rater without a pseudonym yet gets one
    artefact = export_create(pool=pool, fmt="csv")
    pseudonym = RaterProfile.objects.get(user=rater).pseudonym
    text = _content(artefact)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 17 and artefact.params["counts"] == {"rows": 17}
    assert rater.username not in text
    by_pair = {(r["caption_id"], r["clip_id"]): r for r in rows}
    q1v1 = by_pair[("q1", "v1")]
    assert {k: q1v1[k] for k in ("caption_text", "is_original_positive", "pair_state", "resolved_label",
                                 "resolved_by", "rater", "value", "counted", "vote_number", "seconds",
                                 "proposed_by")} == {
        "caption_text": "a man is cooking", "is_original_positive": "True", "pair_state": "resolved",
        "resolved_label": "relevant", "resolved_by": "majority", "rater": str(pseudonym), "value": "relevant",
        "counted": "True", "vote_number": "1", "seconds": "3.0", "proposed_by": "B@1;A@2"}
    assert q1v1["created_at"].startswith("20")
    # The disagreement has no label: one row with empty label fields.
    q2v4 = by_pair[("q2", "v4")]
    assert (q2v4["pair_state"], q2v4["label_id"], q2v4["rater"], q2v4["proposed_by"]) == ("disagreement", "", "", "A@2")


def test_jsonl_matches_the_csv_rows(tmp_path):
    pool = example_pool(tmp_path)
    records = [json.loads(line) for line in _content(export_create(pool=pool, fmt="jsonl")).splitlines()]
    assert len(records) == 17
    q1v1 = next(r for r in records if (r["caption_id"], r["clip_id"]) == ("q1", "v1"))
    assert q1v1["proposed_by"] == [{"run": "B", "rank": 1}, {"run": "A", "rank": 2}]
    assert q1v1["counted"] is True and q1v1["pool_id"] == pool.pk
    assert {(r["caption_id"], r["clip_id"]): r["resolved_label"] or r["pair_state"] for r in records} == VERDICTS


def test_fire_json_joins_shared_caption_texts_into_one_record(tmp_path):
    pool = example_pool(tmp_path)
    artefact = export_create(pool=pool, fmt="fire_json", params={"dataset_tag": "MSRVTT", "license": "CC BY 4.0"})
    data = json.loads(_content(artefact))
    annotations = [(a["query"], a["video_id"], a["label"], a["models"]) for a in data["annotations"]]
    assert annotations == [
        # q1 and q2 ("a man is cooking") share records: their votes and proposing runs are pooled
        # (pair by pair, each pair's runs by rank).
        ("a man is cooking", "v1", "relevant", ["B", "A"]),
        ("a man is cooking", "v2", "relevant", ["A", "B"]),
        ("a man is cooking", "v3", "irrelevant", ["A", "B"]),
        ("a man is cooking", "v5", "relevant", ["B"]),
        ("a man is cooking", "v6", "irrelevant", ["A", "B"]),
        ("a dog runs", "v3", "irrelevant", ["B", "A"]),
        ("a dog runs", "v4", "relevant", ["A", "B"]),
        ("a dog runs", "v5", "irrelevant", ["B"]),
        ("a dog runs", "v6", "irrelevant", ["A"]),
        ("a cat sleeps", "v1", "irrelevant", ["A"]),
        ("a cat sleeps", "v5", "irrelevant", ["A"]),
        ("a cat sleeps", "v6", "irrelevant", ["A"]),
    ]
    first = data["annotations"][0]
    assert first["annotator_labels"] == ["relevant", "relevant"] and len(first["annotator_ids"]) == 2
    assert first["dataset"] == "MSRVTT" and len(first["response_ids"]) == 2 and len(set(first["queue_ids"])) == 2
    assert data["disagreements"] == [{"query": "a man is cooking", "video_id": "v4", "annotator_labels": [],
                                      "annotator_ids": [], "models": ["A"], "dataset": "MSRVTT",
                                      "response_ids": [], "queue_ids": []}]
    assert data["datasets"] == ["MSRVTT"] and data["license"] == "CC BY 4.0"
    assert artefact.params["counts"] == {"annotations": 12, "disagreements": 1, "shared_text_records": 4,
                                         "conflicting_texts": 0}


def test_fire_json_puts_conflicting_shared_texts_in_disagreements(tmp_path):
    pool = example_pool(tmp_path)
    PooledPair.objects.filter(pool=pool, caption__external_id="q2", clip__external_id="v1").update(
        resolved_label="not_relevant")
    data = json.loads(_content(artefact := export_create(pool=pool, fmt="fire_json")))
    assert ("a man is cooking", "v1") in {(d["query"], d["video_id"]) for d in data["disagreements"]}
    assert artefact.params["counts"]["conflicting_texts"] == 1
    assert artefact.params["dataset_tag"] == pool.dataset.name


def test_export_of_imported_judgments_carries_the_published_raters(tmp_path):
    pool = example_pool(tmp_path / "first")
    first = json.loads(_content(export_create(pool=pool, fmt="fire_json")))
    dataset, runs = load_example(tmp_path / "second", name="second")
    published = tmp_path / "published.json"
    published.write_text(json.dumps(first))
    judgments_import(dataset=dataset, path=published)
    rebuilt = pool_create(dataset=dataset, name="rebuilt", runs=runs, depth=3)
    again = json.loads(_content(export_create(pool=rebuilt, fmt="fire_json")))

    def essentials(data):
        return [{k: a.get(k) for k in ("query", "video_id", "label", "annotator_labels", "annotator_ids", "models")}
                for a in data["annotations"] + data["disagreements"]]

    assert essentials(again) == essentials(first)


def test_unknown_formats_and_parameters_are_refused(tmp_path):
    pool = example_pool(tmp_path)
    with pytest.raises(ExportError, match="unknown export format 'xml'"):
        export_create(pool=pool, fmt="xml")
    with pytest.raises(ExportError, match="unknown parameter.*depth"):
        export_create(pool=pool, fmt="csv", params={"depth": 3})
    with pytest.raises(ExportError, match="'originals' must be true or false"):
        export_create(pool=pool, fmt="qrels", params={"originals": "yes"})


@pytest.mark.django_db(transaction=True)
def test_an_export_outside_a_transaction_reads_one_snapshot(require_postgres, tmp_path):
    # Outside any transaction the export opens its own, REPEATABLE READ on PostgreSQL, so its
    # three ordered streams see the same labels even while raters keep labelling.
    pool = example_pool(tmp_path)
    artefact = export_create(pool=pool, fmt="fire_json")
    assert artefact.params["counts"]["annotations"] == 12
    assert json.loads(_content(artefact))["disagreements"][0]["video_id"] == "v4"


def test_every_export_format_is_listed_among_the_exports(tmp_path):
    assert {f.kind for f in EXPORT_FORMATS.values()} == set(LABEL_EXPORT_KINDS)
    pool = example_pool(tmp_path)
    made = [export_create(pool=pool, fmt=fmt).pk for fmt in EXPORT_FORMATS]
    Artefact.objects.create(dataset=pool.dataset, kind="proxy_matrix", name="m.npz", path="m.npz")
    assert sorted(artefact_list(pool_id=pool.pk).values_list("pk", flat=True)) == sorted(made)
