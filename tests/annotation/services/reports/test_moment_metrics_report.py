"""Moment metrics of a labelled moment pool, checked against a hand-worked example: R@K at IoU 0.5
and 0.7 and video R@K with the corrected positive moments, and with the original moments only."""
from __future__ import annotations

import pytest

from annotation.models import Caption, Clip, Dataset, PooledPair
from annotation.services.pools.moments import moment_pool_create
from annotation.services.reports.kinds.moment_metrics import moment_metrics_report_create
from annotation.services.accounts.raters import memberships_grant
from annotation.services.reports.create import ReportError
from tests.annotation.services.pools.test_moment_pools import moment_run
from tests.factories import label_pair, make_user, unique

pytestmark = pytest.mark.django_db

COLUMNS = ["R@1 IoU=0.5", "R@2 IoU=0.5", "R@1 IoU=0.7", "R@2 IoU=0.7", "Video R@1", "Video R@2"]


@pytest.fixture
def labelled_pool():
    """Whole videos v1..v3; q1 was written for [10, 20] of v1, q2 for [0, 10] of v2, q3 for v3 with
    no span and no duration (no original moment known).

    Pool (depth 2, IoU 0.7): q1: v1 [10, 19]; v2 [0, 5] (A's [0, 5] and B's [0, 4.5], IoU 0.9);
    v3 [30, 40]. q2: v3 [0, 8]; v2 [0, 6] and [1, 9] (IoU 5/9, apart); v1 [0, 1]. q3: v3 [0, 2].
    Raters find q1's v1 and v2 spans relevant, everything else not.
    """
    dataset = Dataset.objects.create(name="moments")
    for video in ("v1", "v2", "v3"):
        Clip.objects.create(dataset=dataset, external_id=video, video_id=video)
    seg1 = Clip.objects.create(dataset=dataset, external_id="v1-seg", video_id="v1", start=10, end=20)
    seg2 = Clip.objects.create(dataset=dataset, external_id="v2-seg", video_id="v2", start=0, end=10)
    for caption, clip in (("q1", seg1), ("q2", seg2), ("q3", Clip.objects.get(external_id="v3"))):
        Caption.objects.create(dataset=dataset, external_id=caption, text=caption, original_clip=clip)
    a = moment_run(dataset, "A", [("q1", "v1", 10, 19), ("q1", "v2", 0, 5), ("q2", "v3", 0, 8), ("q2", "v2", 0, 6),
                                  ("q3", "v3", 0, 2)])
    b = moment_run(dataset, "B", [("q1", "v2", 0, 4.5), ("q1", "v3", 30, 40), ("q2", "v2", 1, 9), ("q2", "v1", 0, 1)])
    pool = moment_pool_create(dataset=dataset, name="mp", runs=[a, b], depth=2, iou_threshold=0.7, redundancy=0)
    rater = make_user("rater")
    memberships_grant(pool=pool, users=[rater])
    relevant = {("q1", "v1", 10), ("q1", "v2", 0)}
    for pair in PooledPair.objects.filter(pool=pool).select_related("caption", "clip"):
        value = "relevant" if (pair.caption.external_id, pair.clip.external_id, pair.start) in relevant else "not_relevant"
        label_pair(rater, pair, client_id=unique("c"), value=value)
    return pool


def test_recall_with_corrected_and_original_moments(labelled_pool):
    report = moment_metrics_report_create(pool=labelled_pool, ks=(1, 2))
    result = report.result
    assert report.kind == "moment_metrics" and result["columns"] == COLUMNS
    # q3 has no original moment and no relevant span: left out. q1 and q2 are averaged.
    assert (result["n_captions"], result["captions_without_positive"]) == (2, 1)
    rows = {row["run"]: row for row in result["runs"]}
    # A: q1 right at rank 1 (IoU 0.9); q2's [0, 6] at rank 2 has IoU 0.6 with [0, 10]: counts at 0.5
    # only; its first video (v3) is wrong, its second (v2) right. Nothing A found was newly judged.
    a = [0.5, 1.0, 0.5, 0.5, 0.5, 1.0]
    assert [rows["A"]["corrected"][c] for c in COLUMNS] == a
    assert [rows["A"]["original"][c] for c in COLUMNS] == a
    # B: q2 right at rank 1 ([1, 9] vs [0, 10], IoU 0.8). q1's [0, 4.5] on v2 is wrong against the
    # original moment, right (IoU 0.9) against the span raters judged relevant.
    assert [rows["B"]["corrected"][c] for c in COLUMNS] == [1.0] * 6
    assert [rows["B"]["original"][c] for c in COLUMNS] == [0.5] * 6
    assert result["spans"] == {"judged_spans": 8, "resolved": 8, "relevant": 2, "waiting": 0}
    assert report.params["merge_iou_threshold"] == 0.7 and report.versions["numpy"]


def test_defaults_are_the_papers_columns(labelled_pool):
    result = moment_metrics_report_create(pool=labelled_pool).result
    assert result["columns"] == ["R@1 IoU=0.5", "R@5 IoU=0.5", "R@10 IoU=0.5", "R@1 IoU=0.7", "R@5 IoU=0.7",
                                 "R@10 IoU=0.7", "Video R@1", "Video R@5", "Video R@10"]


def test_unresolved_spans_are_not_positive(labelled_pool):
    PooledPair.objects.filter(pool=labelled_pool, clip__external_id="v2", caption__external_id="q1").update(
        state=PooledPair.State.OPEN, resolved_label="")
    result = moment_metrics_report_create(pool=labelled_pool, ks=(1, 2)).result
    rows = {row["run"]: row for row in result["runs"]}
    assert rows["B"]["corrected"]["R@1 IoU=0.5"] == 0.5
    assert result["spans"]["waiting"] == 1


def test_only_moment_pools_have_moment_metrics(labelled_pool):
    from annotation.services.pools.build import pool_create
    from annotation.models import Prediction, Run

    dataset = labelled_pool.dataset
    clip_run = Run.objects.create(dataset=dataset, name="clips", checksum="c")
    Prediction.objects.create(run=clip_run, caption=dataset.captions.first(), clip=dataset.clips.first(), rank=1)
    plain = pool_create(dataset=dataset, name="plain", runs=[clip_run])
    with pytest.raises(ReportError, match="not a moment pool"):
        moment_metrics_report_create(pool=plain)
    with pytest.raises(ReportError, match="not moment runs"):
        moment_metrics_report_create(pool=labelled_pool, run_ids=[clip_run.pk])


def test_video_recall_counts_distinct_videos_below_rank_k():
    # v2 is the run's second distinct video although it sits at rank 3: video R@2 = 1, R@2 = 0.
    dataset = Dataset.objects.create(name="videos")
    clips = {v: Clip.objects.create(dataset=dataset, external_id=v, video_id=v, duration=40) for v in ("v1", "v2")}
    Caption.objects.create(dataset=dataset, external_id="q1", text="q1", original_clip=clips["v2"])
    run = moment_run(dataset, "A", [("q1", "v1", 0, 1), ("q1", "v1", 2, 3), ("q1", "v2", 0, 40)])
    pool = moment_pool_create(dataset=dataset, name="mp", runs=[run], depth=1)
    row = moment_metrics_report_create(pool=pool, ks=(2,)).result["runs"][0]["corrected"]
    assert (row["R@2 IoU=0.5"], row["Video R@2"]) == (0.0, 1.0)
