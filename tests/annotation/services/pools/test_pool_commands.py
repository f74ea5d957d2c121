"""manage.py build_pool: building a pool from named runs, adding runs later, and clear refusals."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Label, Pool, PooledPair
from annotation.services.pools.build import pool_create
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def pairs_of(pool):
    return set(PooledPair.objects.filter(pool=pool, role="pool").values_list("caption__external_id", "clip__external_id"))


def build(*args) -> str:
    out = StringIO()
    call_command("build_pool", *args, stdout=out)
    return out.getvalue()


def test_builds_the_same_pool_as_the_service_with_the_options_given():
    reference, (a, b) = make_pool_with_runs(depth=3, redundancy=0.5, seed=7)
    dataset = reference.dataset
    out = build("--dataset", dataset.name, "--name", "cli", "--run", "A", "--run", "B", "--depth", "3",
                "--redundancy", "0.5", "--seed", "7", "--lease-seconds", "120", "--include-original-positives")
    pool = Pool.objects.get(dataset=dataset, name="cli")
    assert (pool.depth, pool.redundancy, pool.seed, pool.lease_seconds, pool.include_original_positives) == (
        3, 0.5, 7, 120, True)
    originals = set(PooledPair.objects.filter(pool=pool, is_original_positive=True)
                    .values_list("caption__external_id", "clip__external_id"))
    assert pairs_of(pool) == pairs_of(reference) | originals
    twice = PooledPair.objects.filter(pool=pool, required_labels=2).count()
    assert f"{len(pairs_of(pool)):,} pairs in all, {twice:,} of them to be labelled twice" in out


def test_adding_a_run_queues_only_its_new_pairs_and_keeps_labels():
    reference, (a, b) = make_pool_with_runs(depth=3)
    dataset = reference.dataset
    build("--dataset", dataset.name, "--name", "grow", "--run", "A", "--depth", "3")
    pool = Pool.objects.get(dataset=dataset, name="grow")
    only_a = pairs_of(pool)
    labelled = PooledPair.objects.filter(pool=pool).first()
    Label.objects.create(pair=labelled, rater=make_rater(), value="relevant", client_id="c1")
    out = build("--dataset", dataset.name, "--name", "grow", "--add", "--run", "B")
    new = pairs_of(pool) - only_a
    assert pairs_of(pool) == pairs_of(reference) and new
    assert f"{len(new):,} new pairs from 'B'" in out
    assert Label.objects.filter(pair=labelled).count() == 1


def test_adding_several_runs_is_all_or_none():
    reference, (a, b) = make_pool_with_runs(depth=3)
    dataset = reference.dataset
    pool = pool_create(dataset=dataset, name="partial", runs=[b], depth=3)
    before = pairs_of(pool)
    with pytest.raises(CommandError, match="already in pool"):
        build("--dataset", dataset.name, "--name", "partial", "--add", "--run", "A", "--run", "B")
    assert pairs_of(pool) == before


@pytest.mark.parametrize("args, message", [
    (["--run", "Z"], "no run named 'Z'"),
    (["--run", "A", "--depth", "0"], "depth must be between 1 and 1000"),
    (["--run", "A", "--add", "--depth", "5", "--seed", "2"], "--seed, --depth: a pool keeps the options it was built"),
    (["--run", "A", "--add", "--name", "missing"], "no pool named 'missing'"),
])
def test_refusals_name_what_is_wrong(args, message):
    reference, _ = make_pool_with_runs(depth=3)
    base = ["--dataset", reference.dataset.name, "--name", "new"]
    with pytest.raises(CommandError, match=message):
        build(*base, *args)
    assert not Pool.objects.filter(name="new").exists()


def test_a_pool_name_is_not_taken_twice():
    reference, _ = make_pool_with_runs(depth=3)
    with pytest.raises(CommandError, match="already"):
        build("--dataset", reference.dataset.name, "--name", reference.name, "--run", "A")
