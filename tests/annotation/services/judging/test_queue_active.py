"""The "active" judging strategy in the live queue (PostgreSQL): a machine judge's verdicts draw
the sample, each pair keeps its inclusion probability, and the queue hands the sample out in the
design's order (issue 25). Run A ranks v1, v2, v3 and run B v4, v5, v6 for caption q1."""
from __future__ import annotations

import numpy as np
import pytest

from annotation.analysis.judging.strategies import StrategyParams, active_design, active_pool_scale
from annotation.models import Caption, Clip, MachineJudge, MachineJudgment, PooledPair
from annotation.services.judging import JudgingError, judging_settings_of, judging_settings_update
from annotation.services.judging.order import query_snapshot
from tests.annotation.services.judging.test_queue_strategies import handed_out, name, setup

pytestmark = pytest.mark.django_db

# verdict, score -> the machine's probability of relevance (machine_agreement.relevance_probability)
VERDICTS = {"v1": ("relevant", 0.99), "v2": ("relevant", 0.5), "v3": ("not_relevant", 0.9),
            "v4": ("relevant", 0.6), "v6": ("not_relevant", None)}   # v5: no verdict
PROBABILITY = {"v1": 0.99, "v2": 0.5, "v3": 0.1, "v4": 0.6, "v5": np.nan, "v6": 0.0}


def machine_judge(pool, name="vlm"):
    judge = MachineJudge.objects.create(dataset=pool.dataset, pool=pool, name=name, checksum="0" * 64)
    q1 = Caption.objects.get(dataset=pool.dataset, external_id="q1")
    for clip, (label, score) in VERDICTS.items():
        MachineJudgment.objects.create(judge=judge, caption=q1, clip=Clip.objects.get(dataset=pool.dataset, external_id=clip),
                                       label=label, score=score)
    return judge


def test_active_design_stores_its_inclusion_probabilities_and_the_queue_follows_its_order():
    pool, (rater,) = setup({})
    machine_judge(pool)
    done = judging_settings_update(pool=pool, changes={"strategy": "active", "machine_judge": "vlm", "sample_rate": 0.6})
    assert done["design"] and judging_settings_of(pool)["machine_judge"] == "vlm"
    q1 = Caption.objects.get(dataset=pool.dataset, external_id="q1")
    snap = query_snapshot(pool.pk, q1.pk)
    clips = [name(p)[1] for p in snap.pair_ids.tolist()]
    # one allocation over the whole pool, stored on the pool when the design was drawn
    pool.refresh_from_db()
    params = StrategyParams(seed=int(pool.seed), sample_rate=0.6)
    # v1 is q1's original positive: relevant by convention, so the design neither samples nor
    # counts it, and run A, which ranks it, is settled (as the estimates and bench_ppi take it)
    assert [clips[i] for i in snap.originals] == ["v1"]
    scale = active_pool_scale([(snap.run_lists, len(clips), [PROBABILITY[c] for c in clips], snap.originals)],
                              params=params)
    assert pool.judging_active_scale == pytest.approx(list(scale), abs=1e-15)
    design = active_design(snap.run_lists, [PROBABILITY[c] for c in clips], query_key=q1.pk, n_pairs=len(clips),
                           params=params, scale=scale, known=snap.originals)
    stored = dict(PooledPair.objects.filter(pool=pool, caption=q1).values_list("pk", "inclusion_probability"))
    pi = np.array([stored[p] for p in snap.pair_ids.tolist()])
    assert np.all((pi > 0) & (pi <= 1)) and pi.min() < 1
    assert pi.tolist() == design["pi"].tolist()      # exactly the pi the estimates read
    by_clip = dict(zip(clips, pi))
    assert by_clip["v1"] == 1.0
    assert sum(p for c, p in by_clip.items() if c != "v1") == pytest.approx(0.6 * 5, abs=1e-6)
    # Neyman scores (sd under the machine's belief x leverage on the run's C@3): run A is settled,
    # so v2 and v3 move no run's C@3 and keep only the uniform share c0; B = v4, v5, v6 at 0.6,
    # none (0.5), 0: v4 (0.49 x 0.5) > v5 (0.5 x 0.4) (both capped at 1 here) > v6 (0: certain),
    # which keeps only c0 too
    assert by_clip["v2"] == by_clip["v3"] == by_clip["v6"] == pytest.approx(scale[0], abs=1e-15)
    assert by_clip["v4"] >= by_clip["v5"] > by_clip["v6"]
    sample = [clips[i] for i in design["order"].tolist()]
    assert "v1" not in sample
    out = set(clips) - set(sample)
    assert set(PooledPair.objects.filter(pool=pool, caption=q1, state="not_sampled")
               .values_list("clip__external_id", flat=True)) == out
    assert [clip for _, clip in handed_out(pool, rater)] == sample
    # the judged pairs kept the complete sample's pi
    assert dict(PooledPair.objects.filter(pool=pool, caption=q1).values_list("pk", "inclusion_probability")) == \
        pytest.approx(stored)
    # once pairs have labels the design is fixed
    with pytest.raises(JudgingError, match="cannot change"):
        judging_settings_update(pool=pool, changes={"sample_rate": 0.4})


def test_active_needs_a_machine_judge_of_the_dataset():
    pool, _ = setup({})
    with pytest.raises(JudgingError, match="needs a machine_judge"):
        judging_settings_update(pool=pool, changes={"strategy": "active"})
    with pytest.raises(JudgingError, match="no machine judge named 'gpt'"):
        judging_settings_update(pool=pool, changes={"strategy": "active", "machine_judge": "gpt"})
    assert pool.judging_strategy == "pool_order"


def test_a_label_on_an_active_pool_uses_the_stored_scale_instead_of_drawing_it_again(monkeypatch):
    # The label's hook rebuilds the pool from the query row's columns: without the stored scale it
    # would draw the allocation over the whole pool again on every label.
    from annotation.services.judging import order

    pool, (rater,) = setup({})
    machine_judge(pool)
    judging_settings_update(pool=pool, changes={"strategy": "active", "machine_judge": "vlm", "sample_rate": 0.6})
    pool.refresh_from_db()
    drawn = pool.judging_active_scale

    def refuse(*args, **kwargs):
        raise AssertionError("the pool's active scale was drawn again")

    monkeypatch.setattr(order, "active_scale_draw", refuse)
    assert len(handed_out(pool, rater)) >= 2  # labels judged pairs: their hooks ran
    pool.refresh_from_db()
    assert pool.judging_active_scale == drawn


def test_a_pool_that_judges_its_original_positives_keeps_them_in_the_active_design():
    pool, (rater,) = setup({}, )
    pool.include_original_positives = True
    pool.save(update_fields=["include_original_positives"])
    machine_judge(pool)
    judging_settings_update(pool=pool, changes={"strategy": "active", "machine_judge": "vlm", "sample_rate": 0.6})
    q1 = Caption.objects.get(dataset=pool.dataset, external_id="q1")
    stored = dict(PooledPair.objects.filter(pool=pool, caption=q1).values_list("clip__external_id", "inclusion_probability"))
    assert sum(stored.values()) == pytest.approx(0.6 * 6, abs=1e-6)  # v1 is counted as any pair


def test_an_active_design_whose_top_stratum_exceeds_the_sample_rate_is_refused_before_anything_changes():
    pool, _ = setup({})
    machine_judge(pool)
    changes = {"strategy": "active", "machine_judge": "vlm", "sample_rate": 0.1, "top_stratum_depth": 1}
    with pytest.raises(JudgingError, match="top stratum alone exceeds the sample rate"):
        judging_settings_update(pool=pool, changes=changes)
    pool.refresh_from_db()
    assert pool.judging_strategy == "pool_order" and pool.judging_active_scale is None
    assert not PooledPair.objects.filter(pool=pool, state="not_sampled").exists()


def test_a_build_with_an_active_design_the_pairs_cannot_take_leaves_no_pool():
    from annotation.models import Pool
    from annotation.services.pools.build import PoolError, pool_create

    pool, _ = setup({})
    judge = machine_judge(pool)
    with pytest.raises(PoolError, match="top stratum alone exceeds the sample rate"):
        pool_create(dataset=pool.dataset, name="too-deep", runs=list(pool.runs.all()), depth=3,
                    judging={"strategy": "active", "machine_judge": judge.name, "sample_rate": 0.1,
                             "top_stratum_depth": 1})
    assert not Pool.objects.filter(dataset=pool.dataset, name="too-deep").exists()
