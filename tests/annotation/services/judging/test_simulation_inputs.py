"""What a judging simulation replays: a pool's or a judgment set's truth, runs and original positives."""
from __future__ import annotations

import pytest

from annotation.models import PooledPair
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.judging.simulation import (SimulationError, judgment_set_simulation_inputs,
                                                    pool_simulation_inputs, simulation_params_clean)
from tests.annotation.services.judging.simulation_world import TRUTH, resolve, tiny_world

pytestmark = pytest.mark.django_db


def _by_external(inputs, dataset):
    return inputs.rankings, inputs.truth, inputs.known_relevant


def test_a_fully_judged_pool_gives_its_runs_truth_and_counts():
    dataset, pool, _ = tiny_world()
    inputs = pool_simulation_inputs(pool=pool)
    rankings, truth, known = _by_external(inputs, dataset)
    assert rankings == {"X": {"q1": ["a", "b"], "q2": ["c", "d"]}, "Y": {"q1": ["a"], "q2": ["c"]}}
    assert truth == TRUTH and known == {}
    assert inputs.counts == {"runs": 2, "queries": 2, "pairs_to_judge": 4, "relevant_to_find": 2,
                             "original_positives_known": 0, "disagreements_as_not_relevant": 0,
                             "unjudged_as_not_relevant": 0}
    assert inputs.source["pool_id"] == pool.pk and [r["name"] for r in inputs.source["runs"]] == ["X", "Y"]


def test_a_pool_with_pairs_not_resolved_is_refused_with_their_count_and_states():
    _, pool, _ = tiny_world(judged={("q1", "a"): True})
    PooledPair.objects.filter(pool=pool, clip__external_id="b").update(state=PooledPair.State.ADJUDICATION)
    with pytest.raises(SimulationError) as refused:
        pool_simulation_inputs(pool=pool)
    message = str(refused.value)
    assert "is not fully judged: 3 of 4 pairs lack a resolved label" in message
    assert "2 open" in message and "1 escalated to an admin" in message


def test_a_disagreement_counts_as_not_relevant_and_is_said():
    dataset, pool, _ = tiny_world(judged={k: v for k, v in TRUTH.items() if k != ("q2", "d")})
    PooledPair.objects.filter(pool=pool, clip__external_id="d").update(state=PooledPair.State.DISAGREEMENT,
                                                                       available=False)
    inputs = pool_simulation_inputs(pool=pool)
    _, truth, _ = _by_external(inputs, dataset)
    assert truth[("q2", "d")] is False and inputs.counts["disagreements_as_not_relevant"] == 1
    assert any("no majority count as not relevant" in note for note in inputs.notes)


def test_original_positives_are_known_relevant_not_pairs_to_judge():
    # q1's original clip is b: the pool (without original positives) does not hold it, yet run X
    # ranks it; it is relevant without a judgment, so it is no pair to judge.
    dataset, pool, _ = tiny_world(judged={k: v for k, v in TRUTH.items() if k != ("q1", "b")}, originals={"q1": "b"})
    assert not PooledPair.objects.filter(pool=pool, clip__external_id="b").exists()
    inputs = pool_simulation_inputs(pool=pool)
    _, truth, known = _by_external(inputs, dataset)
    # The engine wants a truth for every pooled pair: the known one is relevant, and not counted as one to judge.
    assert known == {"q1": {"b"}} and truth[("q1", "b")] is True
    assert inputs.counts["pairs_to_judge"] == 3 and inputs.counts["original_positives_known"] == 1


def _qrels_set(dataset, lines: str, tmp_path, name="qrels") -> JudgmentSet:
    from annotation.services.judgment_sets.imports import judgments_import
    path = tmp_path / f"{name}.qrels"
    path.write_text(lines)
    return judgments_import(dataset=dataset, path=path, fmt="qrels", name=name, seeds_pools=False).judgment_set


def test_a_judgment_set_judges_the_runs_pool_and_unjudged_pairs_count_as_not_relevant(tmp_path):
    dataset, _, runs = tiny_world(judged={})
    # The set judges a, b and d; c (pooled by both runs at rank 1) is not in it.
    judgment_set = _qrels_set(dataset, "q1 0 a 1\nq1 0 b 0\nq2 0 d 2\n", tmp_path)
    inputs = judgment_set_simulation_inputs(judgment_set=judgment_set, runs=runs, depth=2)
    assert inputs.rankings == {"X": {"q1": ["a", "b"], "q2": ["c", "d"]}, "Y": {"q1": ["a"], "q2": ["c"]}}
    assert inputs.truth == TRUTH  # grade 2 is relevant (rel >= 1); c unjudged -> not relevant
    assert inputs.counts["unjudged_as_not_relevant"] == 1
    assert inputs.notes == ["1 of the 4 pooled pairs (25.0%) are not judged by 'qrels' and count as not relevant "
                            "(trec_eval's convention)."]
    shallow = judgment_set_simulation_inputs(judgment_set=judgment_set, runs=runs, depth=1)
    assert shallow.truth == {("q1", "a"): True, ("q2", "c"): False}


def test_a_judgment_set_that_judges_none_of_the_pool_is_refused(tmp_path):
    dataset, _, runs = tiny_world(judged={}, extra_clips=("e",))
    judgment_set = _qrels_set(dataset, "q1 0 e 1\n", tmp_path)
    with pytest.raises(SimulationError, match="judges none of the 4 pairs the runs' top-2 lists pool"):
        judgment_set_simulation_inputs(judgment_set=judgment_set, runs=runs, depth=2)


def test_with_originals_the_datasets_original_positives_are_known(tmp_path):
    dataset, _, runs = tiny_world(judged={}, originals={"q2": "d"})
    judgment_set = _qrels_set(dataset, "q1 0 a 1\nq1 0 b 0\nq2 0 c 0\n", tmp_path)
    inputs = judgment_set_simulation_inputs(judgment_set=judgment_set, runs=runs, depth=2, with_originals=True)
    assert inputs.known_relevant == {"q2": {"d"}} and inputs.truth[("q2", "d")] is True
    assert inputs.counts["unjudged_as_not_relevant"] == 0 and inputs.counts["relevant_to_find"] == 1


def test_parameters_are_checked_and_completed():
    clean = simulation_params_clean({"strategies": "bandit,shallow_first", "checkpoints": "0.5,0.25,0.5"})
    assert clean["strategies"] == ["bandit", "shallow_first"] and clean["checkpoints"] == [0.25, 0.5]
    assert clean["replays"] == 200 and clean["measure"] == "C@10" and clean["misses_in_a_row"] is None
    for wrong, message in (({"strategies": ["random"]}, "unknown strategy 'random'"),
                           ({"checkpoints": [0, 0.5]}, "'checkpoints' must be in (0, 1]"),
                           ({"replays": 0}, "'replays' must be between 1 and 10000"),
                           ({"measure": "P@10"}, "'measure' must be one of"),
                           ({"colour": "red"}, "unknown parameter(s) colour")):
        with pytest.raises(SimulationError, match=message.replace("(", r"\(").replace(")", r"\)")):
            simulation_params_clean(wrong)
