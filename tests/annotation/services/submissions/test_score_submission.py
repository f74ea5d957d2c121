"""A run submitted to a release of the hand-worked example (tests/annotation/services/reports/
test_report_metrics.py), scored by its job: the measures equal pytrec_eval's and Judged@K
ir_measures' on the archive's own qrels.txt, the holes are counted as worked by hand, and a file
naming what the release does not hold is refused naming file, line and field."""
from __future__ import annotations

import io
import random
import zipfile

import ir_measures
import pytest
import pytrec_eval
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.analysis.submissions import submission_measures
from annotation.models import Job, Submission
from annotation.services.exports.labels import EXPORTS
from annotation.services.releases.create import release_create
from annotation.services.submissions.operations import SubmissionError, submission_start
from annotation.storage import stored_file_chunks, stored_file_exists
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.factories import make_user

pytestmark = pytest.mark.django_db

# Submitted run S (scores fall with rank, no ties):
#   q1 [v4 v2 v3]: v4 never pooled for q1 -> a hole; v2 relevant, v3 not relevant.
#   q2 [v4 v5 v2]: v4 a disagreement (left out of qrels.txt) and v5 never pooled -> two holes; v2 relevant.
#   q3 [v1 v3]:    v1 never pooled for q3 -> a hole; v3 relevant (original).
# q4 not answered. Positives: q1 {v1 v2 v5}, q2 {v1 v2}, q3 {v3 v4}.
RUN_S = {"q1": ["v4", "v2", "v3"], "q2": ["v4", "v5", "v2"], "q3": ["v1", "v3"]}


def _trec(run: dict, tag: str = "S") -> str:
    return "".join(f"{q} Q0 {c} {r} {1 - r / 10:.2f} {tag}\n" for q, clips in run.items()
                   for r, c in enumerate(clips, start=1))


@pytest.fixture
def release(tmp_path):
    return release_create(allow_unresolved=True, pools=[example_pool(tmp_path)], name="example-fire")


def _archive_qrels(release) -> dict[str, dict[str, int]]:
    """qrels.txt read straight from the archive's bytes, as a researcher would."""
    data = b"".join(stored_file_chunks(EXPORTS, release.archive))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        text = archive.read(f"{release.folder}/qrels.txt").decode()
    qrels: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        q, _, d, rel = line.split()
        qrels.setdefault(q, {})[d] = int(rel)
    return qrels


def _submit(release, text: str, *, user=None, name="model-s", key=None, **options):
    upload = SimpleUploadedFile("s.trec", text.encode())
    return submission_start(release=release, uploaded_file=upload, name=name, submitted_by=user,
                            idempotency_key=key, **options)


def test_a_submission_is_scored_as_worked_by_hand(release, django_capture_on_commit_callbacks):
    user = make_user("researcher")
    with django_capture_on_commit_callbacks(execute=True):
        submission, created = _submit(release, _trec(RUN_S), user=user)
    submission.refresh_from_db()
    assert created and submission.status == Submission.Status.SCORED
    assert submission.job.status == Job.Status.SUCCEEDED and submission.job.operation == "score_submission"
    s = submission.summary
    assert s["measures"] == ["C@1", "C@5", "C@10", "AP", "nDCG@10"]
    assert s["values"]["C@1"]["value"] == 0.0 and s["values"]["C@5"]["value"] == 1.0
    assert s["values"]["AP"]["value"] == pytest.approx((1 / 6 + 1 / 6 + 1 / 4) / 3)  # 7/36
    assert s["judged"]["Judged@1"] == 0.0
    assert s["judged"]["Judged@5"] == pytest.approx((2 / 3 + 1 / 3 + 1 / 2) / 3)
    assert (s["queries_answered"], s["queries_scored"], s["queries_unjudged"]) == (3, 3, 0)
    assert s["holes"] == {"k": 10, "total": 4, "queries_with_holes": 3, "per_query": {"q1": 1, "q2": 2, "q3": 1}}
    assert sorted(map(tuple, submission.holes["pairs"])) == [("q1", "v4"), ("q2", "v4"), ("q2", "v5"), ("q3", "v1")]
    assert submission.job.result["submission_id"] == submission.pk


def test_measures_equal_pytrec_eval_and_judged_equals_ir_measures_on_the_archive_qrels(release,
                                                                                        django_capture_on_commit_callbacks):
    rng = random.Random(7)
    clips = [f"v{i}" for i in range(1, 7)]
    run = {q: rng.sample(clips, rng.randint(1, 6)) for q in ("q1", "q2", "q3", "q4")}
    with django_capture_on_commit_callbacks(execute=True):
        submission, _ = _submit(release, _trec(run), holes_depth=4)
    submission.refresh_from_db()
    s = submission.summary
    qrels = _archive_qrels(release)
    te_run = {q: {c: 1 - r / 10 for r, c in enumerate(cs, start=1)} for q, cs in run.items()}
    scored = [q for q in te_run if q in qrels]
    te = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in scored}, {"success.1,5,10", "map", "ndcg_cut.10"})
    per_query = te.evaluate({q: te_run[q] for q in scored})
    for name, te_name in (("C@1", "success_1"), ("C@5", "success_5"), ("C@10", "success_10"), ("AP", "map"),
                          ("nDCG@10", "ndcg_cut_10")):
        expected = sum(per_query[q][te_name] for q in scored) / len(scored)
        assert s["values"][name]["value"] == pytest.approx(expected), name
    for k in (1, 5, 10):
        expected = ir_measures.calc_aggregate([ir_measures.Judged @ k], {q: qrels[q] for q in scored},
                                              {q: te_run[q] for q in scored})[ir_measures.Judged @ k]
        assert s["judged"][f"Judged@{k}"] == pytest.approx(expected), k
    holes = {q: sum(1 for c in cs[:4] if c not in qrels.get(q, {})) for q, cs in run.items()}
    assert s["holes"]["per_query"] == {q: n for q, n in holes.items() if n}


@pytest.mark.parametrize("ks", [[1], [2, 3], [1, 4, 7]])
def test_other_cutoffs_equal_pytrec_eval_and_ir_measures(ks):
    """The scoring function at cut-offs a release may name, on a hand-made qrels with unjudged
    clips and a query the qrels never judged."""
    qrels = {"a": {"x1": 1, "x2": 0, "x3": 1}, "b": {"x1": 0, "x4": 1}}
    run = {"a": ["x9", "x1", "x2", "x3", "x5"], "b": ["x4", "x2"], "c": ["x1"]}
    out = submission_measures(run, qrels, ks=ks, holes_k=3, depth=None, replicates=100, seed=0, confidence=0.95)
    te_run = {q: {c: 10 - i for i, c in enumerate(cs)} for q, cs in run.items() if q in qrels}
    te = pytrec_eval.RelevanceEvaluator(qrels, {"success." + ",".join(map(str, ks)), "map"}).evaluate(te_run)
    for k in ks:
        assert out["values"][f"C@{k}"]["value"] == pytest.approx(sum(te[q][f"success_{k}"] for q in te) / 2)
    assert out["values"]["AP"]["value"] == pytest.approx(sum(te[q]["map"] for q in te) / 2)
    for k in sorted(set(ks) | {10}):
        expected = ir_measures.calc_aggregate([ir_measures.Judged @ k], qrels, te_run)[ir_measures.Judged @ k]
        assert out["judged"][f"Judged@{k}"] == pytest.approx(expected)
    assert (out["queries_scored"], out["queries_unjudged"]) == (2, 1)
    # a: x9 and x5 is beyond 3; b: x2 unjudged for b; c: never judged, its whole top 3.
    assert out["holes"]["per_query"] == {"a": 1, "b": 1, "c": 1} and out["holes"]["total"] == 3


def test_degenerate_input_no_labels_and_one_query():
    empty = submission_measures({"a": ["x1", "x2"]}, {}, ks=[1, 5, 10], holes_k=10, depth=None, replicates=100,
                                seed=0, confidence=0.95)
    assert empty["queries_scored"] == 0 and empty["judged"]["Judged@10"] is None
    assert empty["holes"] == {"k": 10, "total": 2, "queries_with_holes": 1, "per_query": {"a": 2}}
    one = submission_measures({"a": ["x1", "x2"]}, {"a": {"x2": 1}}, ks=[1, 5], holes_k=10, depth=None,
                              replicates=100, seed=0, confidence=0.95)
    assert one["values"]["C@1"]["value"] == 0.0 and one["values"]["C@5"]["value"] == 1.0
    assert one["values"]["AP"]["value"] == 0.5 and one["judged"]["Judged@1"] == 0.0
    assert one["judged"]["Judged@5"] == 0.5


def test_a_run_naming_what_the_release_does_not_hold_fails_naming_file_line_and_field(
        release, django_capture_on_commit_callbacks):
    text = "q1 Q0 v1 1 0.9 S\nq9 Q0 v1 1 0.9 S\nq2 Q0 v99 1 0.9 S\n"
    with django_capture_on_commit_callbacks(execute=True):
        submission, _ = _submit(release, text)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SUBMITTED and submission.summary is None
    job = submission.job
    assert job.status == Job.Status.FAILED
    errors = [(e["file"], e["line"], e["field"]) for e in job.errors]
    assert errors == [("s.trec", 2, "query_id"), ("s.trec", 3, "doc_id")]
    assert stored_file_exists("runs", submission.run_file)


def test_a_malformed_line_and_a_run_too_deep_are_refused(release, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        bad, _ = _submit(release, "q1 Q0 v1 1 0.9 S\nq1 Q0 v2 x 0.8\n", name="bad")
        deep, _ = _submit(release, _trec({"q1": ["v1", "v2", "v3"]}), name="deep", max_depth=2)
    bad.job.refresh_from_db()
    deep.job.refresh_from_db()
    assert bad.job.status == Job.Status.FAILED and bad.job.errors[0]["line"] == 2
    assert deep.job.errors[0]["field"] == "doc_id" and "max_depth = 2" in deep.job.errors[0]["message"]


def test_a_retried_request_with_the_same_key_makes_no_second_submission(release):
    user = make_user("researcher")
    first, created = _submit(release, _trec(RUN_S), user=user, key="k-1")
    again, created_again = _submit(release, _trec(RUN_S), user=user, key="k-1")
    assert created and not created_again and again.pk == first.pk
    assert Submission.objects.count() == 1
    other, _ = _submit(release, _trec(RUN_S), user=make_user("researcher"), key="k-1")
    assert other.pk != first.pk


def test_a_blank_name_and_a_file_too_large_are_refused_before_anything_is_stored(release, monkeypatch):
    with pytest.raises(SubmissionError) as blank:
        _submit(release, _trec(RUN_S), name="   ")
    assert blank.value.param == "name"
    monkeypatch.setattr("annotation.services.submissions.operations.MAX_FILE_BYTES", 10)
    with pytest.raises(SubmissionError) as large:
        _submit(release, _trec(RUN_S))
    assert large.value.param == "file"
    assert Submission.objects.count() == 0 and Job.objects.filter(operation="score_submission").count() == 0


def test_a_failure_after_the_run_is_stored_leaves_no_file_behind(release, monkeypatch):
    """The run file is stored before the rows are written: if writing them fails, nothing was
    acknowledged, and the stored file goes too (it would belong to no submission)."""
    import annotation.services.submissions.operations as operations

    stored = []
    keep = operations.submission_file_store
    monkeypatch.setattr(operations, "submission_file_store", lambda **kw: stored.append(keep(**kw)) or stored[-1])

    def broken(**kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(Submission.objects, "create", broken)
    with pytest.raises(RuntimeError):
        _submit(release, _trec(RUN_S))
    assert len(stored) == 1 and not stored_file_exists("runs", stored[0])
    assert Submission.objects.count() == 0 and Job.objects.filter(operation="score_submission").count() == 0
