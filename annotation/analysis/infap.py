"""Inferred average precision from sampled judgments (TRECVID's official AVS measure).

Two estimators, because they answer different sampling designs:

(a) :func:`infap_trec_eval` -- trec_eval's ``infAP`` (Yilmaz & Aslam, CIKM 2006) through
    ir_measures. It assumes **one uniform random sample** of the pool: qrels relevance ``-1`` marks
    "pooled but not judged", and a document absent from the qrels is outside the pool. For a
    relevant judged document at rank ``k`` (1-based) it estimates
    ``P@k = 1/k + ((k-1)/k) * (pooled_above/(k-1)) * (rel_above + eps)/(judged_above + 2 eps)``
    (``eps = 1e-5``, ``P@1 = 1``), where the ``_above`` counts cover ranks ``1..k-1`` and unpooled
    documents above count as non-relevant; infAP = sum of those estimates / number of judged
    relevant documents in the qrels. On a stratified pool it is biased (deep strata are sampled
    less, so it mixes their precision with the fully judged top); use (b) there.

(b) :func:`xinfap` -- the stratified estimator xinfAP (Yilmaz, Kanoulas & Aslam, SIGIR 2008, "A
    simple and efficient sampling method for estimating AP and NDCG"), as NIST's ``sample_eval.pl``
    computes it, written in NumPy. Per query, with strata ``s`` of the pool, ``N_s`` pooled docs,
    ``n_s`` judged, ``r_s`` judged relevant, inclusion probability ``pi_s = n_s / N_s``:

    * ``R_hat = sum_s r_s / pi_s`` (over strata with ``n_s > 0``): estimated relevant docs in pool.
    * For each judged relevant doc ``d`` of the run at rank ``k`` (1-based), with counts over the
      run's ranks ``1..k-1``: ``D_s`` pooled docs of stratum ``s``, ``m_s`` of them judged, ``q_s``
      judged relevant,
      ``P_hat@k = (1 + sum_s D_s * (q_s + eps) / (m_s + 3 eps)) / k`` with ``eps = 1e-5``.
      Unpooled docs above count in ``k`` only (non-relevant); ``d`` itself is the ``1``.
      The smoothing is sample_eval's: it only matters when ``m_s`` is 0 (a stratum whose docs above
      ``d`` were all left unjudged), where it gives the stratum a precision of 1/3 instead of 0/0;
      with ``m_s > 0`` it shifts the ratio by under ``1e-5 / m_s``.
    * ``xinfAP = (1 / R_hat) * sum_d P_hat@rank(d) / pi_{s(d)}``; 0 when ``R_hat = 0``.
      (sample_eval writes it as ``sum_s (R_hat_s / R_hat) * mean over the r_s judged relevant docs
      of stratum s of P_hat``, with unretrieved ones contributing 0 -- the same number.)
    * Optional ``max_result_size`` (off by default): NIST's 2012 change to sample_eval multiplies AP
      by ``R_hat / max_result_size`` when ``R_hat`` exceeds it, because a run of that size cannot
      retrieve more. Off, the estimator with every stratum fully judged and ``epsilon=0`` is exactly
      textbook AP (divide by R, the number of relevant docs in the pool).

Conventions shared by both: a run is ``{query: [doc ids in rank order]}``; scores sent to trec_eval
strictly decrease with rank (trec_eval orders by score and breaks ties by doc id, not by the file's
rank). Per-query results cover the queries of the qrels; a query a run did not answer scores 0 (as
ir_measures does), and so does a query with no (estimated) relevant docs; both are averaged into the
mean, as trec_eval and ir_measures average them (sample_eval instead skips queries absent from the
run). The mean is over all qrels queries, so two runs are always averaged over the same queries.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "SAMPLE_EVAL_EPSILON",
    "InfAPResult",
    "average_precision",
    "exact_ap",
    "xinfap_arrays",
    "xinfap_query",
    "xinfap",
    "xinfap_runs",
    "infap_trec_eval",
    "infap_trec_eval_runs",
]

SAMPLE_EVAL_EPSILON = 1e-5

Run = Mapping[str, Sequence[str]]
StratifiedQrels = Mapping[str, Mapping[str, tuple[Hashable, int]]]


@dataclass(frozen=True)
class InfAPResult:
    """Per-query scores and their mean over the qrels queries (see module docstring)."""

    per_query: dict[str, float]
    mean: float
    n_queries: int
    queries_without_relevant: tuple[str, ...]  # R_hat == 0 (xinfAP) / no judged relevant (infAP)


def average_precision(ranked: Sequence[str], relevant: set[str] | frozenset[str]) -> float:
    """Textbook AP: sum of P@k at the ranks k of relevant docs, divided by ``len(relevant)``."""
    if not relevant:
        return 0.0
    hits = np.fromiter((d in relevant for d in ranked), dtype=bool, count=len(ranked))
    ranks = np.flatnonzero(hits) + 1
    return float((np.arange(1, ranks.size + 1) / ranks).sum() / len(relevant))


def exact_ap(run: Run, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """Textbook AP per qrels query (relevant = relevance >= 1); missing queries score 0."""
    return {q: average_precision(run.get(q, ()), {d for d, r in judged.items() if r >= 1})
            for q, judged in qrels.items()}


def xinfap_arrays(
    run_stratum: np.ndarray,
    run_judgment: np.ndarray,
    stratum_sizes: np.ndarray,
    stratum_judged: np.ndarray,
    stratum_relevant: np.ndarray,
    *,
    epsilon: float = SAMPLE_EVAL_EPSILON,
    max_result_size: int | None = None,
) -> tuple[float, float]:
    """xinfAP of one ranked list; returns ``(xinfAP, R_hat)``.

    ``run_stratum[i]``: stratum index (0..S-1) of the doc at rank i+1, -1 if it is not pooled.
    ``run_judgment[i]``: 1 judged relevant, 0 judged not relevant, -1 pooled but not judged
    (ignored where ``run_stratum`` is -1). ``stratum_sizes``, ``stratum_judged``,
    ``stratum_relevant`` (shape ``(S,)``): ``N_s``, ``n_s``, ``r_s`` over the *whole pool* of the
    query, not just this run. Formula in the module docstring.
    """
    st = np.asarray(run_stratum, dtype=np.int64)
    jd = np.asarray(run_judgment, dtype=np.int64)
    N = np.asarray(stratum_sizes, dtype=float)
    n = np.asarray(stratum_judged, dtype=float)
    r = np.asarray(stratum_relevant, dtype=float)
    has_sample = n > 0
    inv_pi = np.divide(N, n, out=np.zeros_like(N), where=has_sample)
    r_hat = float((r * inv_pi).sum())
    if r_hat <= 0 or st.size == 0:
        return 0.0, r_hat

    S = N.shape[0]
    pooled = st[:, None] == np.arange(S)[None, :]  # (depth, S) one-hot of the pooled docs
    judged = pooled & (jd >= 0)[:, None]
    rel = pooled & (jd >= 1)[:, None]
    # Exclusive cumulative counts: what lies strictly above each rank.
    D = np.cumsum(pooled, axis=0) - pooled
    m = np.cumsum(judged, axis=0) - judged
    q = np.cumsum(rel, axis=0) - rel

    rel_rows = np.flatnonzero(rel.any(axis=1))
    if rel_rows.size == 0:
        return 0.0, r_hat
    Dk, mk, qk = D[rel_rows], m[rel_rows], q[rel_rows]
    num = qk + epsilon
    den = mk + 3 * epsilon
    # With epsilon=0 an unjudged stratum above has no estimate (0/0); it then contributes nothing.
    p_hat = np.divide(num, den, out=np.zeros_like(num, dtype=float), where=den > 0)
    k = rel_rows + 1.0
    prec = (1.0 + (Dk * p_hat).sum(axis=1)) / k
    ap = float((prec * inv_pi[st[rel_rows]]).sum() / r_hat)
    if max_result_size is not None and r_hat > max_result_size:
        ap *= r_hat / max_result_size
    return ap, r_hat


def _pool_counts(judged: Mapping[str, tuple[Hashable, int]]
                 ) -> tuple[dict[Hashable, int], np.ndarray, np.ndarray, np.ndarray]:
    # Stratum labels are whatever the qrels use (ints here, strings in sample_eval files).
    labels = sorted({s for s, _ in judged.values()}, key=lambda x: (str(type(x)), x))
    index = {s: i for i, s in enumerate(labels)}
    S = len(labels)
    sizes, n, r = np.zeros(S, np.int64), np.zeros(S, np.int64), np.zeros(S, np.int64)
    for s, rel in judged.values():
        i = index[s]
        sizes[i] += 1
        if rel >= 0:
            n[i] += 1
        if rel >= 1:
            r[i] += 1
    return index, sizes, n, r


def xinfap_query(
    ranked: Sequence[str],
    judged: Mapping[str, tuple[Hashable, int]],
    *,
    epsilon: float = SAMPLE_EVAL_EPSILON,
    max_result_size: int | None = None,
) -> tuple[float, float]:
    """xinfAP of one ranked list against one query's stratified qrels ``{doc: (stratum, rel)}``.

    ``rel``: >= 1 relevant, 0 not relevant, -1 pooled but not judged. Returns ``(xinfAP, R_hat)``.
    """
    index, sizes, n, r = _pool_counts(judged)
    st = np.full(len(ranked), -1, dtype=np.int64)
    jd = np.full(len(ranked), -1, dtype=np.int64)
    for i, doc in enumerate(ranked):
        entry = judged.get(doc)
        if entry is not None:
            st[i] = index[entry[0]]
            jd[i] = entry[1]
    return xinfap_arrays(st, jd, sizes, n, r, epsilon=epsilon, max_result_size=max_result_size)


def _check_run(run: Run) -> None:
    for q, ranked in run.items():
        if len(set(ranked)) != len(ranked):
            raise ValueError(f"query {q!r}: a doc id appears twice in the ranked list")


def xinfap(
    run: Run,
    qrels: StratifiedQrels,
    *,
    epsilon: float = SAMPLE_EVAL_EPSILON,
    max_result_size: int | None = None,
) -> InfAPResult:
    """xinfAP per qrels query of one run ``{query: [doc ids in rank order]}``, and the mean."""
    _check_run(run)
    per_query: dict[str, float] = {}
    empty: list[str] = []
    for q, judged in qrels.items():
        ap, r_hat = xinfap_query(run.get(q, ()), judged, epsilon=epsilon,
                                 max_result_size=max_result_size)
        per_query[q] = ap
        if r_hat <= 0:
            empty.append(q)
    mean = float(np.mean(list(per_query.values()))) if per_query else 0.0
    return InfAPResult(per_query, mean, len(per_query), tuple(empty))


def xinfap_runs(
    runs: Mapping[str, Run],
    qrels: StratifiedQrels,
    *,
    epsilon: float = SAMPLE_EVAL_EPSILON,
    max_result_size: int | None = None,
) -> dict[str, InfAPResult]:
    """:func:`xinfap` for every run ``{run: {query: [doc ids]}}``."""
    return {name: xinfap(run, qrels, epsilon=epsilon, max_result_size=max_result_size)
            for name, run in runs.items()}


def _scored(run: Run, queries: Mapping[str, object]) -> dict[str, dict[str, float]]:
    # Strictly decreasing scores so trec_eval keeps the given order (it breaks ties by doc id).
    return {q: {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
            for q, ranked in run.items() if q in queries and ranked}


def infap_trec_eval(run: Run, qrels: Mapping[str, Mapping[str, int]]) -> InfAPResult:
    """trec_eval's infAP per qrels query (via ir_measures), and the mean over qrels queries.

    ``qrels[q][doc]``: >= 1 relevant, 0 not relevant, -1 pooled but not judged; docs absent are
    outside the pool. Valid for a uniform random sample of the pool only (see module docstring).
    """
    import ir_measures  # local import: only this estimator needs the C extension

    _check_run(run)
    per_query = {q: 0.0 for q in qrels}
    # trec_eval has nothing to say about a query without qrels lines: it keeps its 0.
    clean = {q: {d: int(r) for d, r in judged.items()} for q, judged in qrels.items() if judged}
    scored = _scored(run, clean)
    if scored:
        for metric in ir_measures.iter_calc([ir_measures.infAP], clean, scored):
            per_query[metric.query_id] = float(metric.value)
    empty = tuple(q for q, judged in qrels.items() if not any(r >= 1 for r in judged.values()))
    mean = float(np.mean(list(per_query.values()))) if per_query else 0.0
    return InfAPResult(per_query, mean, len(per_query), empty)


def infap_trec_eval_runs(
    runs: Mapping[str, Run], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, InfAPResult]:
    """:func:`infap_trec_eval` for every run."""
    return {name: infap_trec_eval(run, qrels) for name, run in runs.items()}
