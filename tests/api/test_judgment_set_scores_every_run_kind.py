"""Issue 35 finding 4: a stored moment run and a score-matrix run are scored against a stored set
through REST (`POST judgment-sets/{id}/evaluate/`, which the reports page's form posts to) exactly
as `manage.py evaluate --judgment-set NAME --run NAME` scores them: one service does both. The
matrix run is also checked against pytrec_eval on the same ranking written by hand as a TREC file."""
from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
import pytrec_eval
from django.core.management import call_command

from annotation.models import Job, Report
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.datasets.runs import run_import
from annotation.services.judgment_sets.imports import judgments_import
from tests.annotation.services.judgment_sets.helpers import dataset_from_ids
from tests.annotation.services.datasets.test_matrix_runs import RANKED, SCORES, write_npz

pytestmark = pytest.mark.django_db
MOMENTS = Path(__file__).resolve().parents[1] / "fixtures" / "moments"


@pytest.fixture(autouse=True)
def runs_root(settings, tmp_path):
    settings.RUNS_ROOT = tmp_path / "runs"


def _cli(*args) -> dict:
    out = StringIO()
    call_command("evaluate", *map(str, args), "--output", "json", stdout=out, stderr=StringIO())
    return {entry["run"]: entry for entry in map(json.loads, out.getvalue().splitlines())}


def _rest(as_role, run_jobs, judgment_set: JudgmentSet, run_ids: list[int], **body) -> dict:
    with run_jobs():
        response = as_role("admin").post(f"/api/v1/judgment-sets/{judgment_set.pk}/evaluate/",
                                         {"runs": run_ids, **body}, format="json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.data["id"])
    assert job.status == "succeeded", (job.message, job.errors)
    report = Report.objects.get(pk=job.result["report_id"])
    return {entry["run"]: entry for entry in report.result["runs"]}


def test_a_stored_qvhighlights_run_scores_over_rest_as_the_command_scores_it(as_role, run_jobs, tmp_path):
    truth = [json.loads(line) for line in (MOMENTS / "qvh_gt.jsonl").read_text().splitlines()]
    dataset = dataset_from_ids(tmp_path, queries=[str(t["qid"]) for t in truth], items=[t["vid"] for t in truth],
                               name="qvval")
    judgment_set = judgments_import(dataset=dataset, path=MOMENTS / "qvh_gt.jsonl", fmt="qvhighlights",
                                    name="qvgt").judgment_set
    run = run_import(dataset=dataset, path=MOMENTS / "qvh_pred.jsonl", fmt="qvhighlights", name="mdetr").run

    rest = _rest(as_role, run_jobs, judgment_set, [run.pk])
    cli = _cli("--dataset", "qvval", "--judgment-set", "qvgt", "--run", "mdetr")
    assert list(rest) == list(cli) == ["mdetr"]
    assert rest["mdetr"]["measures"] == cli["mdetr"]["measures"]
    assert 0 < rest["mdetr"]["measures"]["MR-full-mAP"] < 100


def test_a_stored_tvr_run_scores_over_rest_as_the_command_scores_it(as_role, run_jobs, tmp_path):
    truth = [json.loads(line) for line in (MOMENTS / "tvr_gt.jsonl").read_text().splitlines()]
    submission = json.loads((MOMENTS / "tvr_pred.json").read_text())
    dataset = dataset_from_ids(tmp_path, queries=[str(t["desc_id"]) for t in truth],
                               items=list(submission["video2idx"]), name="tvrval")
    judgment_set = judgments_import(dataset=dataset, path=MOMENTS / "tvr_gt.jsonl", fmt="tvr", name="tvrgt").judgment_set
    run = run_import(dataset=dataset, path=MOMENTS / "tvr_pred.json", fmt="tvr", name="xml").run

    rest = _rest(as_role, run_jobs, judgment_set, [run.pk])
    cli = _cli("--dataset", "tvrval", "--judgment-set", "tvrgt", "--run", "xml")
    assert rest["xml"]["measures"] == cli["xml"]["measures"]
    assert any(name.startswith("VCMR-") and value > 0 for name, value in rest["xml"]["measures"].items())


# Relevance by hand: q1's v2 and v3, q2's v1, q3's v4 (v3 judged not relevant for q3).
QRELS = {"q1": {"v2": 1, "v3": 1, "v1": 0}, "q2": {"v1": 1, "v4": 0}, "q3": {"v4": 1, "v3": 0}}
MEASURES = ["map", "P_1", "P_3", "ndcg_cut_3", "recip_rank"]


def test_a_score_matrix_run_scores_over_rest_as_the_command_and_pytrec_eval_score_it(as_role, run_jobs, tmp_path):
    dataset = dataset_from_ids(tmp_path, queries=["q1", "q2", "q3"], items=["v1", "v2", "v3", "v4"], name="m")
    qrels = tmp_path / "set.qrels"
    qrels.write_text("".join(f"{q} 0 {v} {r}\n" for q, judged in QRELS.items() for v, r in judged.items()))
    judgment_set = judgments_import(dataset=dataset, path=qrels, fmt="qrels", name="set").judgment_set
    run = run_import(dataset=dataset, path=write_npz(tmp_path / "matrix.npz")).run
    assert run.scores_file

    rest = _rest(as_role, run_jobs, judgment_set, [run.pk], measures=MEASURES)
    cli = _cli("--dataset", "m", "--judgment-set", "set", "--run", run.name, "--measures", *MEASURES)
    assert rest[run.name]["measures"] == cli[run.name]["measures"]
    assert rest[run.name]["per_query"] == cli[run.name]["per_query"]

    # The oracle: the matrix's ranking (trec_eval's tie rule, see test_matrix_runs.RANKED) by pytrec_eval.
    ranked = {q: {v: float(4 - r) for r, v in enumerate(clips)} for q, clips in RANKED.items()}
    oracle = pytrec_eval.RelevanceEvaluator(QRELS, set(MEASURES)).evaluate(ranked)
    for measure in MEASURES:
        expected = sum(per_query[measure] for per_query in oracle.values()) / len(oracle)
        assert rest[run.name]["measures"][measure] == pytest.approx(expected, abs=1e-12), measure
    # Hand-worked: q1 ranks v4, v2, v3, v1 -> relevant at 2 and 3: AP = (1/2 + 2/3) / 2.
    assert rest[run.name]["per_query"]["q1"]["map"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert SCORES["q1"][1] == SCORES["q1"][3]  # the tie the matrix's rule breaks by clip id, as trec_eval does


def test_the_reports_page_offers_moment_sets_moment_runs_and_matrix_runs(as_role, tmp_path, client):
    from tests.factories import make_user

    truth = [json.loads(line) for line in (MOMENTS / "qvh_gt.jsonl").read_text().splitlines()]
    dataset = dataset_from_ids(tmp_path, queries=[str(t["qid"]) for t in truth], items=[t["vid"] for t in truth],
                               name="qvval")
    judgment_set = judgments_import(dataset=dataset, path=MOMENTS / "qvh_gt.jsonl", fmt="qvhighlights",
                                    name="qvgt").judgment_set
    moment_run = run_import(dataset=dataset, path=MOMENTS / "qvh_pred.jsonl", fmt="qvhighlights", name="mdetr").run
    matrix = dataset_from_ids(tmp_path / "m", queries=["q1", "q2", "q3"], items=["v1", "v2", "v3", "v4"], name="m")
    matrix_run = run_import(dataset=matrix, path=write_npz(tmp_path / "matrix.npz")).run
    client.force_login(make_user("admin"))
    page = client.get("/reports/").content.decode()
    form = page[page.index('id="evaluate-form"'):page.index('id="agreement-form"')]
    assert f'<option value="{judgment_set.pk}" data-dataset="{dataset.pk}">' in form
    assert f'<option value="{moment_run.pk}">mdetr (qvhighlights moments)</option>' in form
    assert f'<option value="{matrix_run.pk}">{matrix_run.name} (score matrix)</option>' in form


def test_a_run_the_set_cannot_score_is_refused_with_the_reason(as_role, tmp_path):
    dataset = dataset_from_ids(tmp_path, queries=["q1", "q2", "q3"], items=["v1", "v2", "v3", "v4"], name="m")
    qvh = tmp_path / "gt.jsonl"
    qvh.write_text(json.dumps({"qid": "q1", "vid": "v1", "duration": 150, "relevant_windows": [[0, 10]]}) + "\n")
    judgment_set = judgments_import(dataset=dataset, path=qvh, fmt="qvhighlights", name="gt").judgment_set
    run = run_import(dataset=dataset, path=write_npz(tmp_path / "matrix.npz")).run
    response = as_role("admin").post(f"/api/v1/judgment-sets/{judgment_set.pk}/evaluate/", {"runs": [run.pk]},
                                     format="json")
    assert response.status_code == 400
    assert response.data["detail"] == (f"run '{run.name}' is a ranked clip run: judgment set 'gt' (qvhighlights) "
                                       f"scores qvhighlights runs")
    assert not Job.objects.exists()
