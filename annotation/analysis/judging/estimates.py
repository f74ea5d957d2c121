"""Horvitz-Thompson estimates of per-run metrics from partial judgments (issue 15).

Design: every pool pair ``i`` of query ``q`` was judged with a known inclusion probability
``pi_i`` (1 for a census: every pair judged, or a top stratum; ``< 1`` for a Poisson sample, see
:mod:`.strategies`), independently across pairs. A pair with no judgment contributes nothing
(``I_i = 0``); a pair outside every ranking (not pooled) is non-relevant. ``known_relevant[q]``
(the caption's original positive) is relevant whatever raters say and is never estimated.

With ``y_hat_i = I_i y_i / pi_i`` (unbiased for ``y_i``):

- ``C@K``: ``1 - prod_{i in top K} (1 - y_i)`` is not linear in the labels, but with independent
  inclusions ``E[prod (1 - y_hat_i)] = prod (1 - y_i)``, so ``1 - prod_{i in top K}(1 - y_hat_i)``
  is exactly unbiased (and exact, 1, when a known relevant or a relevant pair with ``pi = 1`` is
  in the top K). Its variance has the exact unbiased estimate
  ``T^2 - prod_i (Z_i^2 - v_i)``, ``Z_i = 1 - y_hat_i``, ``v_i = I_i y_i (1 - pi_i) / pi_i^2``.
- ``AP`` (textbook: divide by the number of relevant, as trec_eval's ``map``, relevant counted in
  the corrected qrels: known ones plus pooled relevant pairs) and ``nDCG@K`` (binary gains,
  ``1 / log2(rank + 1)`` discount, ideal DCG from the number of relevant, as trec_eval's
  ``ndcg_cut``): exactly unbiased per query by the subset expansion of :func:`_worlds` (every
  function of binary labels is multilinear; each product of labels has an unbiased HT estimate
  under Poisson sampling), with the unbiased variance estimate ``f_hat^2 - (f^2)_hat``. The ratio
  estimators ``N_hat / R_hat`` (``R_hat = |known| + sum_i y_hat_i``) used before were biased
  upward by 1-3 points with ~2 relevant pairs per query (E[1/R_hat] > 1/R) and their linearised
  se was half the real spread: 95% intervals covered in 0 of 50 bench samples. The ratio estimator
  (Taylor-linearised variance) remains only for a query with more than
  ``MAX_EXACT_SAMPLED_RELEVANT`` relevant pairs caught at pi < 1, where R is large and its bias small.

Variance: per query, exact unbiased design-based estimates as above. Queries are sampled
independently, so the variance of a mean over queries is the sum of per-query variances over Q^2
(a negative sum is clipped to 0); for AP and nDCG at least :func:`_floor_variance`'s design
variance. Intervals: AP and nDCG estimate +- t se (:func:`_t_quantile`);
C@K see :func:`c_at_k_interval` (normal widened by a rare-event gamma interval on
the unsettled queries: a sample that catches no relevant pair among a strong run's few unsettled
queries has variance estimate 0, and a point interval would miss). Adjacent systems in the ranking: P(ordered right) = Phi(d / se_d) from the
paired difference ``d`` of the two runs' estimates (same judged pairs, so the covariance is
accounted for). Judgments for a target width: the variance is projected to fall as 1 / n (more
judgments at the same design), so ``n_needed = n * (width / target)^2`` and the report gives
``n_needed - n``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

__all__ = ["RunEstimate", "EstimateReport", "estimate_metrics", "c_at_k_interval", "MEASURES",
           "ESTIMATOR_NAME", "C_AT_K_INTERVAL"]

MEASURES = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
ESTIMATOR_NAME = ("Horvitz-Thompson (Poisson design): C@K product estimator (unbiased, exact "
                  "variance estimate; interval: normal widened by a Fay-Feuer gamma interval on the "
                  "unsettled queries); AP and nDCG subset-expansion estimators (exactly unbiased, exact "
                  "unbiased variance estimate floored by the design's first-order variance, t interval with Satterthwaite df; ratio estimator with Taylor-linearised variance only "
                  "for a query with more than 12 relevant pairs caught at pi < 1)")
C_AT_K_INTERVAL = (
    "hull of the normal interval (estimate +- z se) and a rare-event interval: queries whose top K "
    "holds a known relevant pair (or a relevant pair judged with pi = 1) are settled and count "
    "exactly; on the others (unsettled: some top-K pair unjudged or sampled with pi < 1) the "
    "estimated number of hits y and its variance estimate v get the Fay-Feuer (1997) gamma "
    "interval with the weight w of one more hit = the mean 1/pi of the unsettled top-K pairs with "
    "pi < 1 (Tiwari et al. 2006's mean-weight variant): lower v/(2y) chi2_{a/2}(2y^2/v), upper "
    "(v + w^2)/(2(y + w)) chi2_{1-a/2}(2(y + w)^2/(v + w^2)), at most the number of unsettled "
    "queries; with no hit observed the upper bound is w * chi2_{1-a/2}(2)/2 = 3.69 w (a 'rule of "
    "three' at 95%). Width 0 when every pair is judged"
)


@dataclass(frozen=True)
class RunEstimate:
    run: str
    measure: str
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    judgments_for_width: int | None   # more judgments projected to reach the target CI width


@dataclass(frozen=True)
class EstimateReport:
    runs: list[RunEstimate]
    ranking: list[tuple[str, str, float]]   # adjacent pairs (better, worse, P(ordered right)) per measure
    estimator: str
    design: str
    conventions: dict
    ranking_measures: list[str] = field(default_factory=list)  # measure of each ranking entry

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "estimator": self.estimator,
            "design": self.design,
            "conventions": dict(self.conventions),
            "runs": [asdict(r) for r in self.runs],
            "ranking": [
                {"measure": m, "better": a, "worse": b, "p_ordered_right": p}
                for m, (a, b, p) in zip(self.ranking_measures, self.ranking)
            ],
        }


CONVENTIONS = {
    "C@K": "1 if a relevant pair is in the run's top K (FIRE's Correct@K)",
    "AP": "textbook AP: sum of precision at the relevant ranks divided by the number of relevant "
          "pairs (corrected qrels: known originals plus pooled relevant pairs), as trec_eval's map",
    "nDCG@K": "binary gains, 1/log2(rank+1) discount, ideal DCG from the number of relevant pairs, "
              "as trec_eval's ndcg_cut",
    "original_positive": "relevant whatever raters say; never estimated",
    "unjudged": "a pair never judged counts through the inclusion probabilities of judged pairs; "
                "a pair outside every ranking is non-relevant",
    "mean": "over every query any run ranks (or with a known relevant); a run without a list for "
            "a query scores 0 there",
    "AP_nDCG_estimator": "per query, sum over the subsets T of the relevant pairs caught with pi < 1 of "
                         "f(T) prod_{i in T} 1/pi_i prod_{j not in T} (1 - 1/pi_j), f(T) the measure when "
                         "the fixed relevant pairs (originals, relevant pairs judged with pi = 1) and T are "
                         "relevant: unbiased for every truth (a query's estimate may leave [0, 1]; the "
                         "mean over queries is what is reported). Variance: f_hat^2 - (f^2)_hat",
    "interval": "AP, nDCG: estimate +- t se, t the Student quantile at Satterthwaite's effective "
                "degrees of freedom (sum of per-query variances)^2 / sum of their squares (z when many "
                "queries share the variance; wider when a few heavy-weight catches carry it); se^2 at least the "
                "design's first-order variance sum over judged pairs with pi < 1 of p (1 - pi)/pi^2 delta^2, p the "
                "relevant share of the pair's stratum (best rank, runs ranking it), delta the measure's change if "
                "the pair turned relevant: a sample that catches few relevant pairs does not report a small se; C@K: "
                + C_AT_K_INTERVAL,
    "judgments_for_width": "variance projected to fall as 1/n at the same design: "
                           "n * (width / target)^2 - n, width = 2 z se",
}


def _parse_measure(measure: str) -> tuple[str, int | None]:
    if measure == "AP":
        return "AP", None
    for prefix in ("C@", "nDCG@"):
        if measure.startswith(prefix) and measure[len(prefix):].isdigit() and int(measure[len(prefix):]) > 0:
            return prefix[:-1], int(measure[len(prefix):])
    raise ValueError(f"unknown measure {measure!r}; expected C@K, AP or nDCG@K")


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def _idcg(r: float, k: int) -> tuple[float, float]:
    """Ideal DCG@k for r relevant pairs (r real: linear between integers) and its slope in r."""
    d = _discounts(k)
    whole = int(min(np.floor(r), k))
    value = float(d[:whole].sum())
    if whole < k:
        frac = r - whole
        return value + frac * float(d[whole]), float(d[whole])
    return value, 0.0


@dataclass
class _Query:
    yhat: np.ndarray      # I y / pi per item of the query (1 for known relevant)
    s: np.ndarray         # I y (1 - pi) / pi^2: the per-item variance estimate of yhat
    lists: dict           # run -> item positions in rank order (first occurrences)
    n_judged: int
    open: np.ndarray | None = None   # item's contribution depends on the sample: unjudged, or
                                     # judged with pi < 1 (never a known relevant)
    pi: np.ndarray | None = None     # item's inclusion probability where given (nan otherwise)
    worlds: object = None            # cache of _worlds: (matrix, weights), () when too many
    judged: np.ndarray | None = None  # item judged (in the sample)
    stratum: np.ndarray | None = None  # item's stratum for the variance floor (best rank, runs ranking it)


def pooled_queries(rankings, known_relevant) -> tuple[dict[str, set[str]], dict[str, None]]:
    """(known, queries): the known relevant items per query as strings, and every query a run ranks
    or a known relevant item names, in first-seen order."""
    known = {str(q): {str(i) for i in items} for q, items in (known_relevant or {}).items()}
    queries: dict[str, None] = {}
    for per_query in rankings.values():
        for q in per_query:
            queries[str(q)] = None
    for q in known:
        queries[q] = None
    return known, queries


def _prepare(rankings, judged, inclusion, known_relevant) -> tuple[list[str], dict[str, _Query]]:
    known, queries = pooled_queries(rankings, known_relevant)
    items_of: dict[str, dict[str, int]] = {q: {} for q in queries}
    judged_of: dict[str, list[tuple[str, bool]]] = {q: [] for q in queries}
    for key, relevant in judged.items():
        try:
            q, item = key
        except (TypeError, ValueError):
            raise ValueError(f"judged key {key!r} must be a (query, item) pair") from None
        q, item = str(q), str(item)
        if q in judged_of:
            judged_of[q].append((item, bool(relevant)))
    by_run = {run: {str(q): items for q, items in per_query.items()} for run, per_query in rankings.items()}
    out: dict[str, _Query] = {}
    for q in queries:
        index = items_of[q]
        lists = {}
        for run, per_query in by_run.items():
            ranked = per_query.get(q)
            if not ranked:
                continue
            positions = []
            seen = set()
            for item in ranked:
                item = str(item)
                if item in seen:
                    continue
                seen.add(item)
                positions.append(index.setdefault(item, len(index)))
            lists[run] = np.asarray(positions, dtype=np.int64)
        for item, _ in judged_of[q]:
            index.setdefault(item, len(index))
        for item in known.get(q, ()):
            index.setdefault(item, len(index))
        yhat = np.zeros(len(index))
        s = np.zeros(len(index))
        open_ = np.ones(len(index), dtype=bool)
        pis = np.full(len(index), np.nan)
        for item, relevant in judged_of[q]:
            pi = float(_lookup(inclusion, q, item))
            if not 0.0 < pi <= 1.0:
                raise ValueError(f"inclusion probability of ({q!r}, {item!r}) is {pi}; must be in (0, 1]")
            pis[index[item]] = pi
            open_[index[item]] = pi < 1.0
            if relevant:
                yhat[index[item]] = 1.0 / pi
                s[index[item]] = (1.0 - pi) / pi**2
        for item, i in index.items():
            # design probabilities of pairs not judged (yet), when the caller gives them
            pi = inclusion.get((q, item))
            if np.isnan(pis[i]) and pi is not None and 0.0 < float(pi) <= 1.0:
                pis[i] = float(pi)
        for item in known.get(q, ()):
            yhat[index[item]] = 1.0
            s[index[item]] = 0.0
            open_[index[item]] = False
        judged_mask = np.zeros(len(index), dtype=bool)
        for item, _ in judged_of[q]:
            judged_mask[index[item]] = True
        depth = np.full(len(index), FLOOR_DEPTHS + 1, dtype=np.int64)
        runs_ranking = np.zeros(len(index), dtype=np.int64)
        for positions in lists.values():
            ranks = np.minimum(np.arange(1, len(positions) + 1), FLOOR_DEPTHS + 1)
            np.minimum.at(depth, positions, ranks)
            runs_ranking[np.unique(positions)] += 1
        depth = depth * (FLOOR_RUNS + 1) + np.minimum(runs_ranking, FLOOR_RUNS)  # the floor's stratum
        out[q] = _Query(yhat, s, lists, len(judged_of[q]), open_, pis, judged=judged_mask, stratum=depth)
    return list(queries), out


def _lookup(inclusion, q, item) -> float:
    return inclusion.get((q, item), 1.0)


def str_pair_keys(mapping, what: str = "") -> dict:
    """(query, item) keys as strings, so ids given as ints match the rankings' strings. `what` names
    the mapping in the error."""
    out = {}
    for key, value in mapping.items():
        try:
            q, item = key
        except (TypeError, ValueError):
            raise ValueError(f"{what + ' ' if what else ''}key {key!r} must be a (query, item) pair") from None
        out[(str(q), str(item))] = value
    return out


# Queries with more sampled relevant pairs than this fall back to the ratio estimator (2^m worlds
# per query; with that many relevant pairs R is large and the ratio's bias small).
MAX_EXACT_SAMPLED_RELEVANT = 12

# Strata of the relevance rates behind the AP / nDCG variance floor: a pair's best rank (deeper
# or unranked pairs share the last) by the number of runs that rank it (more share the last).
FLOOR_DEPTHS = 10
FLOOR_RUNS = 6


def _worlds(qd: _Query):
    """The subset ("Moebius") expansion behind the exactly unbiased AP / nDCG estimators.

    Any function f of a query's binary labels is multilinear, f(y) = sum_S c_S prod_{i in S} y_i,
    and under Poisson sampling prod_{i in S} I_i y_i / pi_i is unbiased for prod_{i in S} y_i
    (distinct pairs are included independently). Summing, with O the relevant pairs caught with
    pi < 1 and f(T) the measure when exactly the fixed relevant pairs (known originals, relevant
    pairs judged with pi = 1) and T are relevant:

        f_hat = sum_{T subset of O} f(T) prod_{i in T} 1/pi_i prod_{j in O minus T} (1 - 1/pi_j)

    is unbiased for f(y) for every y. The same expansion of f^2 gives an unbiased variance estimate
    f_hat^2 - (f^2)_hat (and of a paired difference's). With O empty (every pair judged with
    pi = 1) it is f of the judged labels: exact, variance 0. C@K's product estimator is this
    expansion too. Returns (worlds x items 0/1 matrix, weight of each world) or None when O is too
    large (the caller then uses the ratio estimator)."""
    if qd.worlds is not None:
        return qd.worlds if qd.worlds != () else None
    caught = np.flatnonzero(qd.yhat > 1.0)
    if len(caught) > MAX_EXACT_SAMPLED_RELEVANT:
        qd.worlds = ()
        return None
    fixed = (qd.yhat == 1.0).astype(np.float64)
    m = len(caught)
    bits = ((np.arange(2 ** m)[:, None] >> np.arange(m)[None, :]) & 1).astype(bool)
    worlds = np.repeat(fixed[None, :], 2 ** m, axis=0)
    worlds[:, caught] = bits
    inv = qd.yhat[caught]                      # 1 / pi of the caught pairs
    weights = np.prod(np.where(bits, inv, 1.0 - inv), axis=1)
    qd.worlds = (worlds, weights)
    return qd.worlds


def _measure_in_worlds(measure: str, k: int | None, pos: np.ndarray, worlds: np.ndarray) -> np.ndarray:
    """AP (textbook) or nDCG@k of one run's list in each world (row of 0/1 labels)."""
    r = worlds.sum(axis=1)
    if measure == "AP":
        y = worlds[:, pos]
        precision = np.cumsum(y, axis=1) / np.arange(1, len(pos) + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(r > 0, (y * precision).sum(axis=1) / np.where(r > 0, r, 1.0), 0.0)
    d = _discounts(k)
    top = pos[:k]
    dcg = worlds[:, top] @ d[: len(top)]
    ideal = np.concatenate([[0.0], np.cumsum(d)])[np.minimum(r, k).astype(np.int64)]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)


def _per_query(measure: str, k: int | None, qd: _Query, run: str):
    """(estimate, variance, gradient or product data) of one run on one query."""
    pos = qd.lists.get(run)
    if pos is None:
        return 0.0, 0.0, None
    yhat, s = qd.yhat, qd.s
    if measure == "C":
        top = pos[:k]
        z = 1.0 - yhat[top]
        v = s[top]
        t = float(np.prod(z))
        return 1.0 - t, float(np.prod(z * z) - np.prod(z * z - v)), ("C", top)
    expansion = _worlds(qd)
    if expansion is not None:
        worlds, weights = expansion
        values = _measure_in_worlds(measure, k, pos, worlds)
        estimate = float(weights @ values)
        return estimate, estimate ** 2 - float(weights @ (values * values)), ("S", values, weights)
    r_hat = float(yhat.sum())
    if measure == "AP":
        ranks = np.arange(1, len(pos) + 1, dtype=np.float64)
        y = yhat[pos]
        above = np.concatenate([[0.0], np.cumsum(y)[:-1]])
        numerator = float((y / ranks * (1.0 + above)).sum())
        if r_hat <= 0:
            return 0.0, 0.0, ("G", np.zeros(len(yhat)))
        ap = numerator / r_hat
        later = np.concatenate([np.cumsum((y / ranks)[::-1])[::-1][1:], [0.0]])
        dn = np.zeros(len(yhat))
        np.add.at(dn, pos, (1.0 + above) / ranks + later)
        g = (dn - ap) / r_hat
        return ap, float((g * g * s).sum()), ("G", g)
    # nDCG@k
    top = pos[:k]
    d = _discounts(k)[: len(top)]
    dcg = float((yhat[top] * d).sum())
    idcg, slope = _idcg(r_hat, k)
    if idcg <= 0:
        return 0.0, 0.0, ("G", np.zeros(len(yhat)))
    value = dcg / idcg
    g = np.full(len(yhat), -value * slope / idcg)
    np.add.at(g, top, d / idcg)
    return value, float((g * g * s).sum()), ("G", g)


def _relevance_rates(prepared: Mapping[str, _Query]) -> np.ndarray:
    """Share of relevant pairs among the pairs sampled with pi < 1, per stratum (best rank
    1..FLOOR_DEPTHS or deeper/unranked, by the number of runs ranking the pair, 0..FLOOR_RUNS or
    more): the Hajek estimate sum(y / pi) / sum(1 / pi) over the judged ones; a stratum with none
    gets the overall share. Why both: a pair many runs rank high is more often relevant than one
    a single (weak) run ranks high, and a rate shared by the two made the weak runs' floor too high."""
    strata = (FLOOR_DEPTHS + 2) * (FLOOR_RUNS + 1)
    hits = np.zeros(strata)
    sizes = np.zeros(strata)
    for qd in prepared.values():
        take = qd.judged & qd.open & np.isfinite(qd.pi) & (qd.pi < 1.0)
        if not take.any():
            continue
        np.add.at(sizes, qd.stratum[take], 1.0 / qd.pi[take])
        np.add.at(hits, qd.stratum[take], (qd.yhat[take] > 0) / qd.pi[take])
    overall = hits.sum() / sizes.sum() if sizes.sum() > 0 else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sizes > 0, hits / np.where(sizes > 0, sizes, 1.0), overall)


def _floor_variance(measure: str, k: int | None, qd: _Query, run: str, rates: np.ndarray) -> float:
    """The design's variance of one run's AP / nDCG on one query, to first order, with each
    sampled pair's relevance replaced by its stratum's rate (:func:`_relevance_rates`):
    ``sum_{judged i, pi_i < 1} p_i (1 - pi_i) / pi_i^2 * delta_i^2``, an HT sum over the judged
    pairs of ``sum_i p_i (1 - pi_i) / pi_i delta_i^2``, ``delta_i`` the measure's change when pair
    ``i`` turns relevant (the other pairs as estimated: fixed and caught relevant ones relevant).

    Why: the unbiased variance estimate reads only the relevant pairs the sample caught. A sample
    that catches few of a run's relevant pairs at small pi estimates the run low AND reports a
    small variance; the floor reads every judged pair, so it does not shrink with the catch."""
    pos = qd.lists.get(run)
    if pos is None or qd.judged is None:
        return 0.0
    sampled = np.flatnonzero(qd.judged & qd.open & np.isfinite(qd.pi) & (qd.pi < 1.0))
    if not sampled.size:
        return 0.0
    m = sampled.size
    base = (qd.yhat > 0).astype(np.float64)
    worlds = np.repeat(base[None, :], 2 * m, axis=0)
    worlds[np.arange(m), sampled] = 1.0
    worlds[m + np.arange(m), sampled] = 0.0
    values = _measure_in_worlds(measure, k, pos, worlds)
    delta = values[:m] - values[m:]
    pi = qd.pi[sampled]
    return float((rates[qd.stratum[sampled]] * (1.0 - pi) / pi ** 2 * delta * delta).sum())


def _t_quantile(query_variances, confidence: float) -> float:
    """Student t quantile with Satterthwaite's effective degrees of freedom of a variance that is
    a sum of per-query variance estimates, each counted as one degree of freedom:
    df = (sum v_q)^2 / sum v_q^2 (negative v_q count as 0).

    Why: the per-query variance estimate of AP / nDCG is unbiased but heavy-tailed (a relevant
    pair caught at pi = 0.1 adds about (1/pi)(1/pi - 1) times its squared effect); when a few
    queries carry most of the variance, the se itself is uncertain and the z interval covered
    91-93% on MSVD at 30% of judgments; with many comparable queries df is large and this is z."""
    v = np.clip(np.asarray(query_variances, dtype=np.float64), 0.0, None)
    total, squares = float(v.sum()), float((v * v).sum())
    if total <= 0 or squares <= 0:
        return float(stats.norm.ppf(0.5 + confidence / 2.0))
    return float(stats.t.ppf(0.5 + confidence / 2.0, total * total / squares))


def c_at_k_interval(settled, hits, variance, weight, n_unsettled, n_queries, confidence: float = 0.95):
    """95% (``confidence``) interval of a mean C@K: the normal interval widened by a Fay-Feuer
    gamma interval on the unsettled queries' part (arrays broadcast; returns ``(low, high)``).

    ``settled``: sum of the settled queries' C@K (exact); ``hits``: the HT estimate ``y`` of the
    number of unsettled queries with a relevant pair in the top K, ``variance`` its variance
    estimate ``v``; ``weight``: ``w``, what one more observed hit adds to ``y`` (mean 1/pi of the
    unsettled top-K pairs with pi < 1; 0 or nan when unknown: no widening; inf when a pair could
    not be sampled at all, pi = 0: the upper bound is then every unsettled query);
    ``n_unsettled``: their number (the upper bound of ``y``'s target).

    Why: the HT C@K is a sum of ``1/pi`` for each hit the sample catches, close to a weighted
    Poisson count. With few unsettled queries (a strong run) a sample often catches none: ``y = v
    = 0`` and the normal interval is a point that misses every hit left. Fay & Feuer (1997) give
    ``y`` the exact (Garwood) Poisson interval on its effective number of events ``y^2 / v``,
    scaled by ``v / y``, adding one event of weight ``w`` for the upper bound; with nothing caught
    the upper bound is ``w chi2_{1-a/2}(2) / 2`` (3.69 w at 95%). The hull keeps the normal interval
    wherever it reaches further, so it only widens it; it is exact (a point) when no query is
    unsettled."""
    settled, y, v, w, m = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in
                                                 (settled, hits, variance, weight, n_unsettled)))
    alpha = 1.0 - confidence
    z = float(stats.norm.ppf(1.0 - alpha / 2.0))
    v = np.maximum(v, 0.0)
    se = np.sqrt(v)
    low = (settled + y - z * se) / n_queries
    high = (settled + y + z * se) / n_queries
    yp = np.maximum(y, 0.0)
    # w = inf: some unsettled pair could not be sampled (pi = 0); every unsettled query may hold a hit
    unbounded = np.isposinf(w) & (m > 0)
    w = np.where(np.isfinite(w) & (w > 0) & (m > 0), w, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        events = np.where((yp > 0) & (v > 0), 2.0 * yp * yp / np.where(v > 0, v, 1.0), 1.0)
        gamma_low = np.where((yp > 0) & (v > 0), v / (2.0 * yp) * stats.chi2.ppf(alpha / 2.0, events),
                             np.where(v > 0, 0.0, yp))
        vw = v + w * w
        events_up = np.where(vw > 0, 2.0 * (yp + w) ** 2 / np.where(vw > 0, vw, 1.0), 1.0)
        gamma_high = np.where(vw > 0, vw / (2.0 * (yp + w)) * stats.chi2.ppf(1.0 - alpha / 2.0, events_up),
                              yp)
    gamma_low = np.clip(gamma_low, 0.0, None)
    gamma_high = np.where(unbounded, m, np.where(w > 0, np.minimum(gamma_high, m), yp))
    low = np.minimum(low, (settled + gamma_low) / n_queries)
    high = np.maximum(high, (settled + np.maximum(gamma_high, gamma_low)) / n_queries)
    return low, high


def _c_at_k_parts(k: int, qd: _Query, run: str):
    """(settled?, open top-K pairs' 1/pi where given) of one run on one query. Settled: a known
    relevant pair, or a relevant pair judged with pi = 1, in the top K; or no top-K pair whose
    contribution depends on the sample (then the query's C@K is exact too)."""
    pos = qd.lists.get(run)
    if pos is None:
        return True, np.zeros(0)
    top = pos[:k]
    if np.any((qd.yhat[top] == 1.0) & (qd.s[top] == 0.0)):
        return True, np.zeros(0)
    if qd.open is None or not qd.open[top].any():
        return True, np.zeros(0)
    pis = qd.pi[top][qd.open[top]]
    pis = pis[np.isfinite(pis) & (pis < 1.0)]
    return False, 1.0 / pis


def _difference_variance(qd: _Query, a, b) -> float:
    """Variance estimate of (run a - run b) on one query from their gradient/product data."""
    if a is None and b is None:
        return 0.0
    kind = (a or b)[0]
    if kind == "S":
        weights = (a or b)[2]
        d = (a[1] if a is not None else 0.0) - (b[1] if b is not None else 0.0)
        return float((weights @ d) ** 2 - weights @ (d * d))
    if kind == "G":
        ga = a[1] if a is not None else 0.0
        gb = b[1] if b is not None else 0.0
        g = ga - gb
        return float((g * g * qd.s).sum())
    # C@K: exact unbiased estimate, T_x = prod_{top x} Z_i;  C_a - C_b = T_b - T_a.
    z, v = 1.0 - qd.yhat, qd.s
    set_a = set(a[1].tolist()) if a is not None else set()
    set_b = set(b[1].tolist()) if b is not None else set()
    if a is None or b is None:
        # a run without a list scores exactly 0: the difference is the other run's C@K
        top = (a or b)[1]
        return float(np.prod(z[top] ** 2) - np.prod(z[top] ** 2 - v[top]))
    ta = float(np.prod(z[list(set_a)])) if set_a else 1.0
    tb = float(np.prod(z[list(set_b)])) if set_b else 1.0

    def square_part(items):
        items = list(items)
        return float(np.prod(z[items] ** 2 - v[items])) if items else 1.0

    def plain(items):
        items = list(items)
        return float(np.prod(z[items])) if items else 1.0

    both = set_a & set_b
    cross = square_part(both) * plain(set_a ^ set_b)
    return (ta - tb) ** 2 - (square_part(set_a) - 2.0 * cross + square_part(set_b))


def estimate_metrics(rankings: Mapping[str, Mapping[str, Sequence[str]]],    # run -> query -> ranked item ids
                     judged: Mapping[tuple[str, str], bool],                  # (query, item) -> relevant
                     inclusion: Mapping[tuple[str, str], float],             # (query, item) -> pi (judged pairs)
                     *, known_relevant: Mapping[str, set[str]] | None = None, # originals: relevant, not sampled
                     measures=("C@1", "C@5", "C@10", "AP", "nDCG@10"),
                     target_width: float | None = None, confidence: float = 0.95) -> EstimateReport:
    """Estimates, standard errors and intervals of each measure for each run (see module).

    Queries averaged over: every query any run ranks, plus every query of ``known_relevant``; a
    run without a list for a query scores 0 there. A judged pair missing from ``inclusion`` counts
    as ``pi = 1``. ``ranking`` lists, per measure in ``measures`` order, the runs sorted by
    estimate (best first) as adjacent pairs ``(better, worse, P(ordered right))``; the measure of
    each entry is in ``ranking_measures``. ``judgments_for_width`` is None without
    ``target_width`` or when the interval is already narrower."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    if target_width is not None and target_width <= 0:
        raise ValueError("target_width must be > 0")
    parsed = [(m, *_parse_measure(m)) for m in measures]
    runs = sorted(rankings)
    judged = str_pair_keys(judged)
    inclusion = str_pair_keys(inclusion)
    query_ids, prepared = _prepare(rankings, judged, inclusion, known_relevant)
    n_q = max(len(query_ids), 1)
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    pis = [float(inclusion.get(key, 1.0)) for key in judged]
    sampled = any(p < 1.0 for p in pis) or any(0.0 < float(p) < 1.0 for p in inclusion.values())
    given_weights = [1.0 / float(p) for p in inclusion.values() if 0.0 < float(p) < 1.0]
    # weight of a hit where no unsettled top-K pair's pi is given: the mean over the design
    fallback_weight = float(np.mean(given_weights)) if given_weights else 0.0
    n_judged = len(judged)
    rates = _relevance_rates(prepared) if sampled else None
    out_runs: list[RunEstimate] = []
    ranking: list[tuple[str, str, float]] = []
    ranking_measures: list[str] = []
    for name, kind, k in parsed:
        values = {}
        data = {}
        for run in runs:
            total, var = 0.0, 0.0
            per = []
            settled, hits, hits_var, n_unsettled, weights = 0.0, 0.0, 0.0, 0, []
            query_vars: list[float] = []
            floor = 0.0
            for q in query_ids:
                value, variance, extra = _per_query(kind, k, prepared[q], run)
                total += value
                var += variance
                per.append(extra)
                if kind != "C":
                    query_vars.append(variance)
                    if sampled:
                        floor += _floor_variance(kind, k, prepared[q], run, rates)
                if kind == "C" and sampled:
                    is_settled, w = _c_at_k_parts(k, prepared[q], run)
                    if is_settled:
                        settled += value
                    else:
                        hits += value
                        hits_var += variance
                        n_unsettled += 1
                        weights.append(w)
            data[run] = per
            estimate = total / n_q
            se = float(np.sqrt(max(var, floor, 0.0))) / n_q
            values[run] = estimate
            more = None
            width = 2.0 * z * se
            if target_width is not None and width > target_width and n_judged > 0:
                more = int(np.ceil(n_judged * (width / target_width) ** 2 - n_judged))
            low, high = estimate - z * se, estimate + z * se
            if kind != "C" and se > 0:
                quantile = _t_quantile(query_vars, confidence)
                low, high = estimate - quantile * se, estimate + quantile * se
            if kind == "C" and sampled:
                w = np.concatenate(weights) if weights else np.zeros(0)
                weight = float(w.mean()) if w.size else fallback_weight
                lo, hi = c_at_k_interval(settled, hits, hits_var, weight, n_unsettled, n_q, confidence)
                low, high = min(low, float(lo)), max(high, float(hi))
            out_runs.append(RunEstimate(run, name, estimate, se, low, high, more))
        order = sorted(runs, key=lambda r: (-values[r], r))
        for better, worse in zip(order, order[1:]):
            var = sum(_difference_variance(prepared[q], a, b)
                      for q, a, b in zip(query_ids, data[better], data[worse]))
            diff = values[better] - values[worse]
            se_d = float(np.sqrt(max(var, 0.0))) / n_q
            p = float(stats.norm.cdf(diff / se_d)) if se_d > 0 else (1.0 if diff > 0 else 0.5)
            ranking.append((better, worse, p))
            ranking_measures.append(name)
    design = ("poisson sample: judged pairs weighted by 1/pi (independent inclusions)" if sampled
              else "census: every judged pair has pi = 1 (unjudged pairs count as non-relevant)")
    conventions = dict(CONVENTIONS)
    if any(kind != "C" for _, kind, _ in parsed):
        fallback = sum(_worlds(prepared[q]) is None for q in query_ids)
        if fallback:
            conventions["AP_nDCG_ratio_fallback"] = (
                f"{fallback} of {len(query_ids)} queries have more than {MAX_EXACT_SAMPLED_RELEVANT} relevant "
                "pairs caught at pi < 1: their AP / nDCG use the ratio estimator (slightly biased, "
                "linearised variance), so those measures' intervals are approximate")
    return EstimateReport(out_runs, ranking, ESTIMATOR_NAME, design, conventions, ranking_measures)
