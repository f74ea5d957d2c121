"""Ranking studies: building one (five captions per clip and proxy, checked by hand), the task
queue's rules (distinct raters, capacity, leases and their expiry, idempotent and validated
submissions) and the human-to-proxy report on hand-worked orderings.

The queue tests use only the BoW proxy, which needs spaCy's stop-word list but no model or
WordNet; the study with every proxy skips without them (fails with REJUDGE_REQUIRE_NLP=1)."""
from __future__ import annotations

import io
from datetime import timedelta

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.analysis.proxies import proxy_matrix
from annotation.analysis.ranking_study import select_five
from annotation.models import (Caption, Clip, Dataset, RankingLease, RankingStudy, RankingSubmission, RankingTask,
                               Report)
from annotation.services.datasets.imports import dataset_import
from annotation.services.proxies.matrices import ProxyError
from annotation.services.accounts.raters import rater_set_paused
from annotation.services.ranking.leases import (RankingLeaseGone, ranking_lease_next, ranking_lease_release,
                                                ranking_lease_renew, ranking_leases_expire)
from annotation.services.ranking.operations import ranking_study_start
from annotation.services.ranking.report import ranking_report_create
from annotation.services.ranking.study import ranking_memberships_grant, ranking_study_create
from annotation.services.ranking.submissions import RankingRefused, ranking_submission_create
from annotation.selectors.ranking import ranking_study_progress, ranking_task_display
from tests.annotation.services.proxies.test_proxy_matrices import require_nlp
from tests.factories import lease_task_for, make_user

pytestmark = pytest.mark.django_db

# One caption per clip, written for it. BoW sets (no stop words among these words):
# c1 {red, dog, runs, fast}; against it: c2 {red, dog, runs, slowly} 3/5, c3 {red, dog, sleeps} 2/5,
# c4 {red, cat, sleeps} 1/6, c7 {red, bird, sings, loudly} 1/7, c5 and c6 share nothing: 0.
CAPTIONS = ["red dog runs fast", "red dog runs slowly", "red dog sleeps", "red cat sleeps", "blue cat sleeps",
            "green bird sings", "red bird sings loudly"]


def make_benchmark(captions=CAPTIONS, name="bench") -> Dataset:
    dataset = Dataset.objects.create(name=name)
    for i, text in enumerate(captions, start=1):
        clip = Clip.objects.create(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}", media=f"v{i}.mp4")
        Caption.objects.create(dataset=dataset, external_id=f"q{i}", text=text, original_clip=clip)
    return dataset


def make_study(dataset=None, *, n_clips=7, raters_per_task=3, lease_seconds=600, raters=(), name="study"):
    study = ranking_study_create(dataset=dataset or make_benchmark(), name=name, proxies=["bow"], n_clips=n_clips,
                                 raters_per_task=raters_per_task, lease_seconds=lease_seconds)
    ranking_memberships_grant(study=study, users=list(raters))
    return study


def raters(n):
    return [make_user("rater") for _ in range(n)]


def order_of(task):
    return list(task.captions.values_list("caption_id", flat=True))


def submit(rater, task, client_id=None, order=None, **kw):
    return ranking_submission_create(rater=rater, client_id=f"{rater.pk}-{task.pk}" if client_id is None else client_id,
                                     lease=lease_task_for(rater, task).token,
                                     order=order if order is not None else order_of(task), **kw)


# --- building ----------------------------------------------------------------------------------

def test_five_captions_by_hand():
    study = make_study()
    assert study.tasks.count() == 7  # every clip sampled (n_clips = all), one proxy
    task = study.tasks.get(clip__external_id="v1")
    assert task.proxy == "bow" and task.n_candidates == 6 and task.required_submissions == 3
    # Candidates by -score, ties by caption order: q2 .6, q3 .4, q4 1/6, q7 1/7, q5 0, q6 0.
    # n = 6: ranks round(q * 5) = 0, 1, 3 (2.5 rounds up), 4, 5 -> q2, q3, q7, q5, q6.
    rows = list(task.captions.select_related("caption").order_by("candidate_rank"))
    assert [r.caption.external_id for r in rows] == ["q2", "q3", "q7", "q5", "q6"]
    assert [r.candidate_rank for r in rows] == [0, 1, 3, 4, 5]
    assert [r.position for r in rows] == ["most", "rank_q1", "rank_median", "rank_q3", "least"]
    assert [r.score for r in rows] == pytest.approx([3 / 5, 2 / 5, 1 / 7, 0, 0])
    assert study.pipelines["bow"]["proxy"] == "bow" and study.pipelines["bow"]["versions"]["numpy"]


def test_sampling_is_seeded():
    a = make_study(n_clips=3, name="a")
    b = ranking_study_create(dataset=a.dataset, name="b", proxies=["bow"], n_clips=3, seed=0)
    clip_pks = list(a.dataset.clips.order_by("pk").values_list("pk", flat=True))
    want = [clip_pks[i] for i in np.sort(np.random.default_rng(0).choice(7, size=3, replace=False))]
    for study in (a, b):
        assert sorted(study.tasks.values_list("clip_id", flat=True)) == want
    assert sorted(a.tasks.values_list("queue_order", flat=True)) == [0, 1, 2]


def test_study_request_checked_up_front():
    dataset = make_benchmark()
    with pytest.raises(ProxyError, match="between 1 and 7"):
        ranking_study_start(dataset=dataset, name="s", proxies=["bow"], n_clips=8)
    with pytest.raises(ProxyError, match="parameter 'proxies' must be one of"):
        ranking_study_start(dataset=dataset, name="s", proxies=["nope"], n_clips=2)
    make_study(dataset, n_clips=2, name="taken")
    with pytest.raises(ProxyError, match="already exists"):
        ranking_study_start(dataset=dataset, name="taken", proxies=["bow"], n_clips=2)
    small = make_benchmark(CAPTIONS[:5], name="small")  # 4 candidates per clip
    with pytest.raises(ProxyError, match="too few captions"):
        ranking_study_start(dataset=small, name="s", proxies=["bow"], n_clips=2)


# --- the queue ---------------------------------------------------------------------------------

def test_three_distinct_raters_and_never_more_holders_than_needed():
    r1, r2, r3, r4 = raters(4)
    study = make_study(n_clips=1, raters=[r1, r2, r3, r4])
    task = study.tasks.get()
    a1 = ranking_lease_next(study=study, rater=r1)
    assert a1.lease.task == task
    # r1 already holds the only task: excluding it leaves nothing for r1
    assert ranking_lease_next(study=study, rater=r1, exclude_leases=[a1.lease.token]).reason == "no_work_left"
    assert ranking_lease_next(study=study, rater=r2).lease.task == task
    assert ranking_lease_next(study=study, rater=r3).lease.task == task
    task.refresh_from_db()
    assert (task.active_leases, task.available) == (3, False)
    assert ranking_lease_next(study=study, rater=r4).reason == "no_work_left"
    submit(r1, task)
    assert ranking_lease_next(study=study, rater=r4).reason == "no_work_left"  # 1 ordering + 2 leases = 3
    # r1 has submitted: the task never comes back to them
    assert ranking_lease_next(study=study, rater=r1).reason == "no_work_left"
    submit(r2, task)
    submit(r3, task)
    task.refresh_from_db()
    assert (task.submission_count, task.active_leases, task.available) == (3, 0, False)
    assert task.completed_at is not None
    assert set(task.submissions.values_list("rater", flat=True)) == {r1.pk, r2.pk, r3.pk}
    assert ranking_study_progress(study=study)["complete"] == 1


def test_started_tasks_come_first_and_held_tasks_resume():
    r1, r2 = raters(2)
    study = make_study(n_clips=4, raters=[r1, r2])
    first = ranking_lease_next(study=study, rater=r1).lease
    # r2 gets the task r1 started (priority), not the next unstarted one in queue order
    assert ranking_lease_next(study=study, rater=r2).lease.task == first.task
    # a reloaded page gets the same lease back, renewed
    again = ranking_lease_next(study=study, rater=r1)
    assert again.lease.pk == first.pk and again.lease.expires_at >= first.expires_at
    second = ranking_lease_next(study=study, rater=r1, exclude_leases=[first.token]).lease
    assert second.task != first.task
    assert ranking_lease_next(study=study, rater=r1, exclude_leases=[first.token, second.token]).reason == "holding_max"


def test_membership_and_pause():
    member, outsider = raters(2)
    study = make_study(n_clips=2, raters=[member])
    assert ranking_lease_next(study=study, rater=outsider).reason == "not_a_member"
    rater_set_paused(user=member, paused=True)
    assert ranking_lease_next(study=study, rater=member).reason == "paused"
    rater_set_paused(user=member, paused=False)
    assert ranking_lease_next(study=study, rater=member).lease is not None
    with pytest.raises(ValueError, match="not a rater"):
        ranking_memberships_grant(study=study, users=[make_user("researcher")])


def test_expiry_returns_the_task_and_a_late_ordering_is_kept_uncounted():
    r1, r2, r3, r4 = raters(4)
    study = make_study(n_clips=1, raters_per_task=2, lease_seconds=60, raters=[r1, r2, r3, r4])
    t0 = timezone.now()
    lease1 = ranking_lease_next(study=study, rater=r1, now=t0).lease
    ranking_lease_next(study=study, rater=r2, now=t0)
    assert ranking_lease_next(study=study, rater=r3, now=t0).reason == "no_work_left"
    later = t0 + timedelta(seconds=61)
    # expired lazily when r3 asks: r1's and r2's leases end, r3 gets the task
    assert ranking_lease_next(study=study, rater=r3, now=later).lease.task == lease1.task
    lease1.refresh_from_db()
    assert lease1.state == "expired"
    with pytest.raises(RankingLeaseGone) as gone:
        ranking_lease_renew(token=lease1.token, rater=r1, now=later)
    assert gone.value.still_needed  # 0 orderings + 1 live lease < 2
    # r1 submits anyway while there is room: it counts
    assert submit(r1, lease1.task, now=later).submission.counted
    # 1 ordering + r3's lease = 2: full again
    assert ranking_lease_next(study=study, rater=r4, now=later).reason == "no_work_left"
    submit(r3, lease1.task, now=later)
    # r2's lease had expired and the task is complete: r2's ordering is stored, not counted
    late = submit(r2, lease1.task, now=later).submission
    assert not late.counted and "no longer needed" in late.surplus_reason
    task = RankingTask.objects.get(pk=lease1.task.pk)
    assert (task.submission_count, task.active_leases, task.available) == (2, 0, False)
    assert RankingSubmission.objects.filter(task=task, counted=True).count() == 2


def test_periodic_expiry_and_release():
    r1, r2 = raters(2)
    study = make_study(n_clips=1, raters_per_task=2, lease_seconds=60, raters=[r1, r2])
    t0 = timezone.now()
    lease = ranking_lease_next(study=study, rater=r1, now=t0).lease
    assert ranking_leases_expire(now=t0 + timedelta(seconds=30)) == 0
    assert ranking_leases_expire(now=t0 + timedelta(seconds=61)) == 1
    task = RankingTask.objects.get(pk=lease.task_id)
    assert (task.active_leases, task.available) == (0, True)
    lease2 = ranking_lease_next(study=study, rater=r2).lease
    ranking_lease_release(token=lease2.token, rater=r2)
    lease2.refresh_from_db()
    task.refresh_from_db()
    assert lease2.state == "released" and task.active_leases == 0
    with pytest.raises(RankingLease.DoesNotExist):
        ranking_lease_release(token=lease2.token, rater=r1)  # not r1's


def test_heartbeat_extends_a_live_lease():
    (r1,) = raters(1)
    study = make_study(n_clips=1, lease_seconds=60, raters=[r1])
    t0 = timezone.now()
    lease = ranking_lease_next(study=study, rater=r1, now=t0).lease
    renewed = ranking_lease_renew(token=lease.token, rater=r1, now=t0 + timedelta(seconds=50))
    assert renewed.expires_at == t0 + timedelta(seconds=110)
    submit(r1, lease.task)
    with pytest.raises(RankingLeaseGone) as gone:
        ranking_lease_renew(token=lease.token, rater=r1)
    assert gone.value.lease.state == "completed" and not gone.value.still_needed


# --- submissions -------------------------------------------------------------------------------

def test_submission_is_idempotent_and_one_per_task():
    (r1,) = raters(1)
    study = make_study(n_clips=1, raters=[r1])
    task = study.tasks.get()
    ranking_lease_next(study=study, rater=r1)
    first = submit(r1, task, client_id="abc", seconds=12.5)
    again = submit(r1, task, client_id="abc", order=list(reversed(order_of(task))))
    assert first.created and not again.created and again.submission.pk == first.submission.pk
    assert again.submission.order == order_of(task)  # the stored ordering, not the replayed one
    with pytest.raises(RankingRefused) as refused:
        submit(r1, task, client_id="other")
    assert refused.value.code == "conflict"
    task.refresh_from_db()
    assert task.submission_count == 1 and RankingSubmission.objects.count() == 1


@pytest.mark.parametrize("bad", ["missing", "duplicate", "foreign", "extra", "empty"])
def test_invalid_orders_are_refused_naming_the_field(bad):
    (r1,) = raters(1)
    study = make_study(n_clips=1, raters=[r1])
    task = study.tasks.get()
    ids = order_of(task)
    own_caption = Caption.objects.get(original_clip=task.clip).pk  # a real caption, not one of the five
    order = {"missing": ids[:4], "duplicate": ids[:4] + ids[:1], "foreign": ids[:4] + [own_caption],
             "extra": ids + [own_caption], "empty": []}[bad]
    lease = ranking_lease_next(study=study, rater=r1).lease
    with pytest.raises(RankingRefused) as refused:
        submit(r1, task, order=order)
    assert refused.value.code == "invalid" and refused.value.field == "order"
    lease.refresh_from_db()
    assert lease.state == "active" and RankingSubmission.objects.count() == 0


def test_other_refusals():
    member, outsider = raters(2)
    study = make_study(n_clips=1, raters=[member])
    task = study.tasks.get()
    for kwargs, code, field in [({"client_id": ""}, "invalid", "client_id"), ({"seconds": -1}, "invalid", "seconds")]:
        with pytest.raises(RankingRefused) as refused:
            submit(member, task, **kwargs)
        assert (refused.value.code, refused.value.field) == (code, field)
    member_lease = lease_task_for(member, task)
    with pytest.raises(RankingRefused) as refused:  # another rater's lease is no lease at all
        ranking_submission_create(rater=outsider, client_id="x", lease=member_lease.token, order=order_of(task))
    assert refused.value.code == "not_found"
    with pytest.raises(RankingRefused) as refused:
        ranking_submission_create(rater=member, client_id="x", lease="no-such-lease", order=[1, 2, 3, 4, 5])
    assert refused.value.code == "not_found"


def test_raters_see_ids_and_texts_in_their_own_stable_shuffle():
    rs = raters(4)
    study = make_study(n_clips=1, raters=rs)
    task = study.tasks.get()
    shown = [ranking_task_display(task=task, rater=r) for r in rs]
    for captions in shown:
        assert all(set(c) == {"id", "text"} for c in captions)
        assert sorted(c["id"] for c in captions) == sorted(order_of(task))
    assert shown[0] == ranking_task_display(task=task, rater=rs[0])  # a reload shows the same order
    assert len({tuple(c["id"] for c in captions) for captions in shown}) > 1


# --- report ------------------------------------------------------------------------------------

def test_human_proxy_report_by_hand():
    r1, r2, r3 = raters(3)
    study = make_study(n_clips=7, raters=[r1, r2, r3])
    task = study.tasks.get(clip__external_id="v1")
    by_ext = dict(task.captions.values_list("caption__external_id", "caption_id"))
    q2, q3, q7, q5, q6 = (by_ext[k] for k in ("q2", "q3", "q7", "q5", "q6"))
    # proxy scores: q2 .6 > q3 .4 > q7 1/7 > q5 = q6 = 0.
    # r1, r2 agree with the proxy; r3 swaps q2/q3 and q5/q6.
    submit(r1, task, order=[q2, q3, q7, q5, q6])
    submit(r2, task, order=[q2, q3, q7, q5, q6])
    submit(r3, task, order=[q3, q2, q7, q6, q5])
    report = ranking_report_create(study=study)
    bow = report.result["proxies"]["bow"]
    # 10 pairs; r3 breaks {q2,q3} and {q5,q6}: 8 consistent, all ordered as the proxy orders them.
    assert (bow["tasks"], bow["pairs"], bow["consistent_pairs"]) == (1, 10, 8)
    assert bow["consistent_share"] == pytest.approx(0.8)
    assert (bow["proxy_agree"], bow["proxy_ties"], bow["proxy_disagree"]) == (8, 0, 0)
    assert bow["proxy_agreement"] == pytest.approx(1.0)
    # Kendall's W: rank sums q2 4, q3 5, q7 9, q5 13, q6 14; mean 9; S = 25+16+0+16+25 = 82;
    # W = 12 * 82 / (9 * 120) = 0.9111
    assert bow["kendalls_w"] == pytest.approx(12 * 82 / (9 * 120))
    assert -1 <= bow["krippendorff_alpha_ordinal"] <= 1
    assert report.kind == "human_proxy" and report.params["study_id"] == study.pk
    assert report.result["tasks"] == 7 and report.result["complete_tasks"] == 1
    assert Report.objects.filter(kind="human_proxy").count() == 1


def test_proxy_ties_count_half():
    r1, r2, r3 = raters(3)
    study = make_study(n_clips=7, raters=[r1, r2, r3])
    task = study.tasks.get(clip__external_id="v1")
    by_ext = dict(task.captions.values_list("caption__external_id", "caption_id"))
    order = [by_ext[k] for k in ("q2", "q3", "q7", "q5", "q6")]
    for r in (r1, r2, r3):
        submit(r, task, order=order)
    bow = ranking_report_create(study=study).result["proxies"]["bow"]
    # all 10 pairs consistent; the proxy ties q5/q6 (both 0): (9 + 1/2) / 10
    assert (bow["consistent_pairs"], bow["proxy_agree"], bow["proxy_ties"]) == (10, 9, 1)
    assert bow["proxy_agreement"] == pytest.approx(0.95)
    assert bow["proxy_agreement_strict"] == pytest.approx(0.9)
    assert bow["kendalls_w"] == pytest.approx(1.0)
    assert bow["krippendorff_alpha_ordinal"] == pytest.approx(1.0)


def test_study_with_every_proxy_on_youcook2_excerpt(fixtures_dir):
    """Only the sampled clips' rows are computed; each selection must equal the analysis's
    select_five on the full row of that clip."""
    require_nlp()
    dataset = dataset_import(path=fixtures_dir / "youcook2_val_excerpt.json", name="yc2", fmt="youcook2-json")
    study = ranking_study_create(dataset=dataset, name="all", proxies=["bow", "pos", "syn", "met"], n_clips=6, seed=3)
    assert study.tasks.count() == 24 and set(study.pipelines) == {"bow", "pos", "syn", "met"}
    captions = list(Caption.objects.filter(dataset=dataset).order_by("pk"))
    for task in study.tasks.select_related("clip"):
        rows = list(task.captions.order_by("candidate_rank"))
        assert task.n_candidates == 34 and len(rows) == 5
        assert all(r.caption.original_clip_id != task.clip_id for r in rows)
        assert [r.score for r in rows] == sorted((r.score for r in rows), reverse=True)
    task = study.tasks.filter(proxy="met").select_related("clip").first()
    own = [j for j, c in enumerate(captions) if c.original_clip_id == task.clip_id]
    row = proxy_matrix("met", [[captions[j].text for j in own]], [c.text for c in captions],
                       caption_owner=[0 if j in own else -1 for j in range(len(captions))])[0]
    five = select_five(row, own_captions=own)
    assert [captions[j].pk for j in five.caption_ids] == list(
        task.captions.order_by("candidate_rank").values_list("caption_id", flat=True))


def test_build_ranking_study_command():
    make_benchmark()
    out = io.StringIO()
    call_command("build_ranking_study", "--dataset", "bench", "--name", "cli", "--proxies", "bow", "--clips", "4",
                 stdout=out)
    study = RankingStudy.objects.get(name="cli")
    assert study.tasks.count() == 4 and study.raters_per_task == 3
    assert f"(id {study.pk}): 4 tasks" in out.getvalue()
    with pytest.raises(CommandError, match="already exists"):
        call_command("build_ranking_study", "--dataset", "bench", "--name", "cli", "--proxies", "bow", "--clips", "4")
