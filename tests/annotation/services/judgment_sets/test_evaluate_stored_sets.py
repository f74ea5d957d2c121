"""`evaluate --dataset D --judgment-set NAME`: a stored set scores runs exactly as its file does,
with the runs given as files or as stored runs, the dataset filling in what FIRE files lack
(caption texts, original positives), and --store keeping the result as a report."""
from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Report
from annotation.services.datasets.imports import dataset_import
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.datasets.runs import run_import

from .helpers import dataset_from_ids, ids_of_trec_files

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
EVALUATION = FIXTURES / "evaluation"
EVALUATE = FIXTURES / "evaluate"


def _evaluate(*args) -> str:
    out = StringIO()
    call_command("evaluate", *map(str, args), stdout=out, stderr=StringIO())
    return out.getvalue()


def _json(*args) -> dict:
    return {entry["run"]: entry for entry in map(json.loads, _evaluate(*args, "--output", "json").splitlines())}


def test_a_stored_sample_eval_set_prints_what_sample_eval_prints_for_its_file(tmp_path):
    qrels, run_a, run_b = EVALUATION / "trecvid.qrels", EVALUATION / "trecvid_run_a.txt", EVALUATION / "trecvid_run_b.txt"
    queries, items = ids_of_trec_files(qrels, run_a, run_b)
    dataset = dataset_from_ids(tmp_path, queries=queries, items=items, name="avs")
    judgments_import(dataset=dataset, path=qrels, name="avs-2016")
    # Stored under their run tags, so the runid column matches the files'.
    for path in (run_a, run_b):
        tag = path.read_text().split()[5]
        run_import(dataset=dataset, path=path, name=tag)

    from_files = _evaluate(run_a, run_b, "--judgments", qrels, "--judgments-format", "sample_eval",
                           "--output", "sample_eval")
    from_set = _evaluate(run_a, run_b, "--dataset", "avs", "--judgment-set", "avs-2016", "--output", "sample_eval")
    stored_runs = _evaluate("--dataset", "avs", "--judgment-set", "avs-2016", "--run", "runA", "--run", "runB",
                            "--output", "sample_eval")
    assert from_set == from_files
    assert stored_runs == from_files
    assert "infAP" in from_files and len(from_files.splitlines()) > 20


def test_a_stored_fire_set_takes_caption_texts_and_original_positives_from_the_dataset(tmp_path):
    texts = dict(line.split("\t") for line in (EVALUATE / "fire_queries.tsv").read_text().splitlines())
    originals = {line.split()[0]: line.split()[2] for line in (EVALUATE / "fire_originals.qrels").read_text().splitlines()}
    manifest = tmp_path / "fire.jsonl"
    with manifest.open("w") as out:
        for i in range(1, 10):
            out.write(json.dumps({"kind": "clip", "id": f"video{i}"}) + "\n")
        for caption, text in texts.items():
            record = {"kind": "caption", "id": caption, "text": text}
            if caption in originals:
                record["clip"] = originals[caption]
            out.write(json.dumps(record) + "\n")
        # Texts FIRE judged that no run query asks for: the dataset has them as captions too.
        for i, text in enumerate(("fireworks", "two people dance"), start=5):
            out.write(json.dumps({"kind": "caption", "id": f"c{i}", "text": text}) + "\n")
    dataset = dataset_import(path=manifest, name="fire-example")
    outcome = judgments_import(dataset=dataset, path=EVALUATE / "fire.json", name="fire")
    assert outcome.judgment_set.source_format == "fire_json"
    run_import(dataset=dataset, path=EVALUATE / "fire_run.txt", name="runA")

    direct = _json(EVALUATE / "fire_run.txt", "--judgments", EVALUATE / "fire.json", "--judgments-format",
                   "fire_json", "--queries", EVALUATE / "fire_queries.tsv", "--originals",
                   EVALUATE / "fire_originals.qrels", "--measures", "AP", "P@5", "RR", "Bpref")["fire_run.txt"]
    stored = _json("--dataset", "fire-example", "--judgment-set", "fire", "--run", "runA", "--with-originals",
                   "--measures", "AP", "P@5", "RR", "Bpref")["runA"]
    assert stored["measures"] == pytest.approx(direct["measures"])
    assert stored["per_query"] == {q: pytest.approx(v) for q, v in direct["per_query"].items()}
    # The hand-worked FIRE layout of tests/annotation/services/evaluation/test_evaluate_fire_rater_didemo.py:
    # AP 62.2 (34.4 + 27.8).
    assert stored["fire"]["map"]["text"] == direct["fire"]["map"]["text"] == "62.2 (34.4 + 27.8)"


def test_a_stored_rater_labels_set_is_graded_with_its_stored_rule_and_store_keeps_a_report(tmp_path):
    labels, run = EVALUATE / "rater_labels.csv", EVALUATE / "rater_run.txt"
    rows = [line.split(",") for line in labels.read_text().splitlines()[1:]]
    queries, items = ids_of_trec_files(run)
    dataset = dataset_from_ids(tmp_path, queries=queries + [r[0] for r in rows], items=items + [r[1] for r in rows],
                               name="graded")
    judgments_import(dataset=dataset, path=labels, fmt="rater_labels", name="raw",
                     options={"columns": "query=query_id,item=moment,rater=worker,value=relevance", "repeats": "first"})
    direct = _json(run, "--judgments", labels, "--judgments-format", "rater_labels", "--columns",
                   "query=query_id,item=moment,rater=worker,value=relevance", "--repeats", "first",
                   "--aggregate", "majority", "--measures", "AP", "nDCG@10")[run.name]
    stored = _json(run, "--dataset", "graded", "--judgment-set", "raw", "--aggregate", "majority",
                   "--measures", "AP", "nDCG@10")[run.name]
    assert stored["measures"] == pytest.approx(direct["measures"])
    last = _json(run, "--dataset", "graded", "--judgment-set", "raw", "--repeats", "last", "--aggregate", "majority",
                 "--measures", "AP", "nDCG@10")[run.name]
    assert last["per_query"]["q1"] != stored["per_query"]["q1"]  # q1 m4's grade depends on the rule

    _evaluate(run, "--dataset", "graded", "--judgment-set", "raw", "--store")
    report = Report.objects.get(kind="evaluation")
    assert report.params["runs"][0]["file"] == run.name and len(report.params["runs"][0]["checksum"]) == 64
    assert report.result["judgment_set"]["name"] == "raw" and report.result["runs"][0]["measures"]
    assert report.versions["ir_measures"]


def test_bad_requests_say_what_to_do(tmp_path):
    dataset = dataset_from_ids(tmp_path, queries=["q"], items=["v"], name="small")
    qrels = tmp_path / "small.qrels"
    qrels.write_text("q 0 v 1\n")
    judgments_import(dataset=dataset, path=qrels)
    run = tmp_path / "run.txt"
    run.write_text("q Q0 v 1 1 r\n")
    with pytest.raises(CommandError, match="no run 'nope' in 'small' \\(runs: none\\)"):
        _evaluate("--dataset", "small", "--judgment-set", "small", "--run", "nope")
    with pytest.raises(CommandError, match="--run needs a stored set"):
        _evaluate(run, "--judgments", qrels, "--judgments-format", "qrels", "--run", "x")
    with pytest.raises(CommandError, match="--store needs a stored set"):
        _evaluate(run, "--judgments", qrels, "--judgments-format", "qrels", "--store")
    with pytest.raises(CommandError, match="read as it was imported"):
        _evaluate(run, "--dataset", "small", "--judgment-set", "small", "--judgments-format", "qrels")
    with pytest.raises(CommandError, match="name at least one run"):
        _evaluate("--dataset", "small", "--judgment-set", "small")
    assert not Report.objects.exists()


MOMENTS = FIXTURES / "moments"


def test_a_stored_qvhighlights_run_scores_as_its_file_against_a_stored_set(tmp_path):
    """Moment-DETR's prediction file imported as a run, its ground truth as a set: scoring the
    stored run gives what scoring the file gives (duplicated windows kept, an empty query scored 0)."""
    truth = [json.loads(line) for line in (MOMENTS / "qvh_gt.jsonl").read_text().splitlines()]
    dataset = dataset_from_ids(tmp_path, queries=[str(t["qid"]) for t in truth], items=[t["vid"] for t in truth],
                               name="qvval")
    judgments_import(dataset=dataset, path=MOMENTS / "qvh_gt.jsonl", fmt="qvhighlights", name="qvgt")
    run_import(dataset=dataset, path=MOMENTS / "qvh_pred.jsonl", fmt="qvhighlights", name="mdetr")

    from_file = _json(MOMENTS / "qvh_pred.jsonl", "--dataset", "qvval", "--judgment-set", "qvgt")
    stored = _json("--dataset", "qvval", "--judgment-set", "qvgt", "--run", "mdetr")
    assert list(stored) == ["mdetr"]
    assert stored["mdetr"]["measures"] == from_file["qvh_pred.jsonl"]["measures"]
    assert 0 < stored["mdetr"]["measures"]["MR-full-mAP"] < 100


def test_a_stored_tvr_run_scores_its_vcmr_list_as_the_file_does(tmp_path):
    """A TVR submission stores its VCMR list only: the stored run scores as that list alone does."""
    truth = [json.loads(line) for line in (MOMENTS / "tvr_gt.jsonl").read_text().splitlines()]
    submission = json.loads((MOMENTS / "tvr_pred.json").read_text())
    dataset = dataset_from_ids(tmp_path, queries=[str(t["desc_id"]) for t in truth],
                               items=list(submission["video2idx"]), name="tvrval")
    judgments_import(dataset=dataset, path=MOMENTS / "tvr_gt.jsonl", fmt="tvr", name="tvrgt")
    run_import(dataset=dataset, path=MOMENTS / "tvr_pred.json", fmt="tvr", name="xml")
    vcmr_only = tmp_path / "vcmr_only.json"
    vcmr_only.write_text(json.dumps({"video2idx": submission["video2idx"], "VCMR": submission["VCMR"]}))

    from_file = _json(vcmr_only, "--dataset", "tvrval", "--judgment-set", "tvrgt")["vcmr_only.json"]["measures"]
    stored = _json("--dataset", "tvrval", "--judgment-set", "tvrgt", "--run", "xml")["xml"]["measures"]
    assert stored == from_file
    assert any(name.startswith("VCMR-") and value > 0 for name, value in stored.items())
