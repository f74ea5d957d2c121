"""Moment pools through the database: spans of the same caption and clip merge at temporal IoU >= the
threshold (chains included, touching spans never), whatever order the runs come in; each judged
span keeps the predictions it stands for; the rater queue serves the span."""
from __future__ import annotations

import pytest

from annotation.models import (Clip, MomentMember, MomentPoolDesign, PairProvenance, PooledPair, PoolRun, Prediction,
                               Run)
from annotation.services.pools.moments import moment_pool_create
from annotation.services.pools.build import PoolError, pool_create
from annotation.services.queue.leases import lease_next
from annotation.services.accounts.raters import memberships_grant
from tests.factories import make_dataset, make_user, unique

pytestmark = pytest.mark.django_db


def moment_run(dataset, name: str, rows: list[tuple[str, str, float, float]]) -> Run:
    """rows: (caption, clip, start, end) in rank order per caption."""
    run = Run.objects.create(dataset=dataset, name=name, kind=Run.Kind.MOMENT, checksum=unique("sum"))
    captions = {c.external_id: c for c in dataset.captions.all()}
    clips = {c.external_id: c for c in dataset.clips.all()}
    ranks: dict[str, int] = {}
    predictions = []
    for caption, clip, start, end in rows:
        ranks[caption] = ranks.get(caption, 0) + 1
        predictions.append(Prediction(run=run, caption=captions[caption], clip=clips[clip], rank=ranks[caption],
                                      score=1 - ranks[caption] / 100, start=start, end=end))
    Prediction.objects.bulk_create(predictions)
    return run


def spans(pool) -> list[tuple[str, str, float, float]]:
    return sorted(PooledPair.objects.filter(pool=pool).values_list("caption__external_id", "clip__external_id", "start", "end"))


@pytest.fixture
def dataset():
    return make_dataset(clips=3, captions=2)


def build(dataset, runs, **options):
    return moment_pool_create(dataset=dataset, name=unique("mp"), runs=runs, **options)


def test_touching_spans_stay_apart(dataset):
    a = moment_run(dataset, "A", [("q1", "v1", 0, 5)])
    b = moment_run(dataset, "B", [("q1", "v1", 5, 10)])
    assert spans(build(dataset, [a, b])) == [("q1", "v1", 0, 5), ("q1", "v1", 5, 10)]


def test_nested_spans_merge_only_when_their_iou_reaches_the_threshold(dataset):
    # [1, 9] inside [0, 10]: IoU 0.8 -> one span, the hull [0, 10]. [2, 5] inside: IoU 0.3 -> its own span.
    a = moment_run(dataset, "A", [("q1", "v1", 0, 10)])
    b = moment_run(dataset, "B", [("q1", "v1", 1, 9), ("q1", "v1", 2, 5)])
    pool = build(dataset, [a, b])
    assert spans(pool) == [("q1", "v1", 0, 10), ("q1", "v1", 2, 5)]
    hull = PooledPair.objects.get(pool=pool, start=0)
    assert sorted(hull.moment_members.values_list("run__name", "rank", "start", "end")) == [("A", 1, 0, 10), ("B", 1, 1, 9)]


def test_iou_exactly_at_the_threshold_merges(dataset):
    # [0, 7] inside [0, 10]: IoU 0.7 on paper, 0.7 - 1 ulp in binary; "at or above" still merges.
    a = moment_run(dataset, "A", [("q1", "v1", 0, 10)])
    b = moment_run(dataset, "B", [("q1", "v1", 0, 7)])
    assert spans(build(dataset, [a, b])) == [("q1", "v1", 0, 10)]
    assert spans(build(dataset, [a, b], iou_threshold=0.71)) == [("q1", "v1", 0, 7), ("q1", "v1", 0, 10)]


def test_a_chain_of_overlaps_becomes_one_span(dataset):
    # A~B (IoU 9/11) and B~C (9/11) but not A~C (8/12 < 0.7): connected, so one span [0, 12].
    a = moment_run(dataset, "A", [("q1", "v1", 0, 10)])
    b = moment_run(dataset, "B", [("q1", "v1", 1, 11)])
    c = moment_run(dataset, "C", [("q1", "v1", 2, 12)])
    pool = build(dataset, [a, b, c])
    assert spans(pool) == [("q1", "v1", 0, 12)]
    assert MomentMember.objects.filter(pair__pool=pool).count() == 3


def test_spans_only_merge_within_one_caption_and_clip(dataset):
    a = moment_run(dataset, "A", [("q1", "v1", 0, 10), ("q2", "v1", 0, 10)])
    b = moment_run(dataset, "B", [("q1", "v2", 0, 10), ("q2", "v1", 0, 10)])
    assert spans(build(dataset, [a, b])) == [("q1", "v1", 0, 10), ("q1", "v2", 0, 10), ("q2", "v1", 0, 10)]


def test_the_pool_does_not_depend_on_the_order_of_runs(dataset):
    a = moment_run(dataset, "A", [("q1", "v1", 0, 10), ("q1", "v2", 3, 4), ("q2", "v3", 5, 9)])
    b = moment_run(dataset, "B", [("q1", "v1", 1, 11), ("q2", "v3", 5.5, 9), ("q2", "v3", 20, 30)])
    c = moment_run(dataset, "C", [("q1", "v1", 2, 12), ("q1", "v2", 3.5, 4)])
    forward, backward = build(dataset, [a, b, c], seed=7), build(dataset, [c, b, a], seed=7)

    def content(pool):
        return sorted(PooledPair.objects.filter(pool=pool).values_list(
            "caption__external_id", "clip__external_id", "start", "end", "queue_order", "required_labels"))

    assert content(forward) == content(backward)
    assert len(content(forward)) == 5


def test_members_and_provenance_keep_every_run_and_rank(dataset):
    # Run A proposes two overlapping spans of one clip (ranks 1 and 3): both are members, and its
    # provenance is its best rank.
    a = moment_run(dataset, "A", [("q1", "v1", 0, 10), ("q1", "v2", 0, 1), ("q1", "v1", 0.5, 10)])
    b = moment_run(dataset, "B", [("q1", "v3", 0, 1), ("q1", "v1", 1, 10)])
    pool = build(dataset, [a, b])
    pair = PooledPair.objects.get(pool=pool, clip__external_id="v1")
    assert (pair.start, pair.end) == (0, 10)
    assert sorted(pair.moment_members.values_list("run__name", "rank", "start", "end", "score")) == [
        ("A", 1, 0, 10, 0.99), ("A", 3, 0.5, 10, 0.97), ("B", 2, 1, 10, 0.98)]
    assert sorted(PairProvenance.objects.filter(pair=pair).values_list("run__name", "rank")) == [("A", 1), ("B", 2)]
    added = dict(PoolRun.objects.filter(pool=pool).values_list("run__name", "pairs_added"))
    assert added == {"A": 2, "B": 1}  # v1 and v2 came with A; B only added v3


def test_depth_limits_the_ranks_pooled(dataset):
    a = moment_run(dataset, "A", [("q1", "v1", 0, 1), ("q1", "v2", 0, 1), ("q1", "v3", 0, 1)])
    pool = build(dataset, [a], depth=2)
    assert [clip for _, clip, _, _ in spans(pool)] == ["v1", "v2"]
    assert pool.depth == 2 and MomentPoolDesign.objects.get(pool=pool).iou_threshold == 0.7


def test_original_positive_is_the_span_on_the_original_moment():
    dataset = make_dataset(clips=2, captions=1)
    # The caption was written for a segment clip [10, 20] of video v1; runs rank the whole video v1.
    segment = Clip.objects.create(dataset=dataset, external_id="v1-seg", video_id="v1", start=10, end=20)
    dataset.captions.update(original_clip=segment)
    a = moment_run(dataset, "A", [("q1", "v1", 10, 19), ("q1", "v1", 40, 50), ("q1", "v2", 10, 20)])
    pool = build(dataset, [a])
    flagged = PooledPair.objects.filter(pool=pool, is_original_positive=True).values_list("clip__external_id", "start")
    assert list(flagged) == [("v1", 10)]


def test_redundancy_and_queue_order_are_drawn_per_span(dataset):
    rows = [("q1", "v1", float(s), float(s) + 1) for s in range(0, 200, 2)]
    pool = build(dataset, [moment_run(dataset, "A", rows)], depth=100, redundancy=0.5, seed=3)
    pairs = PooledPair.objects.filter(pool=pool)
    assert pairs.count() == 100
    assert len(set(pairs.values_list("queue_order", flat=True))) == 100
    assert 30 <= pairs.filter(required_labels=2).count() <= 70


def test_the_queue_serves_the_judged_span(dataset):
    a = moment_run(dataset, "A", [("q1", "v2", 4, 8.5)])
    pool = build(dataset, [a], redundancy=0)
    rater = make_user("rater")
    memberships_grant(pool=pool, users=[rater])
    from annotation.models import PoolMembership

    PoolMembership.objects.filter(pool=pool).update(training=PoolMembership.Training.PASSED)
    assignment = lease_next(pool=pool, rater=rater)
    pair = assignment.lease.pair
    assert (pair.clip.external_id, pair.start, pair.end) == ("v2", 4, 8.5)


@pytest.mark.parametrize("change, message", [
    ({"runs": "clip"}, "is not a moment run"),
    ({"iou_threshold": 0}, "iou_threshold"),
    ({"depth": 0}, "depth"),
])
def test_bad_requests_are_refused(dataset, change, message):
    run = moment_run(dataset, "A", [("q1", "v1", 0, 1)])
    if change.pop("runs", None):
        run = Run.objects.create(dataset=dataset, name="clips", checksum=unique("sum"))
    with pytest.raises(PoolError, match=message):
        build(dataset, [run], **change)


def test_other_dataset_duplicate_name_and_whole_clip_pools_are_refused(dataset):
    run = moment_run(dataset, "A", [("q1", "v1", 0, 1)])
    other = make_dataset()
    with pytest.raises(PoolError, match="another dataset"):
        moment_pool_create(dataset=other, name="x", runs=[run])
    moment_pool_create(dataset=dataset, name="taken", runs=[run])
    with pytest.raises(PoolError, match="already exists"):
        moment_pool_create(dataset=dataset, name="taken", runs=[run])
    with pytest.raises(PoolError, match="moment pool"):
        pool_create(dataset=dataset, name="whole", runs=[run])


def test_build_moment_pool_command(dataset):
    from io import StringIO

    from django.core.management import CommandError, call_command

    moment_run(dataset, "A", [("q1", "v1", 0, 10)])
    moment_run(dataset, "B", [("q1", "v1", 1, 10)])
    out = StringIO()
    call_command("build_moment_pool", "--dataset", dataset.name, "--name", "cli", "--run", "A", "--run", "B", stdout=out)
    assert "1 spans to judge from 2 predictions (1 merged" in out.getvalue()
    with pytest.raises(CommandError, match="no run named 'C'"):
        call_command("build_moment_pool", "--dataset", dataset.name, "--name", "x", "--run", "C")


def test_summary_flags_spans_a_long_chain_stretched(dataset):
    from annotation.selectors.moments import moment_pool_summary

    # Six 10-second spans one second apart: neighbours overlap at 9/11, so one chain, hull [0, 15],
    # where each member covers 10/15 < 0.7 of the span raters see.
    run = moment_run(dataset, "A", [("q1", "v1", s, s + 10) for s in range(6)] + [("q1", "v2", 0, 10)])
    summary = moment_pool_summary(pool=build(dataset, [run]))
    assert (summary["spans"], summary["members"], summary["merged_spans"], summary["stretched_spans"]) == (2, 7, 1, 1)
