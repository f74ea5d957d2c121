"""Judgment sets of every kind: each format imported, checked against the dataset, kept as imported,
refused whole with file/line/field, and only verdict sets seed pools."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.conf import settings

from annotation.formats.errors import ImportRejected
from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.judgment_sets.storage import judgment_file_path

from .helpers import dataset_from_ids, ids_of_trec_files

pytestmark = pytest.mark.django_db
EVALUATION = Path(__file__).resolve().parents[3] / "fixtures" / "evaluation"
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def _trecvid_dataset(tmp_path):
    queries, items = ids_of_trec_files(EVALUATION / "trecvid.qrels", EVALUATION / "trecvid_run_a.txt",
                                       EVALUATION / "trecvid_run_b.txt")
    return dataset_from_ids(tmp_path / "data", queries=queries, items=items, name="avs")


def _stored_files():
    root = Path(settings.JUDGMENTS_ROOT)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_sample_eval_keeps_grade_and_stratum_counts_unjudged_and_stores_the_file(tmp_path):
    dataset = _trecvid_dataset(tmp_path)
    outcome = judgments_import(dataset=dataset, path=EVALUATION / "trecvid.qrels")
    judgment_set = outcome.judgment_set
    assert judgment_set.source_format == "sample_eval" and judgment_set.seeds_pools  # guessed from 5 fields
    lines = [line.split() for line in (EVALUATION / "trecvid.qrels").read_text().splitlines()]
    judged = [parts for parts in lines if parts[4] != "-1"]
    rows = {(j.caption.external_id, j.clip.external_id): (j.label, j.relevance, j.stratum)
            for j in ImportedJudgment.objects.filter(judgment_set=judgment_set).select_related("caption", "clip")}
    assert len(rows) == len(judged)
    assert rows[("9", "s1a")] == ("relevant", 1, "1")
    assert rows[("9", "s1b")] == ("not_relevant", 0, "1")
    assert ("9", "s2b") not in rows  # -1: pooled, not judged
    counts = judgment_set.counts
    assert counts["records"] == len(lines)
    assert counts["pooled_not_judged"] == sum(parts[4] == "-1" for parts in lines)
    assert counts["relevant"] == sum(int(parts[4]) > 0 for parts in lines)
    assert counts["strata"] == len({(parts[0], parts[3]) for parts in lines})
    assert all(isinstance(key, str) and type(key) is str for key in counts)
    # Kept byte for byte, under its own name.
    stored = judgment_file_path(judgment_set.stored_file)
    assert stored.name == "trecvid.qrels"
    assert stored.read_bytes() == (EVALUATION / "trecvid.qrels").read_bytes()


def test_a_bad_file_is_refused_whole_and_leaves_no_set_row_or_file(tmp_path):
    dataset = _trecvid_dataset(tmp_path)
    bad = tmp_path / "bad.qrels"
    bad.write_text("9 0 s1a 1 1\n9 0 nosuchshot 1 0\n9 0 s1b 1 x\n")
    with pytest.raises(ImportRejected) as caught:
        judgments_import(dataset=dataset, path=bad, fmt="sample_eval")
    messages = [str(issue) for issue in caught.value.issues]
    assert messages == ["bad.qrels, line 2, field 'shot': no clip 'nosuchshot' in 'avs'",
                        "bad.qrels, line 3, field 'rel': 'x' is not a whole number (1 relevant, 0 not relevant, "
                        "-1 not judged)"]
    assert not JudgmentSet.objects.exists() and not ImportedJudgment.objects.exists()
    assert _stored_files() == []


def test_a_set_that_seeds_no_pool_may_contradict_the_seeding_sets_and_writes_no_verdicts(tmp_path):
    dataset = _trecvid_dataset(tmp_path)
    first = tmp_path / "official.qrels"
    first.write_text("9 0 s1a 1\n9 0 s1b 0\n")
    judgments_import(dataset=dataset, path=first)
    rejudged = tmp_path / "rejudged.qrels"
    rejudged.write_text("9 0 s1a 0\n9 0 s1b 1\n")
    with pytest.raises(ImportRejected, match="line 1, field 'relevance': says 'irrelevant' but the earlier import "
                                             "'official' says 'relevant'"):
        judgments_import(dataset=dataset, path=rejudged)
    outcome = judgments_import(dataset=dataset, path=rejudged, seeds_pools=False)
    assert outcome.created and not outcome.judgment_set.seeds_pools
    assert outcome.judgment_set.counts == {"records": 2, "relevant": 1, "not_relevant": 1}
    assert not ImportedJudgment.objects.filter(judgment_set=outcome.judgment_set).exists()
    assert judgment_file_path(outcome.judgment_set.stored_file).read_text() == rejudged.read_text()


def test_rater_labels_join_query_and_item_to_the_dataset_and_count_repeats(tmp_path):
    dataset = _trecvid_dataset(tmp_path)
    labels = tmp_path / "labels.csv"
    labels.write_text("query,item,rater,value\n9,s1a,ann,2\n9,s1a,bob,3\n9,s1a,ann,1\n9,s1b,bob,0\n")
    outcome = judgments_import(dataset=dataset, path=labels, fmt="rater_labels")
    judgment_set = outcome.judgment_set
    assert not judgment_set.seeds_pools
    assert judgment_set.params == {"columns": {}, "repeats": "last", "file_format": None}
    # 4 labels, 2 units (9/s1a, 9/s1b), 2 raters; ann labelled 9/s1a twice: 1 repeated cell.
    assert judgment_set.counts == {"labels": 4, "units": 2, "raters": 2, "repeated_cells": 1}
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("q,clip,who,grade\n9,s1a,ann,2\n77,zz,bob,1\n")
    with pytest.raises(ImportRejected) as caught:
        judgments_import(dataset=dataset, path=unknown, fmt="rater_labels",
                         options={"columns": "query=q,item=clip,rater=who,value=grade"})
    assert [str(i) for i in caught.value.issues] == ["unknown.csv, line 3, field 'q': no caption '77' in 'avs'",
                                                     "unknown.csv, line 3, field 'clip': no clip 'zz' in 'avs'"]


def test_rater_labels_by_unit_are_kept_as_they_are_and_cannot_seed_pools(tmp_path):
    dataset = _trecvid_dataset(tmp_path)
    excerpt = FIXTURES / "tvr_ranking_excerpt.csv"
    with pytest.raises(ImportRejected, match="holds raw labels, not verdicts on pairs, so it cannot seed pools"):
        judgments_import(dataset=dataset, path=excerpt, fmt="rater_labels", seeds_pools=True,
                         options={"columns": "unit=pair_id,rater=worker,value=relevance"})
    outcome = judgments_import(dataset=dataset, path=excerpt, fmt="rater_labels",
                               options={"columns": "unit=pair_id,rater=worker,value=relevance", "repeats": "first"})
    rows = [line.split(",") for line in excerpt.read_text().splitlines()[1:] if line]
    cells = {}
    for unit, worker, _ in rows:
        cells[(unit, worker)] = cells.get((unit, worker), 0) + 1
    assert outcome.judgment_set.counts == {"labels": len(rows), "units": len({r[0] for r in rows}),
                                           "raters": len({r[1] for r in rows}),
                                           "repeated_cells": sum(n > 1 for n in cells.values())}
    assert outcome.judgment_set.params["repeats"] == "first"
    with pytest.raises(ImportRejected, match="field 'repeats': 'newest' is not a repeat rule"):
        judgments_import(dataset=dataset, path=excerpt, fmt="rater_labels", name="again",
                         options={"repeats": "newest"})


@pytest.mark.parametrize("fmt, name", [("qvhighlights", "qvh_gt.jsonl"), ("tvr", "tvr_gt.jsonl"),
                                       ("didemo", "didemo_gt.json")])
def test_moment_ground_truth_is_checked_counted_and_stored(tmp_path, fmt, name):
    dataset = _trecvid_dataset(tmp_path)
    outcome = judgments_import(dataset=dataset, path=FIXTURES / "moments" / name, fmt=fmt)
    counts = outcome.judgment_set.counts
    assert counts["queries"] >= 1 and counts["windows"] >= counts["queries"]
    assert not outcome.judgment_set.seeds_pools
    assert judgment_file_path(outcome.judgment_set.stored_file).read_bytes() == (FIXTURES / "moments" / name).read_bytes()


def test_qvhighlights_counts_queries_with_several_windows(tmp_path):
    dataset = _trecvid_dataset(tmp_path)
    gt = tmp_path / "gt.jsonl"
    shutil.copy(FIXTURES / "moments" / "qvh_gt.jsonl", gt)
    outcome = judgments_import(dataset=dataset, path=gt, fmt="qvhighlights")
    records = [json.loads(line) for line in gt.read_text().splitlines() if line.strip()]
    assert outcome.judgment_set.counts == {
        "queries": len(records), "windows": sum(len(r["relevant_windows"]) for r in records),
        "queries_with_several_windows": sum(len(r["relevant_windows"]) > 1 for r in records)}
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"qid": 1, "query": "q", "duration": 10, "vid": "v", "relevant_windows": [[5, 2]]}\n')
    with pytest.raises(ImportRejected) as caught:
        judgments_import(dataset=dataset, path=broken, fmt="qvhighlights")
    assert caught.value.issues[0].line == 1 and "relevant_windows" in caught.value.issues[0].field
    assert JudgmentSet.objects.count() == 1


def test_options_a_format_does_not_take_are_refused(tmp_path):
    dataset = _trecvid_dataset(tmp_path)
    with pytest.raises(ImportRejected, match="field 'columns': only rater_labels files take columns"):
        judgments_import(dataset=dataset, path=EVALUATION / "trecvid.qrels", options={"columns": "unit=a"})
    with pytest.raises(ImportRejected, match="field 'only_dataset': only FIRE JSON files have dataset tags"):
        judgments_import(dataset=dataset, path=EVALUATION / "trecvid.qrels", only_dataset="MSVD")
    with pytest.raises(ImportRejected, match="unknown judgments format 'pool'"):
        judgments_import(dataset=dataset, path=EVALUATION / "trecvid.qrels", fmt="pool")


def test_the_command_takes_reading_options_and_no_seed(tmp_path, capsys):
    from django.core.management import call_command

    dataset = _trecvid_dataset(tmp_path)
    labels = tmp_path / "labels.csv"
    labels.write_text("topic,shot,who,grade\n9,s1a,ann,2\n9,s1a,ann,3\n")
    call_command("import_judgments", str(labels), "--dataset", dataset.name, "--format", "rater_labels",
                 "--columns", "query=topic,item=shot,rater=who,value=grade", "--repeats", "first")
    out = capsys.readouterr().out
    assert "imported judgments 'labels'" in out and "labels: 2, units: 1, raters: 1, repeated cells: 1" in out
    judgment_set = JudgmentSet.objects.get(name="labels")
    assert judgment_set.params["columns"] == {"query": "topic", "item": "shot", "rater": "who", "value": "grade"}
    qrels = tmp_path / "copy.qrels"
    qrels.write_text("9 0 s1a 1\n")
    call_command("import_judgments", str(qrels), "--dataset", dataset.name, "--no-seed")
    assert not JudgmentSet.objects.get(name="copy").seeds_pools and not ImportedJudgment.objects.exists()
