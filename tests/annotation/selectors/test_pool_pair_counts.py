"""pool_pair_counts (selectors/pools.py): the one count of pooled, judged, resolved, unresolved and
original-positive pairs that the release, its datasheet, the pool page and the reports quote, on
hand-worked pools (tests/annotation/services/reports/test_report_metrics.py's example and a fresh pool)."""
from __future__ import annotations

import pytest

from annotation.models import PooledPair
from annotation.selectors.pools import PAIR_COUNT_WORDS, pool_pair_counts, pool_progress
from annotation.services.pools.build import pool_create
from tests.annotation.services.reports.test_report_metrics import example_pool, pair_of

pytestmark = pytest.mark.django_db

#: The example pool by hand: 17 pooled pairs; 16 resolved from one rater's vote each (so judged);
#: the disagreement q2 v4 has no counted vote and no verdict; the originals q1 v1, q2 v2, q3 v3
#: are pooled (q4 has none).
EXAMPLE = {"pooled": 17, "judged": 16, "resolved": 16, "unresolved": 1, "original_positives": 3}


def fresh_pool(example):
    """The example's runs at depth 1: q1 {v2 (A), v1 (B)}, q2 {v2 (A), v1 (B)}, q3 {v4 (A), v3 (B)},
    q4 {v5 (A)} = 7 pairs, all open, originals q1 v1, q2 v2, q3 v3."""
    return pool_create(dataset=example.dataset, name="fresh", runs=list(example.runs.all()), depth=1, redundancy=0.0)


def test_the_example_pool_counted_by_hand(tmp_path):
    pool = example_pool(tmp_path)
    assert pool_pair_counts(pools=pool) == EXAMPLE
    assert list(pool_pair_counts(pools=[pool])) == list(PAIR_COUNT_WORDS)  # the words' order


def test_gold_pairs_are_not_pooled_and_a_verdict_without_labels_is_resolved_not_judged(tmp_path):
    example = example_pool(tmp_path)
    pool = fresh_pool(example)
    assert pool_pair_counts(pools=pool) == {"pooled": 7, "judged": 0, "resolved": 0, "unresolved": 7,
                                            "original_positives": 3}
    # One label of the two a pair needs: judged, still open, so unresolved.
    PooledPair.objects.filter(pk=pair_of(pool, "q1", "v2").pk).update(vote_count=1, required_labels=2)
    # An imported verdict (incremental pooling): resolved without a label.
    PooledPair.objects.filter(pk=pair_of(pool, "q4", "v5").pk).update(state="resolved", resolved_label="not_relevant")
    # A gold pair with a vote: not a pooled pair.
    gold = pair_of(pool, "q3", "v4")
    PooledPair.objects.create(pool=pool, caption=gold.caption, clip=gold.clip, role="gold", known_answer="relevant",
                              vote_count=1, state="resolved", resolved_label="relevant")
    assert pool_pair_counts(pools=pool) == {"pooled": 7, "judged": 1, "resolved": 1, "unresolved": 6,
                                            "original_positives": 3}
    # Several pools: the sums (a pair pooled by both counts once in each).
    assert pool_pair_counts(pools=[example, pool]) == {"pooled": 24, "judged": 17, "resolved": 17, "unresolved": 7,
                                                       "original_positives": 6}
    # The pool API's and page's progress carries the same counts.
    assert pool_progress(pool=pool)["pair_counts"] == pool_pair_counts(pools=pool)


def test_every_unresolved_state_counts_as_unresolved(tmp_path):
    pool = fresh_pool(example_pool(tmp_path))
    pairs = list(PooledPair.objects.filter(pool=pool, role="pool").order_by("pk"))
    for pair, state in zip(pairs, ["adjudication", "set_aside", "disagreement", "stopped", "not_sampled", "resolved"]):
        PooledPair.objects.filter(pk=pair.pk).update(state=state)
    counts = pool_pair_counts(pools=pool)
    assert (counts["resolved"], counts["unresolved"]) == (1, 6)
    assert pool_pair_counts(pools=[]) == {key: 0 for key in PAIR_COUNT_WORDS}
