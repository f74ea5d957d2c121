"""Sampled pools over documents already judged (imported judgments): those are a census with
inclusion probability 1, the sample is drawn from the rest, and the estimators weight each judged
document by its own inclusion probability (annotation/analysis/sampled_pools.py docstring)."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.analysis.infap import xinfap_query
from annotation.analysis.sampled_pools import build_sampled_pool, cell_label

STRATA = [(1, 2, 1.0), (3, 10, 0.5)]
RUN = {"A": {"q": [f"d{i}" for i in range(1, 11)]}}  # d1..d10 at ranks 1..10


def test_judged_documents_are_a_census_and_the_rest_is_sampled_at_the_rate():
    # Stratum 1 (ranks 3-10) holds d3..d10; d3, d4, d5 are already judged, so the open part is
    # d6..d10 (5 docs): ceil(0.5 * 5) = 3 drawn, pi = 3/5. Stratum 0: d1 judged, d2 drawn (rate 1).
    pool = build_sampled_pool(RUN, STRATA, seed=0, judged={"q": {"d1", "d3", "d4", "d5", "elsewhere"}})
    docs = {d.doc: d for d in pool.documents()}
    for doc in ("d1", "d3", "d4", "d5"):
        assert (docs[doc].census, docs[doc].sampled, docs[doc].inclusion_probability) == (True, True, 1.0)
    assert docs["d2"].census is False and docs["d2"].sampled and docs["d2"].inclusion_probability == 1.0
    open_part = [docs[f"d{i}"] for i in range(6, 11)]
    assert sum(d.sampled for d in open_part) == 3 and {d.inclusion_probability for d in open_part} == {0.6}
    # Raters are asked for d2 and the 3 drawn; the census is never sent again.
    assert set(pool.to_judge()["q"]) == {"d2"} | {d.doc for d in open_part if d.sampled}
    assert (pool.full_pool_size, pool.census_count, pool.judged_count, pool.judgments_saved) == (10, 4, 4, 6)
    summary = pool.stratum_summary()
    assert [(s["pooled"], s["census"], s["judged"]) for s in summary] == [(2, 1, 1), (8, 3, 3)]
    assert summary[1]["realized_rate"] == pytest.approx(3 / 5)


def test_without_judged_documents_nothing_changes():
    plain = build_sampled_pool(RUN, STRATA, seed=4)
    for judged in (None, {}, {"q": {"not pooled"}}, {"other query": {"d3"}}):
        again = build_sampled_pool(RUN, STRATA, seed=4, judged=judged)
        assert again.to_judge() == plain.to_judge() and again.census_count == 0
        assert np.array_equal(again.inclusion["q"], plain.inclusion["q"])


def test_cells_split_documents_judged_for_certain_from_the_drawn_ones():
    pool = build_sampled_pool(RUN, STRATA, seed=0, judged={"q": {"d1", "d3"}})
    judgments = {"q": {d: 0 for d in pool.to_judge()["q"]} | {"d1": 1, "d3": 1}}
    cells = {d: cell for d, (cell, _) in pool.stratified_qrels(judgments)["q"].items()}
    assert cells["d1"] == cells["d2"] == 0  # stratum 0 is judged in full anyway: one cell
    assert cells["d3"] == "1:certain" and {cells[f"d{i}"] for i in range(4, 11)} == {1}
    assert (cell_label(1, 0.5, 1.0), cell_label(1, 0.5, 0.5), cell_label(0, 1.0, 1.0)) == ("1:certain", 1, 0)


def test_r_hat_is_unbiased_only_with_each_documents_own_inclusion_probability():
    """One stratum of 20 docs per query, sampled at rate 0.2. A file listed only relevant docs: 10
    relevant are imported (census); of the 10 others, 2 are relevant; n = ceil(0.2 x 10) = 2 drawn,
    pi = 1/5. True R = 12. Horvitz-Thompson: R_hat = 10 + 5 r, r ~ hypergeometric(10, 2, 2) with
    mean 2 x 2/10 = 0.4, so E[R_hat] = 12 (sd 2.67; over 2,000 queries the mean is within 0.06).
    Treating the stratum as one (pi = 12 judged / 20 = 0.6 for all) gives E = (10 + 0.4) / 0.6,
    about 17.3: the census inflates every drawn doc's weight, and the test would catch it."""
    queries = [f"q{i}" for i in range(2000)]
    docs = [f"d{i}" for i in range(20)]
    relevant = set(docs[:12])
    runs = {"A": {q: docs for q in queries}}
    pool = build_sampled_pool(runs, [(1, 20, 0.2)], seed=11, judged={q: set(docs[:10]) for q in queries})
    judgments = {q: {d: int(d in relevant) for d in docs[:10] + pool.to_judge()[q]} for q in queries}
    qrels = pool.stratified_qrels(judgments)
    r_hat = np.array([xinfap_query(docs, qrels[q])[1] for q in queries])
    assert r_hat.mean() == pytest.approx(12, abs=0.25)
    one_stratum = {q: {d: (0, rel) for d, (_, rel) in judged.items()} for q, judged in qrels.items()}
    naive = np.array([xinfap_query(docs, one_stratum[q])[1] for q in queries])
    assert naive.mean() == pytest.approx((10 + 0.4) / 0.6, abs=0.1)
