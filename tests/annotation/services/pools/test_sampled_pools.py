"""Sampled pools through the database: every pooled document kept with its stratum (from its best
rank over runs) and inclusion probability, only the sampled ones queued, the draw reproducible."""
from __future__ import annotations

import pytest

from annotation.analysis.sampled_pools import build_sampled_pool
from annotation.models import PairProvenance, PooledPair, PoolRun, Prediction, Run, SampledDocument
from annotation.services.pools.build import PoolError
from annotation.services.pools.sampled import sampled_pool_create
from tests.factories import make_dataset, unique

pytestmark = pytest.mark.django_db

STRATA = [[1, 2, 1.0], [3, 10, 0.5], [11, 20, 0.25]]


def clip_run(dataset, name: str, ranking: dict[str, list[str]]) -> Run:
    run = Run.objects.create(dataset=dataset, name=name, checksum=unique("sum"), depth=max(map(len, ranking.values())))
    captions = {c.external_id: c for c in dataset.captions.all()}
    clips = {c.external_id: c for c in dataset.clips.all()}
    Prediction.objects.bulk_create([Prediction(run=run, caption=captions[q], clip=clips[v], rank=r, score=1 - r / 1000)
                                    for q, ranked in ranking.items() for r, v in enumerate(ranked, start=1)])
    return run


def rankings(shift: int, captions: int = 3, clips: int = 30, depth: int = 20) -> dict[str, list[str]]:
    return {f"q{q}": [f"v{(q * 5 + shift + 7 * r) % clips + 1}" for r in range(depth)] for q in range(1, captions + 1)}


@pytest.fixture
def dataset():
    return make_dataset(clips=30, captions=3)


@pytest.fixture
def runs(dataset):
    reversed_a = {q: list(reversed(ranked)) for q, ranked in rankings(0).items()}
    return [clip_run(dataset, "A", rankings(0)), clip_run(dataset, "B", rankings(1)), clip_run(dataset, "C", reversed_a)]


def documents(pool):
    return {(d.caption.external_id, d.clip.external_id): d for d in SampledDocument.objects.filter(pool=pool)
            .select_related("caption", "clip", "pair")}


def test_the_database_holds_the_analysis_sample(dataset, runs):
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=11)
    expected = build_sampled_pool({r.name: rankings_of(r) for r in runs}, [tuple(s) for s in STRATA], seed=11)
    stored = documents(pool)
    assert len(stored) == expected.full_pool_size == pool.sampled_design.full_pool_size
    for doc in expected.documents():
        row = stored[(doc.query, doc.doc)]
        assert (row.stratum, row.best_rank, row.sampled) == (doc.stratum, doc.best_rank, doc.sampled)
        assert row.inclusion_probability == pytest.approx(doc.inclusion_probability)
        assert (row.pair is not None) == doc.sampled
    assert PooledPair.objects.filter(pool=pool).count() == expected.judged_count == pool.sampled_design.sampled_count
    assert pool.depth == 20 and pool.sampled_design.strata == STRATA


def rankings_of(run: Run) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for caption, clip in Prediction.objects.filter(run=run).order_by("caption__external_id", "rank").values_list(
            "caption__external_id", "clip__external_id"):
        out.setdefault(caption, []).append(clip)
    return out


def test_stratum_comes_from_the_best_rank_over_runs(dataset):
    # v5 is at rank 12 in run A but rank 1 in run B: it belongs to the fully judged first stratum.
    a = clip_run(dataset, "A", {"q1": [f"v{i}" for i in (1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 5)]})
    b = clip_run(dataset, "B", {"q1": ["v5", "v1"]})
    pool = sampled_pool_create(dataset=dataset, name="s", runs=[a, b], strata=STRATA, seed=1)
    v5 = documents(pool)[("q1", "v5")]
    assert (v5.stratum, v5.best_rank, v5.sampled, v5.inclusion_probability) == (0, 1, True, 1.0)
    assert sorted(PairProvenance.objects.filter(pair=v5.pair).values_list("run__name", "rank")) == [("A", 12), ("B", 1)]
    # The third stratum holds v12 and v5 by rank in A, but v5 moved up: N = 1, n = ceil(0.25) = 1.
    third = [d for d in documents(pool).values() if d.stratum == 2]
    assert [(d.clip.external_id, d.inclusion_probability) for d in third] == [("v12", 1.0)]


def test_inclusion_probability_is_the_realised_fraction(dataset):
    # One run, 20 distinct clips: strata hold 2, 8 and 10 documents; samples 2, 4 and ceil(2.5) = 3.
    run = clip_run(dataset, "A", {"q1": [f"v{i}" for i in range(1, 21)]})
    pool = sampled_pool_create(dataset=dataset, name="s", runs=[run], strata=STRATA, seed=5)
    rows = list(SampledDocument.objects.filter(pool=pool).values_list("stratum", "sampled", "inclusion_probability"))
    for stratum, size, judged in ((0, 2, 2), (1, 8, 4), (2, 10, 3)):
        in_stratum = [r for r in rows if r[0] == stratum]
        assert len(in_stratum) == size and sum(r[1] for r in in_stratum) == judged
        assert {r[2] for r in in_stratum} == {judged / size}
    design = pool.sampled_design
    assert (design.full_pool_size, design.sampled_count, design.judgments_saved) == (20, 9, 11)


def test_the_sample_is_reproducible_and_independent_of_run_order(dataset, runs):
    first = sampled_pool_create(dataset=dataset, name="one", runs=runs, strata=STRATA, seed=3)
    again = sampled_pool_create(dataset=dataset, name="two", runs=list(reversed(runs)), strata=STRATA, seed=3)
    other_seed = sampled_pool_create(dataset=dataset, name="three", runs=runs, strata=STRATA, seed=4)

    def sample(pool):
        return sorted((c, v) for (c, v), d in documents(pool).items() if d.sampled)

    def queue(pool):
        return sorted(PooledPair.objects.filter(pool=pool).values_list("caption__external_id", "clip__external_id",
                                                                        "queue_order", "required_labels"))

    assert sample(first) == sample(again) and queue(first) == queue(again)
    assert sample(first) != sample(other_seed)


def test_pool_runs_count_the_sampled_pairs_each_run_brought(dataset, runs):
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=3)
    added = dict(PoolRun.objects.filter(pool=pool).values_list("run__name", "pairs_added"))
    assert sum(added.values()) == PooledPair.objects.filter(pool=pool).count()
    assert added["A"] > 0 and added["C"] == 0  # C ranks A's clips in reverse: nothing new


@pytest.mark.parametrize("strata, message", [
    ([[1, 10, 1.0], [12, 20, 0.5]], "contiguous"),
    ([[1, 10, 1.5]], "rate"),
    ([[1, 10, 1.0], [11, 2000, 0.05]], "deeper than 1000"),
    ([], "at least one stratum"),
    ([[1, 10]], "strata"),
])
def test_bad_strata_are_refused(dataset, runs, strata, message):
    with pytest.raises(PoolError, match=message):
        sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=strata, seed=0)


def test_moment_runs_and_duplicate_names_are_refused(dataset, runs):
    moment = Run.objects.create(dataset=dataset, name="M", kind=Run.Kind.MOMENT, checksum="m")
    with pytest.raises(PoolError, match="moment run"):
        sampled_pool_create(dataset=dataset, name="s", runs=[moment], strata=STRATA)
    sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA)
    with pytest.raises(PoolError, match="already exists"):
        sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA)


def test_build_sampled_pool_command(dataset, runs):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("build_sampled_pool", "--dataset", dataset.name, "--name", "cli", "--run", "A", "--run", "B",
                 "--strata", "1-2:1, 3-10:0.5, 11-20:0.25", "--seed", "3", stdout=out)
    design = SampledDocument.objects.filter(pool__name="cli").first().pool.sampled_design
    assert design.strata == STRATA
    assert f"{design.sampled_count} pairs to judge of {design.full_pool_size} pooled" in out.getvalue()
    with pytest.raises(CommandError, match="first-last:share"):
        call_command("build_sampled_pool", "--dataset", dataset.name, "--name", "x", "--run", "A", "--strata", "1-10")
