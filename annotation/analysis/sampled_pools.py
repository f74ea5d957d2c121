"""Stratified sampled pools for deep runs (TRECVID practice, methodology section 3).

When runs are up to 1,000 deep, judging the whole depth-1000 pool is too expensive. TRECVID judges
the top ranks fully and a random sample of deeper ranks, then estimates average precision from the
sample (inferred AP, see :mod:`annotation.analysis.infap`). This module builds such a pool.

Definitions
-----------
* ``strata`` is a list ``[(lo, hi, rate), ...]`` of 1-based inclusive rank ranges, contiguous from
  rank 1 (e.g. ``[(1, 10, 1.0), (11, 100, 0.2), (101, 1000, 0.05)]``); the pool depth is the last
  ``hi``. Ranks deeper than that are not pooled.
* The pool of a query is the union over runs of their top-``depth`` documents (a document is judged
  once whichever runs proposed it; provenance ``(run, rank)`` is kept).
* A pooled document's stratum is the one containing its **best (smallest) rank over all runs**.
  This is TRECVID/NIST practice (the stratum column of sample_eval qrels): a document any run put in
  its top 10 is judged for sure, so every run's top ranks are fully judged, which is where AP is
  most sensitive. It also makes each document belong to exactly one stratum, which the
  stratified estimator requires.
* Within each (query, stratum) with ``N`` pooled documents, a simple random sample without
  replacement of ``n`` documents is judged, with ``n = ceil(rate * N)`` by default
  (``size_rule="round"``: round half up). ``ceil`` is the default because it guarantees at least
  one judged document in every non-empty stratum with a positive rate; without one, the stratum's
  precision can only be guessed by the estimator's smoothing. A tiny tolerance keeps
  ``0.2 * 100 = 20.000000000000004`` from becoming 21.
* Inclusion probability of every document of the stratum = ``n / N`` (exact for fixed-size simple
  random sampling); that realized fraction, not the nominal rate, is what the estimators use.

Reproducibility: the sample of a (query, stratum) is drawn by a NumPy Generator seeded with
``(seed, stratum index, SHA-256 of the query id)`` from the stratum's documents in a canonical order
(best rank, then doc id). So the same inputs and seed give the same sample whatever order runs and
queries arrive in, and adding a query does not reshuffle the samples of the others.

Documents already judged (imported judgments)
---------------------------------------------
A pool may be built over documents whose judgment is already known, e.g. a benchmark's published
qrels covering the runs' top ranks (``judged`` in :func:`build_sampled_pool`). Such a document is
not drawn and not queued: it is **judged with certainty**, inclusion probability ``pi = 1``. Each
stratum ``s`` of a query is split, before anything is drawn, into a *census* part ``C_s`` (the
documents already judged) and an *open* part ``U_s`` (the rest); the sample is drawn from ``U_s``
alone, ``n_s = ceil(rate * |U_s|)`` documents (the rate applies to what still needs judging), each
with ``pi = n_s / |U_s|``. Because the split is fixed before the draw, this is an ordinary
stratified design with one more stratum per stratum, and it stays valid whatever decided which
documents were judged before (even a file listing only relevant ones): the open part is still a
simple random sample of what is not known.

The estimators must then weight each judged document by its own inclusion probability
(Horvitz-Thompson), not by its rank stratum's share. With ``J`` the judged documents of a query and
``pi_d`` as above, the estimated number of relevant documents in the pool is

    R_hat = sum over relevant d in J of 1 / pi_d  =  |relevant in C|  +  sum_s r_s * |U_s| / n_s

and xinfAP (:mod:`annotation.analysis.infap`) is

    xinfAP = (1 / R_hat) * sum over relevant d in J retrieved at rank k of  P_hat@k / pi_d,
    P_hat@k = (1 + sum over cells c of D_c * (q_c + eps) / (m_c + 3 eps)) / k,

where the cells ``c`` are the strata's census and open parts (``D_c`` pooled documents of cell
``c`` above rank ``k``, ``m_c`` judged, ``q_c`` judged relevant). A census cell has
``m_c = D_c``: its precision is exact, not estimated. This is sample_eval's formula over the
finer strata, so :func:`cell_label` gives every document the stratum label that xinfAP groups by:
the rank stratum, or ``"<stratum>:certain"`` for a document with ``pi = 1`` in a stratum sampled
at a rate below 1. (An open document may also have ``pi = 1``, when ``n_s = |U_s|``; sharing the
census cell changes nothing, as both are fully judged.) Without judged documents every label is
the plain stratum and the estimates are exactly those of a pool built without them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

__all__ = [
    "Stratum",
    "PooledDocument",
    "QueryPool",
    "SampledPool",
    "validate_strata",
    "assign_strata",
    "sample_sizes",
    "sample_size",
    "draw_sample",
    "build_sampled_pool",
    "cell_label",
]

Stratum = tuple[int, int, float]
SizeRule = Literal["ceil", "round"]

# rate * N is computed in binary floating point; without this, 0.2 * 100 rounds up to 21 under ceil.
_SIZE_TOLERANCE = 1e-9


def validate_strata(strata: Sequence[Stratum]) -> tuple[Stratum, ...]:
    """Check strata are contiguous from rank 1 with rates in [0, 1]; return them as a tuple."""
    out: list[Stratum] = []
    expected_lo = 1
    for lo, hi, rate in strata:
        if int(lo) != lo or int(hi) != hi:
            raise ValueError(f"stratum bounds must be integers: {(lo, hi, rate)}")
        if lo != expected_lo:
            raise ValueError(f"strata must be contiguous from rank 1: stratum {(lo, hi, rate)} "
                             f"starts at {lo}, expected {expected_lo}")
        if hi < lo:
            raise ValueError(f"stratum {(lo, hi, rate)} has hi < lo")
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"stratum {(lo, hi, rate)} has a rate outside [0, 1]")
        out.append((int(lo), int(hi), float(rate)))
        expected_lo = int(hi) + 1
    if not out:
        raise ValueError("at least one stratum is needed")
    return tuple(out)


@dataclass(frozen=True)
class QueryPool:
    """The depth-``depth`` pool of one query before sampling.

    Arrays are aligned with ``docs``, which is in canonical order (best rank, then doc id).
    ``provenance[i]`` lists ``(run, rank)`` of every run that proposed ``docs[i]``, sorted by run.
    """

    query: str
    docs: tuple[str, ...]
    best_rank: np.ndarray  # int64, shape (n_docs,)
    stratum: np.ndarray  # int64 stratum index, shape (n_docs,)
    provenance: tuple[tuple[tuple[str, int], ...], ...]


def assign_strata(
    runs: Mapping[str, Mapping[str, Sequence[str]]],
    strata: Sequence[Stratum],
) -> dict[str, QueryPool]:
    """Pool ``runs[run][query] = [doc ids in rank order]`` to the strata depth; stratum = best rank.

    Returns ``{query: QueryPool}`` for every query any run answered. A doc id repeated within one
    ranked list is an error (its rank would be ambiguous).
    """
    strata = validate_strata(strata)
    depth = strata[-1][1]
    his = np.array([hi for _, hi, _ in strata])
    prov: dict[str, dict[str, list[tuple[str, int]]]] = {}
    for run in sorted(runs):
        for query, ranked in runs[run].items():
            top = list(ranked[:depth])
            if len(set(top)) != len(top):
                raise ValueError(f"run {run!r}, query {query!r}: a doc id appears twice")
            per_doc = prov.setdefault(query, {})
            for i, doc in enumerate(top):
                per_doc.setdefault(doc, []).append((run, i + 1))
    pools: dict[str, QueryPool] = {}
    for query in sorted(prov):
        per_doc = prov[query]
        order = sorted(per_doc, key=lambda d: (min(r for _, r in per_doc[d]), d))
        best = np.array([min(r for _, r in per_doc[d]) for d in order], dtype=np.int64)
        pools[query] = QueryPool(
            query=query,
            docs=tuple(order),
            best_rank=best,
            stratum=np.searchsorted(his, best, side="left").astype(np.int64),
            provenance=tuple(tuple(per_doc[d]) for d in order),
        )
    return pools


def sample_sizes(sizes: np.ndarray, rates: np.ndarray, size_rule: SizeRule = "ceil") -> np.ndarray:
    """Number of documents to judge per stratum: ``ceil(rate*N)`` or ``round-half-up(rate*N)``."""
    x = np.asarray(rates, dtype=float) * np.asarray(sizes, dtype=float)
    if size_rule == "ceil":
        n = np.ceil(x - _SIZE_TOLERANCE)
    elif size_rule == "round":
        n = np.floor(x + 0.5 + _SIZE_TOLERANCE)
    else:
        raise ValueError(f"size_rule must be 'ceil' or 'round', got {size_rule!r}")
    return np.clip(n, 0, sizes).astype(np.int64)


def draw_sample(
    stratum: np.ndarray,
    rates: np.ndarray,
    rng: np.random.Generator | Sequence[np.random.Generator],
    *,
    size_rule: SizeRule = "ceil",
    census: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Sample documents of one query: returns ``(sampled mask, inclusion probability)`` per doc.

    ``stratum`` holds each pooled document's stratum index (shape ``(n_docs,)``), ``rates`` one rate
    per stratum. ``rng`` is one Generator for all strata (fast path for simulations) or one per
    stratum (what :func:`build_sampled_pool` passes, for order-independent reproducibility).
    ``census`` (bool per doc) marks documents already judged: they count as sampled with
    probability 1 and the draw covers the others only (module docstring).
    """
    stratum = np.asarray(stratum)
    n_strata = len(rates)
    known = np.zeros(stratum.shape[0], dtype=bool) if census is None else np.asarray(census, dtype=bool)
    sizes = np.bincount(stratum[~known], minlength=n_strata)
    n = sample_sizes(sizes, np.asarray(rates), size_rule)
    sampled = known.copy()
    inclusion = known.astype(float)
    for s in range(n_strata):
        if sizes[s] == 0:
            continue
        members = np.flatnonzero((stratum == s) & ~known)
        g = rng if isinstance(rng, np.random.Generator) else rng[s]
        if n[s] == sizes[s]:
            sampled[members] = True  # full judgment: no randomness needed
        elif n[s] > 0:
            sampled[g.choice(members, size=int(n[s]), replace=False)] = True
        inclusion[members] = n[s] / sizes[s]
    return sampled, inclusion


def _query_rngs(seed: int, query: str, n_strata: int) -> list[np.random.Generator]:
    # Seed from the query's id, not its position, so samples do not depend on which other queries
    # are in the pool or in which order they were read.
    digest = int.from_bytes(hashlib.sha256(query.encode("utf-8")).digest()[:8], "big")
    return [np.random.default_rng([seed, s, digest]) for s in range(n_strata)]


@dataclass(frozen=True, slots=True)
class PooledDocument:
    """One pooled pair as the database stores it."""

    query: str
    doc: str
    stratum: int  # index into ``SampledPool.strata``
    best_rank: int
    sampled: bool  # True: judged (queued for raters, or already judged when ``census``)
    inclusion_probability: float
    proposed_by: tuple[tuple[str, int], ...]  # (run, rank), sorted by run
    census: bool = False  # already judged before the draw: not queued, inclusion probability 1


@dataclass
class SampledPool:
    """A pool with its sample; ``sampled[q]``, ``inclusion[q]`` align with ``queries[q].docs``."""

    strata: tuple[Stratum, ...]
    seed: int
    size_rule: SizeRule
    queries: dict[str, QueryPool]
    sampled: dict[str, np.ndarray] = field(default_factory=dict)
    inclusion: dict[str, np.ndarray] = field(default_factory=dict)
    census: dict[str, np.ndarray] = field(default_factory=dict)  # already judged; empty: none

    def _census(self, q: str) -> np.ndarray:
        known = self.census.get(q)
        return np.zeros(len(self.queries[q].docs), dtype=bool) if known is None else known

    @property
    def full_pool_size(self) -> int:
        """Judgments needed to judge the whole pool at full depth."""
        return sum(len(p.docs) for p in self.queries.values())

    @property
    def judged_count(self) -> int:
        """Judgments this sampled pool asks for (documents already judged are not asked again)."""
        return int(sum(int((m & ~self._census(q)).sum()) for q, m in self.sampled.items()))

    @property
    def census_count(self) -> int:
        """Pooled documents that were already judged, taken with inclusion probability 1."""
        return int(sum(int(self._census(q).sum()) for q in self.queries))

    @property
    def judgments_saved(self) -> int:
        return self.full_pool_size - self.judged_count

    @property
    def saved_fraction(self) -> float:
        return self.judgments_saved / self.full_pool_size if self.full_pool_size else 0.0

    def stratum_summary(self) -> list[dict[str, float | int]]:
        """Per stratum, summed over queries: bounds, nominal rate, pooled counts, documents already
        judged (census), documents drawn to be judged, and the drawn share of the rest."""
        out = []
        for s, (lo, hi, rate) in enumerate(self.strata):
            pooled = sum(int((p.stratum == s).sum()) for p in self.queries.values())
            census = sum(int((self._census(q) & (p.stratum == s)).sum()) for q, p in self.queries.items())
            judged = sum(int((self.sampled[q] & ~self._census(q) & (p.stratum == s)).sum())
                         for q, p in self.queries.items())
            open_ = pooled - census
            out.append({"stratum": s, "lo": lo, "hi": hi, "rate": rate, "pooled": pooled, "census": census,
                        "judged": judged, "realized_rate": judged / open_ if open_ else 0.0})
        return out

    def documents(self) -> Iterator[PooledDocument]:
        """Every pooled document, query by query, in canonical order."""
        for q, p in self.queries.items():
            sampled, incl, known = self.sampled[q], self.inclusion[q], self._census(q)
            for i, doc in enumerate(p.docs):
                yield PooledDocument(q, doc, int(p.stratum[i]), int(p.best_rank[i]),
                                     bool(sampled[i]), float(incl[i]), p.provenance[i], bool(known[i]))

    def to_judge(self) -> dict[str, list[str]]:
        """Docs to send to raters, per query (documents already judged are not sent)."""
        return {q: [d for d, m in zip(p.docs, self.sampled[q] & ~self._census(q)) if m]
                for q, p in self.queries.items()}

    def _judgment(self, judgments: Mapping[str, Mapping[str, int]], q: str, doc: str,
                  missing: Literal["error", "unjudged"]) -> int:
        rel = judgments.get(q, {}).get(doc)
        if rel is None:
            if missing == "error":
                raise KeyError(f"sampled document {doc!r} of query {q!r} has no judgment")
            return -1
        return int(rel)

    def trec_qrels(
        self,
        judgments: Mapping[str, Mapping[str, int]],
        *,
        missing: Literal["error", "unjudged"] = "error",
    ) -> dict[str, dict[str, int]]:
        """Qrels for trec_eval's infAP: sampled docs get their judgment, the rest -1.

        ``judgments[q][doc]`` = relevance (>= 1 relevant, 0 not) of sampled docs, those already
        judged (census) included. trec_eval's infAP assumes one uniform sample, which a pool
        with census documents is not: score such a pool with :meth:`stratified_qrels`. With
        ``missing="unjudged"`` a sampled doc without a judgment yet is written as -1: the
        estimators then see a smaller random sample, which stays unbiased if labels arrive in an
        order unrelated to relevance.
        """
        out: dict[str, dict[str, int]] = {}
        for q, p in self.queries.items():
            sampled = self.sampled[q]
            out[q] = {d: (self._judgment(judgments, q, d, missing) if sampled[i] else -1)
                      for i, d in enumerate(p.docs)}
        return out

    def stratified_qrels(
        self,
        judgments: Mapping[str, Mapping[str, int]],
        *,
        missing: Literal["error", "unjudged"] = "error",
    ) -> dict[str, dict[str, tuple[int, int]]]:
        """Qrels for xinfAP (sample_eval's 5-column form): ``{q: {doc: (cell, relevance)}}``, the
        cell being :func:`cell_label` (the plain stratum index unless documents have ``pi = 1`` in
        a stratum sampled at a rate below 1)."""
        flat = self.trec_qrels(judgments, missing=missing)
        rates = [rate for _, _, rate in self.strata]
        return {q: {d: (cell_label(int(p.stratum[i]), rates[int(p.stratum[i])], float(self.inclusion[q][i])),
                        flat[q][d]) for i, d in enumerate(p.docs)}
                for q, p in self.queries.items()}


def cell_label(stratum: int, rate: float, inclusion_probability: float) -> int | str:
    """The stratum label xinfAP groups a document by (module docstring): documents judged for
    certain (``pi = 1``) in a stratum sampled below rate 1 form a cell of their own."""
    if inclusion_probability >= 1.0 and rate < 1.0:
        return f"{stratum}:certain"
    return stratum


def build_sampled_pool(
    runs: Mapping[str, Mapping[str, Sequence[str]]],
    strata: Sequence[Stratum],
    *,
    seed: int,
    size_rule: SizeRule = "ceil",
    judged: Mapping[str, Collection[str]] | None = None,
) -> SampledPool:
    """Pool ``runs[run][query] = [doc ids in rank order]`` and sample it per stratum.

    ``judged[query]``: documents whose judgment is already known (imported); pooled ones are taken
    with inclusion probability 1 and the rest is sampled (module docstring). Documents of
    ``judged`` that no run pooled are ignored. See the module docstring for the stratum of a
    document, the sample size and the seeding.
    """
    strata = validate_strata(strata)
    rates = np.array([r for _, _, r in strata])
    pools = assign_strata(runs, strata)
    pool = SampledPool(strata=strata, seed=int(seed), size_rule=size_rule, queries=pools)
    for q, p in pools.items():
        known = judged.get(q, ()) if judged else ()
        census = np.fromiter((d in known for d in p.docs), dtype=bool, count=len(p.docs)) if known else None
        pool.sampled[q], pool.inclusion[q] = draw_sample(
            p.stratum, rates, _query_rngs(int(seed), q, len(strata)), size_rule=size_rule, census=census)
        if census is not None:
            pool.census[q] = census
    return pool


def sample_size(size: int, rate: float, size_rule: SizeRule = "ceil") -> int:
    """Scalar form of :func:`sample_sizes`."""
    return int(sample_sizes(np.array([size]), np.array([rate]), size_rule)[0]) if size else 0

