"""A pool's judging settings, each declared once (type, default, bounds, description): the strategy
that orders the queue and the rules that stop a query or the pool. The pool build and PATCH
pools/{id}/ (api/views/pools.py), the build_pool command's options, the Pool columns' defaults and
the check that applies a change (services/judging/plan.py) all read these declarations.

None for a budget or a stopping rule means "no such rule" (`nullable`): sent as null it switches the
rule off.
"""
from __future__ import annotations

from annotation.analysis.judging.strategies import BANDIT_VARIANTS, SAMPLE_RATE, STRATEGIES
from annotation.analysis.params import Param

#: The deepest rank a warm-up or a top stratum may reach: deeper than any pool's depth (1000).
MAX_RANK_SETTING = 1000

JUDGING_PARAMS: dict[str, Param] = {
    "strategy": Param(str, "pool_order", "Order to judge in: pool_order (started pairs first, then seeded random), "
                      "the run-adaptive orders, or a probability sample ('sampled', 'active').",
                      choices=STRATEGIES, what="strategy"),
    "warmup_depth": Param(int, 0, "Pairs at rank <= this in any run are judged first, shallow first.",
                          0, MAX_RANK_SETTING),
    "bandit_variant": Param(str, "mm_ns", "bandit: mm_ns (discounted max-mean) or thompson.", choices=BANDIT_VARIANTS),
    "sample_rate": SAMPLE_RATE,
    "top_stratum_depth": Param(int, 0, "'sampled', 'active': ranks <= this are always judged.", 0, MAX_RANK_SETTING),
    "query_budget": Param(int, None, "Stop a query after this many judged pairs (null: no budget).", 1, nullable=True),
    "pool_budget": Param(int, None, "Stop the pool after this many judged pairs (null: no budget).", 1, nullable=True),
    "stop_remaining_below": Param(float, None, "Stop a query when its estimated remaining relevant pairs fall below "
                                  "this (null: no such rule).", 0, 1_000_000, open_low=True, nullable=True),
    "stop_misses_in_a_row": Param(int, None, "Stop a query after this many non-relevant judgments in a row "
                                  "(null: no such rule).", 1, nullable=True),
    "machine_judge": Param(str, None, "'active': the name of a machine judge of the pool's dataset whose uncertainty "
                           "draws the sample.", nullable=True, max_length=200),
}
