"""Aggregation of a pool's human votes beyond majority (Dawid–Skene, MACE): the labels each model
gives the pool's pairs, and where they differ from strict majority (the agreement report's section).

Only counted human votes (selectors.reports.pool_votes: `Label` rows) go in; machine judges'
verdicts are stored elsewhere and never do. The models themselves are in
annotation/analysis/aggregation.py.

Which pairs a model decides: those whose voting is over, i.e. decided by votes (state resolved
with at least one vote and not by an admin, or a disagreement). An admin's decision and an
imported verdict stay as they are, and an open pair stays open: a model only replaces majority as
the rule that turns finished votes into a label.
"""
from __future__ import annotations

import numpy as np

from annotation.analysis.aggregation import MODELS, Aggregation, aggregate, compare_with_majority
from annotation.analysis.agreement import UNRESOLVED
from annotation.models import Pool, PooledPair
from annotation.selectors.reports import PoolLabels, PoolPairs, pool_pairs, pool_votes, pseudonyms

AGGREGATION_MODELS = MODELS
COMPARED_MODELS = ("dawid_skene", "mace")
DIFFERENCES_LISTED = 1000
_WORD = {1: PooledPair.Answer.RELEVANT, 0: PooledPair.Answer.NOT_RELEVANT}


class AggregationError(ValueError):
    """An aggregation request that cannot be carried out; the message says why."""


def aggregation_model_check(model: str) -> str:
    if model not in AGGREGATION_MODELS:
        raise AggregationError(f"unknown aggregation '{model}'; use one of {', '.join(AGGREGATION_MODELS)}")
    return model


def _decided_by_votes(pairs: PoolPairs) -> np.ndarray:
    resolved_by_votes = (pairs.state == PooledPair.State.RESOLVED) & (pairs.votes > 0) & ~pairs.by_admin
    return resolved_by_votes | ((pairs.state == PooledPair.State.DISAGREEMENT) & (pairs.votes > 0))


def pool_aggregation(*, pool: Pool, model: str, seed: int = 0) -> Aggregation:
    """The model's labels of the pool's pairs that have votes; units are pair ids. All votes are
    used (a rater's reliability is learnt from every pair they labelled)."""
    aggregation_model_check(model)
    votes = pool_votes(pool=pool)
    return aggregate(votes.pair, votes.rater, votes.value, model=model, n_values=2, seed=seed)


def pool_aggregated_labels(*, pool: Pool, model: str, seed: int = 0) -> dict[int, str | None]:
    """pair id -> 'relevant' / 'not_relevant' (None: no label) for the pairs decided by votes,
    under `model`. Majority gives exactly the pairs' stored resolution."""
    pairs = pool_pairs(pool=pool)
    decided = _decided_by_votes(pairs)
    if model == "majority":
        return {int(p): (_WORD[int(r)] if r >= 0 else None) for p, r in zip(pairs.id[decided], pairs.resolved[decided])}
    labels = pool_aggregation(pool=pool, model=model, seed=seed).label_of()
    out: dict[int, str | None] = {}
    for pair_id in pairs.id[decided]:
        code = labels.get(int(pair_id), UNRESOLVED)
        out[int(pair_id)] = _WORD[code] if code >= 0 else None
    return out


def aggregation_section(*, pool: Pool, seed: int = 0, models: tuple[str, ...] = COMPARED_MODELS,
                        limit: int = DIFFERENCES_LISTED, pairs: PoolPairs | None = None,
                        votes: PoolLabels | None = None) -> dict:
    """The agreement report's section: each model against strict majority over the same votes,
    counts, the pairs where they differ, and per-rater confusion matrices (pseudonyms only).
    `pairs` and `votes`: the pool's pool_pairs and pool_votes when the caller has read them
    already (the agreement report: not read and held twice)."""
    votes = pool_votes(pool=pool) if votes is None else votes
    majority = aggregate(votes.pair, votes.rater, votes.value, model="majority", n_values=2)
    pairs = pool_pairs(pool=pool) if pairs is None else pairs
    names = pseudonyms(user_ids=np.unique(votes.rater).tolist())
    index: list[np.ndarray] = []  # the votes in pair order, made when a first pair is listed

    def votes_of(unit: int) -> list[int]:
        # A listed pair's votes, looked up for the few pairs listed rather than held as Python lists
        # for every pair of the pool (a release of FIRE's size: 555,000 lists); the index is made
        # after the models are fitted, so it is not held while they are (issue 40).
        if not index:
            by_pair = np.argsort(votes.pair, kind="stable")  # votes.pair is in label-id order: kept
            index.extend([by_pair, votes.pair[by_pair]])
        by_pair, sorted_pairs = index
        low, high = np.searchsorted(sorted_pairs, [unit, unit + 1])
        return votes.value[by_pair[low:high]].tolist()

    word = {1: "relevant", 0: "not_relevant", UNRESOLVED: None}
    section: dict = {"labels": "counted votes (relevant 1, not relevant 0) of the pool's pairs; human raters only",
                     "models": {}}
    for model in models:
        result = aggregate(votes.pair, votes.rater, votes.value, model=model, n_values=2, seed=seed)
        cmp = compare_with_majority(majority, result)
        listed = []
        for unit, m_label, o_label in zip(cmp.different_units[:limit], cmp.majority_labels, cmp.model_labels):
            i = int(np.searchsorted(result.units, unit))  # result.units are sorted
            row = pairs.index_of(unit)
            listed.append({"pair_id": int(unit), "caption_id": int(pairs.caption[row]), "clip_id": int(pairs.clip[row]),
                           "votes": votes_of(int(unit)), "majority": word[int(m_label)],
                           "model": word[int(o_label)], "model_confidence": float(result.confidence[i])})
        section["models"][model] = {
            "note": result.note,
            "pairs": cmp.n_units, "same_as_majority": cmp.n_same, "different": cmp.n_different,
            "majority_ties": cmp.n_majority_unresolved, "ties_decided_by_model": cmp.n_decided_by_model_only,
            "relevant": int((result.labels == 1).sum()), "not_relevant": int((result.labels == 0).sum()),
            "differences": listed, "differences_listed": len(listed),
            "rater_confusion": [{"rater": names.get(r), "counts": m, "error_model": result.rater_error_model.get(r)}
                                for r, m in sorted(result.rater_confusion.items())],
        }
    section["confusion_note"] = ("counts[model label][label given], rows and columns 0 not relevant, 1 relevant; "
                                 "error_model (Dawid-Skene only) is the fitted P(given | true), rows true")
    return section
