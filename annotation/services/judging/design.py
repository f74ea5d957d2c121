"""Whether a pool's labels so far allow a sampling interval: the one place that decides it
(docs/methodology.md section 6, "Intervals need a design"; issue 35).

A Horvitz-Thompson or PPI interval is valid only when every counted pair's inclusion probability
is known. That holds for

- a probability sample: the `sampled` and `active` judging strategies (each pair's probability is
  stored with it when the design is drawn, and a stopped query's pairs get their prefix's), and a
  sampled pool built with strata (each document's probability is kept with it);
- a census: every pooled pair has a verdict (then nothing is estimated and the values are exact).

Every other order (bandit, move_to_front, shallow_first, pool_order stopped early, stopping rules
that read the answers) chooses which pairs get judged from the ranks or from what raters have
answered: the queue stores probability 1 for its pairs, which describes no draw, and an interval
built on it is a point that claims certainty it does not have. There the reports give no interval,
say why, and give the two scenarios "unjudged = not relevant" and "unjudged = relevant"
(annotation/analysis/judging/bounds.py) and the strategy to use next time.

The judging_estimates and ppi_estimates reports, the sample_estimate report and the corrected
leaderboard's sampled branch read the decision from `design_of_pool`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from annotation.analysis.judging.strategies import DESIGN_STRATEGIES
from annotation.models import Pool, SampledPoolDesign
from annotation.selectors.pools import PAIR_COUNT_WORDS, pool_pair_counts

PROBABILITY_SAMPLE = "probability_sample"
CENSUS = "census"
UNKNOWN_PROBABILITIES = "unknown_probabilities"

#: What to do next time for an interval, where the pool's order gives none.
NEXT_TIME = ("for an interval, judge with the 'sampled' strategy (a Poisson sample with known inclusion "
             "probabilities; human labels only) or 'active' (the same with a machine judge drawing the sample, "
             "for the ppi_estimates report), chosen before the first label; or judge every pooled pair")

# Why an order's pairs have no known inclusion probabilities, per strategy.
_HOW_CHOSEN = {
    "bandit": "pairs were chosen by the bandit strategy from what raters had answered",
    "move_to_front": "pairs were chosen by the move-to-front strategy from what raters had answered",
    "shallow_first": "pairs were judged shallowest rank first, so which pairs got judged depends on their ranks, "
                     "not on a random draw",
    "pool_order": "pairs were judged in the pool's seeded order, but judging stopped before every pooled pair had a "
                  "verdict, and where it stopped was not drawn at random",
}


@dataclass(frozen=True)
class Design:
    """A pool's judging design as the estimates see it."""

    kind: str                  # PROBABILITY_SAMPLE, CENSUS or UNKNOWN_PROBABILITIES
    strategy: str              # the pool's judging strategy ("sampled pool" for a pool built with strata)
    reason: str                # in words: why an interval is or is not valid
    counts: dict = field(default_factory=dict)   # pool_pair_counts
    next_time: str | None = None                  # NEXT_TIME where there is no interval
    random_order: bool = False  # the queue hands pairs out in one seeded random order, nothing reorders it
    chosen: str = ""            # how the judged pairs were chosen, where that gives no known probabilities

    @property
    def intervals(self) -> bool:
        return self.kind != UNKNOWN_PROBABILITIES

    def to_dict(self) -> dict:
        return {"kind": self.kind, "strategy": self.strategy, "intervals": self.intervals, "reason": self.reason,
                "next_time": self.next_time}


def counts_in_words(counts: dict) -> str:
    """'resolved pairs: 53 of 178 pooled; judged pairs (at least one label): 60; ...' from
    pool_pair_counts, in PAIR_COUNT_WORDS' words."""
    pooled = counts.get("pooled", 0)
    parts = [f"{counts.get('resolved', 0)} of {pooled} pooled pairs resolved ({PAIR_COUNT_WORDS['resolved']})",
             f"{counts.get('judged', 0)} judged ({PAIR_COUNT_WORDS['judged']})",
             f"{counts.get('unresolved', 0)} unresolved ({PAIR_COUNT_WORDS['unresolved']})"]
    return "; ".join(parts)


def _random_order(pool: Pool) -> bool:
    """pool_order with nothing that reorders or stops it by ranks or answers: the pairs judged so far
    are the start of one seeded random order over the whole pool (sample_estimate's premise)."""
    return (pool.judging_strategy == "pool_order" and not pool.judging_warmup_depth
            and pool.judging_query_budget is None and pool.judging_stop_misses_in_a_row is None
            and pool.judging_stop_remaining_below is None)


def design_of_pool(pool: Pool) -> Design:
    """Known inclusion probabilities or not, and why (see the module)."""
    counts = pool_pair_counts(pools=pool)
    random_order = _random_order(pool)
    if SampledPoolDesign.objects.filter(pool=pool).exists():
        return Design(PROBABILITY_SAMPLE, "sampled pool",
                      "a sampled pool: each pooled document was drawn in its stratum with a known inclusion "
                      "probability, and the judged ones are weighted by it", counts)
    strategy = pool.judging_strategy
    if strategy in DESIGN_STRATEGIES:
        return Design(PROBABILITY_SAMPLE, strategy,
                      f"the '{strategy}' strategy judges a Poisson sample: every pair's inclusion probability was "
                      "stored when the design was drawn (a stopped query's pairs get those of the part judged)",
                      counts)
    if counts["unresolved"] == 0:
        return Design(CENSUS, strategy, f"census: every one of the {counts['pooled']} pooled pairs has a verdict, so "
                                        "nothing is estimated and the values are exact", counts, random_order=random_order)
    how = _HOW_CHOSEN.get(strategy, f"pairs were chosen by the '{strategy}' strategy")
    if strategy == "pool_order" and not random_order:
        how = ("pairs were judged in the pool's order with a warm-up or stopping rules that read ranks or answers, "
               "so which pairs got judged was not drawn at random")
    reason = (f"{how}; their inclusion probabilities are unknown, so no sampling interval is valid "
              f"({counts['unresolved']} of {counts['pooled']} pooled pairs have no verdict). Given instead: each "
              "run's measures with every pair without a verdict counted not relevant, and counted relevant")
    return Design(UNKNOWN_PROBABILITIES, strategy, reason, counts, NEXT_TIME, random_order, how)


__all__ = ["Design", "design_of_pool", "counts_in_words", "NEXT_TIME", "PROBABILITY_SAMPLE", "CENSUS",
           "UNKNOWN_PROBABILITIES"]
