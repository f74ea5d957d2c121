"""A submission's holes filled (services/submissions/fill.py) on the hand-worked example release
(tests/annotation/services/reports/test_report_metrics.py): by a machine judge imported from a file
(the verdicts it has), with the judge's agreement with the release worked by hand; by the human
labels of a sampled pool over the holes (the PPI++ estimate); no fill and the reason where there is
no judge, several, or one whose scores are no probabilities; and a rescore (`fill_submission`).

Submitted run S (test_score_submission.py): q1 [v4 v2 v3], q2 [v4 v5 v2], q3 [v1 v3]; its holes
(q1,v4) (q2,v4) (q2,v5) (q3,v1); (q2,v4) is the example pool's disagreement, so a pool pair a judge
imported for the pool has a verdict on. The release's qrels: q1 {v1 v2 v5} relevant, v3 v6 not;
q2 {v1 v2}, v3 v6 not; q3 {v3 v4}, v5 v6 not; q4 v1 v5 v6 not (16 pairs; the disagreement left out).
"""
from __future__ import annotations

import pytest

from annotation.models import Job, MachineJudge, Pool, PooledPair, Submission
from annotation.services.machine_judges.imports import machine_judge_import
from annotation.services.submissions.operations import SubmissionError, submission_fill_start
from tests.annotation.services.reports.test_report_metrics import VERDICTS, example_pool
from tests.factories import make_user, unique

from .test_score_submission import RUN_S, _submit, _trec

pytestmark = pytest.mark.django_db

# The release's verdict on each pool pair (an original positive stays relevant: q3 v3).
RELEASE = {k: int(v == "relevant") for k, v in VERDICTS.items() if v != "disagreement"} | {("q3", "v3"): 1}
HOLES = {("q1", "v4"), ("q2", "v4"), ("q2", "v5"), ("q3", "v1")}


def _machine_csv(tmp_path, verdicts: dict, name: str = "gpt.csv", scores: dict | None = None):
    scores = scores or {}
    lines = ["query,item,label,score"] + [
        f"{q},{c},{'relevant' if v else 'not_relevant'},{scores.get((q, c), 0.9 if v else 0.1)}"
        for (q, c), v in sorted(verdicts.items())]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def world(tmp_path):
    from annotation.services.releases.create import release_create

    pool = example_pool(tmp_path)
    release = release_create(allow_unresolved=True, pools=[pool], name="example-fire")
    return pool, release


def _scored(release, django_capture_on_commit_callbacks, **options) -> Submission:
    with django_capture_on_commit_callbacks(execute=True):
        submission, _ = _submit(release, _trec(RUN_S), user=make_user("researcher"), **options)
    submission.refresh_from_db()
    assert submission.job.status == Job.Status.SUCCEEDED, submission.job.message
    return submission


def _value(values: dict, name: str):
    """A measure's value whatever cut its name states ('AP' or 'AP (runs cut at depth 3)')."""
    (key,) = [k for k in values if k == name or k.startswith(f"{name} (")]
    return values[key]


def test_no_machine_judge_no_fill_and_the_summary_says_so(world, django_capture_on_commit_callbacks):
    _, release = world
    fill = _scored(release, django_capture_on_commit_callbacks).summary["fill"]
    assert fill["judge"] is None and fill["holes"] == 4
    assert "no machine judge is registered" in fill["reason"]
    assert "machine_filled" not in fill


def test_an_imported_judge_fills_the_holes_it_has_as_worked_by_hand(world, tmp_path,
                                                                    django_capture_on_commit_callbacks):
    pool, release = world
    # The judge agrees with the release on every pair but q3 v3 (the original people called not
    # relevant: the release keeps it relevant), and calls the disagreement (q2, v4) relevant.
    machine = dict(RELEASE) | {("q3", "v3"): 0, ("q2", "v4"): 1}
    judge = machine_judge_import(dataset=pool.dataset, path=_machine_csv(tmp_path, machine), name="gpt", pool=pool)
    s = _scored(release, django_capture_on_commit_callbacks).summary
    fill = s["fill"]
    assert fill["judge"]["id"] == judge.pk and "imported file" in fill["judge"]["source"]
    assert (fill["machine_verdicts"], fill["unanswered"]) == (1, 3)  # only (q2, v4) is a pool pair
    filled = fill["machine_filled"]
    assert (filled["filled"], filled["holes_left"]) == (1, 3)
    # q2 [v4 v5 v2] now hits at rank 1; q1 and q3 start with a hole (not relevant).
    assert _value(filled["values"], "C@1") == pytest.approx(1 / 3)
    assert _value(filled["values"], "C@5") == pytest.approx(1.0)
    # AP: q1 v2 at 2 of 3 positives 1/6; q2 v4 at 1, v2 at 3 of {v1 v2 v4}: (1 + 2/3)/3 = 5/9;
    # q3 v3 at 2 of {v3 v4}: 1/4.
    assert _value(filled["values"], "AP") == pytest.approx((1 / 6 + 5 / 9 + 1 / 4) / 3)
    assert s["values"]["C@1"]["value"] == 0.0  # the release-scored value is left as it was
    assert "taken as they are" in fill["statement"]
    # Agreement on the 16 pairs both judged: release 7 relevant, 9 not; the judge misses q3 v3.
    # p_o = 15/16, p_e = (9*10 + 7*6)/256 = 132/256, kappa = (240 - 132)/(256 - 132) = 27/31.
    agreement = fill["agreement"]
    assert agreement["pairs_compared"] == 16 and agreement["confusion"] == [[9, 0], [1, 6]]
    assert agreement["kappa"] == pytest.approx(27 / 31)
    assert agreement["ci_low"] <= agreement["kappa"] <= agreement["ci_high"]
    assert fill["estimate"] is None and "not accepted" in fill["estimate_reason"]


def _sampled_pool(release, sample: dict, *, strategy: str = "sampled", pi: float = 1.0) -> Pool:
    """A pool over the four holes built here as an acceptance would (h3's accept.py), judged with a
    design: each hole drawn with probability `pi`; `sample` the resolved labels of those drawn."""
    pool = Pool.objects.create(dataset=release.dataset, name=unique("holes of S"), judging_strategy=strategy)
    captions = {c.external_id: c for c in release.dataset.captions.all()}
    clips = {c.external_id: c for c in release.dataset.clips.all()}
    for q, c in sorted(HOLES):
        label = sample.get((q, c))
        PooledPair.objects.create(
            pool=pool, caption=captions[q], clip=clips[c], inclusion_probability=pi,
            state=PooledPair.State.RESOLVED if label is not None else PooledPair.State.OPEN,
            resolved_label=("relevant" if label else "not_relevant") if label is not None else "")
    return pool


def _rescore(submission, django_capture_on_commit_callbacks, **options) -> dict:
    with django_capture_on_commit_callbacks(execute=True):
        job, created = submission_fill_start(submission=submission, created_by=make_user("admin"), **options)
    job.refresh_from_db()
    assert created and job.status == Job.Status.SUCCEEDED and job.operation == "fill_submission", job.message
    submission.refresh_from_db()
    return submission.summary["fill"]


def test_a_census_of_the_holes_by_people_gives_the_exact_values_and_a_rescore_keeps_accepted(
        world, tmp_path, django_capture_on_commit_callbacks):
    pool, release = world
    machine = dict(RELEASE) | {("q2", "v4"): 1}
    machine_judge_import(dataset=pool.dataset, path=_machine_csv(tmp_path, machine), name="gpt", pool=pool)
    submission = _scored(release, django_capture_on_commit_callbacks)
    # People judged every hole (a 'sampled' design at rate 1): (q3, v1) relevant, the rest not.
    truth = {("q1", "v4"): False, ("q2", "v4"): False, ("q2", "v5"): False, ("q3", "v1"): True}
    Submission.objects.filter(pk=submission.pk).update(pool=_sampled_pool(release, truth),
                                                      status=Submission.Status.ACCEPTED)
    fill = _rescore(submission, django_capture_on_commit_callbacks)
    assert submission.status == Submission.Status.ACCEPTED  # a rescore does not undo the acceptance
    assert fill["human_sample"]["sampled"] == 4 and fill["estimate_reason"] == ""
    estimate = fill["estimate"]["values"]
    # The truth: q1 [v4 v2 v3] C@1 0; q2 [v4 v5 v2] C@1 0; q3 [v1 v3] C@1 1 -> 1/3.
    c1 = _value(estimate, "C@1")
    assert c1["estimate"] == pytest.approx(1 / 3) and c1["ci_low"] == pytest.approx(1 / 3)
    assert c1["ci_high"] == pytest.approx(1 / 3)
    # AP: q1 1/6; q2 v2 at 3 of {v1 v2}: (1/3)/2 = 1/6; q3 v1 at 1, v3 at 2 of {v1 v3 v4}: (1 + 1)/3.
    assert _value(estimate, "AP")["estimate"] == pytest.approx((1 / 6 + 1 / 6 + 2 / 3) / 3)
    # The machine's verdict (q2, v4) relevant is what the machine-filled values take as they are.
    assert _value(fill["machine_filled"]["values"], "C@1") == pytest.approx(1 / 3)


def test_a_sampled_design_gives_an_interval_and_one_without_a_design_gives_the_reason(
        world, tmp_path, django_capture_on_commit_callbacks):
    pool, release = world
    machine_judge_import(dataset=pool.dataset, path=_machine_csv(tmp_path, dict(RELEASE)), name="gpt", pool=pool)
    submission = _scored(release, django_capture_on_commit_callbacks)
    sampled = _sampled_pool(release, {("q3", "v1"): True, ("q2", "v5"): False}, pi=0.5)
    Submission.objects.filter(pk=submission.pk).update(pool=sampled)
    fill = _rescore(submission, django_capture_on_commit_callbacks)
    c1 = _value(fill["estimate"]["values"], "C@1")
    assert fill["human_sample"]["sampled"] == 2 and c1["ci_low"] <= c1["estimate"] <= c1["ci_high"]
    assert c1["ci_high"] > c1["ci_low"]

    ordered = _sampled_pool(release, {("q3", "v1"): True}, strategy="shallow_first")
    Submission.objects.filter(pk=submission.pk).update(pool=ordered)
    fill = _rescore(submission, django_capture_on_commit_callbacks)
    assert fill["estimate"] is None and fill["human_sample"]["design"]["intervals"] is False
    assert fill["estimate_reason"].startswith("no interval") and "shallowest rank first" in fill["estimate_reason"]


def test_a_judge_whose_scores_are_not_probabilities_is_refused(world, tmp_path, django_capture_on_commit_callbacks):
    pool, release = world
    grades = {k: 3.0 for k in RELEASE}
    judge = machine_judge_import(dataset=pool.dataset, path=_machine_csv(tmp_path, dict(RELEASE), scores=grades),
                                 name="grader", pool=pool)
    submission = _scored(release, django_capture_on_commit_callbacks)
    fill = submission.summary["fill"]  # the default judge: no fill, and why
    assert fill["judge"] is None and "is not a probability in [0, 1]" in fill["reason"]
    with pytest.raises(SubmissionError) as named:  # named: refused before a job exists
        submission_fill_start(submission=submission, judge_id=judge.pk)
    assert named.value.param == "judge" and "not a probability" in str(named.value)
    assert not Job.objects.filter(operation="fill_submission").exists()


def test_a_judge_of_another_pool_and_a_submission_not_scored_are_refused(world, tmp_path):
    pool, release = world
    other = example_pool(tmp_path / "other", name="other")
    stranger = machine_judge_import(dataset=other.dataset, path=_machine_csv(tmp_path, dict(RELEASE)), name="x",
                                    pool=other)
    submission, _ = _submit(release, _trec(RUN_S))  # its scoring job not run
    with pytest.raises(SubmissionError, match="not scored yet"):
        submission_fill_start(submission=submission)
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.SCORED)
    submission.refresh_from_db()
    with pytest.raises(SubmissionError) as refused:
        submission_fill_start(submission=submission, judge_id=stranger.pk)
    assert refused.value.param == "judge" and f"no machine judge with id {stranger.pk}" in str(refused.value)


def test_several_judges_none_is_chosen_and_a_rescore_names_one(world, tmp_path, django_capture_on_commit_callbacks):
    pool, release = world
    first = machine_judge_import(dataset=pool.dataset, path=_machine_csv(tmp_path, dict(RELEASE) | {("q2", "v4"): 1}),
                                 name="a", pool=pool)
    MachineJudge.objects.create(dataset=pool.dataset, pool=pool, name="b", checksum="b" * 64)
    submission = _scored(release, django_capture_on_commit_callbacks)
    fill = submission.summary["fill"]
    assert fill["judge"] is None and "several machine judges" in fill["reason"] and f"{first.pk} (a)" in fill["reason"]
    fill = _rescore(submission, django_capture_on_commit_callbacks, judge_id=first.pk)
    assert fill["judge"]["name"] == "a" and fill["machine_verdicts"] == 1


def test_an_accepted_submission_s_holes_judged_through_the_queue_give_the_estimate(
        world, tmp_path, django_capture_on_commit_callbacks):
    """Through h3's acceptance (services/submissions/accept.py): a 'sampled' design at rate 1 draws
    every hole; a rater of the release judges them in the queue; the rescore reads their labels."""
    from annotation.models import PoolMembership
    from annotation.services.submissions.accept import submission_accept_start
    from tests.factories import label_pair

    pool, release = world
    machine_judge_import(dataset=pool.dataset, path=_machine_csv(tmp_path, dict(RELEASE) | {("q2", "v4"): 1}),
                         name="gpt", pool=pool)
    submission = _scored(release, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        job, _ = submission_accept_start(submission=submission, judging={"strategy": "sampled", "sample_rate": 1.0},
                                         accepted_by=make_user("admin"))
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.errors
    submission.refresh_from_db()
    holes = PooledPair.objects.filter(pool=submission.pool, role="pool", state=PooledPair.State.OPEN)
    rater = PoolMembership.objects.get(pool=submission.pool).rater
    people = {("q1", "v4"): "relevant", ("q2", "v4"): "not_relevant", ("q2", "v5"): "relevant",
              ("q3", "v1"): "not_relevant"}
    for pair in holes.select_related("caption", "clip"):
        label_pair(rater, pair, value=people[(pair.caption.external_id, pair.clip.external_id)], seconds=3.0)
    fill = _rescore(submission, django_capture_on_commit_callbacks)
    assert fill["human_sample"]["pool_id"] == submission.pool_id and fill["human_sample"]["sampled"] == 4
    values = fill["estimate"]["values"]
    # q1 [v4 v2 v3]: v4 relevant -> C@1 1, AP (1 + 1)/4 over {v1 v2 v4 v5}; q2 [v4 v5 v2]: C@1 0,
    # AP (1/2 + 2/3)/3 over {v1 v2 v5}; q3 [v1 v3]: C@1 0, AP (1/2)/2.
    assert _value(values, "C@1")["estimate"] == pytest.approx(1 / 3)
    assert _value(values, "AP")["estimate"] == pytest.approx((1 / 2 + 7 / 18 + 1 / 4) / 3)
    assert _value(values, "AP")["ci_low"] == pytest.approx(_value(values, "AP")["ci_high"])  # a census: exact
