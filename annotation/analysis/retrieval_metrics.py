"""Retrieval metrics with original and corrected positives (methodology section 6).

Pure Python/NumPy plus ``pytrec_eval`` (the C trec_eval); no Django.

Shapes used throughout:

- a *run* is a mapping ``caption_id -> sequence of clip_ids`` in rank order (rank 1 first). The
  order of the list is the ranking: scores, if the caller has them, must already have been used
  to sort it (ties are the caller's to break, e.g. by rank in the run file). A clip repeated
  within one caption's list counts once, at its first (best) rank.
- *qrels* are binary: a mapping ``caption_id -> collection of positive clip_ids``.
- ``captions`` is the list of every caption id to average over. Each entry counts once, so two
  caption rows with the same text (separate ids) count twice, and captions without positives or
  absent from the run are averaged in with 0.

Metric names: ``correct@K`` (1 if some positive is in the top K), ``ap_textbook`` and
``ap_fire``; see :func:`per_caption_metrics` for the definitions.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pytrec_eval
from numpy.typing import NDArray
from scipy import stats

Run = Mapping[Hashable, Sequence[Hashable]]
Qrels = Mapping[Hashable, Collection[Hashable]]
Pair = tuple[Hashable, Hashable]
Backend = Literal["trec_eval", "numpy"]

DEFAULT_KS: tuple[int, ...] = (1, 5, 10)


def metric_names(ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """Metric keys in report order: ``correct@K`` for each K, then the two AP variants."""
    return [f"correct@{k}" for k in ks] + ["ap_textbook", "ap_fire"]


@dataclass
class RunMetrics:
    """Per-caption values (arrays aligned to ``captions``) and their means.

    ``depth`` is the cut-off actually applied (None = each caption's whole list).
    ``to_dict()`` gives means only; ``to_dict(per_caption=True)`` adds lists.
    """

    captions: list[Hashable]
    per_caption: dict[str, NDArray[np.float64]]
    mean: dict[str, float]
    depth: int | None

    def to_dict(self, *, per_caption: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "n_captions": len(self.captions),
            "depth": self.depth,
            "mean": dict(self.mean),
        }
        if per_caption:
            d["captions"] = list(self.captions)
            d["per_caption"] = {k: v.tolist() for k, v in self.per_caption.items()}
        return d


# --------------------------------------------------------------------------------------------
# core


def _ranked_unique(clips: Sequence[Hashable] | None, depth: int | None) -> list[Hashable]:
    if not clips:
        return []
    items = list(dict.fromkeys(clips))  # first occurrence = best rank
    return items if depth is None else items[:depth]


def hit_matrix(
    run: Run, qrels: Qrels, captions: Sequence[Hashable], *, depth: int | None = None
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """``(hits, n_positives)``: ``hits[i, j]`` is True if rank j+1 of caption i is a positive.

    Width is ``depth`` or, when None, the longest list. Short or missing lists are padded with
    False. ``n_positives[i] = |P_q|`` from the qrels (retrieved or not).
    """
    if depth is not None and depth < 1:
        raise ValueError("depth must be >= 1 or None")
    rows = [_ranked_unique(run.get(q), depth) for q in captions]
    width = depth if depth is not None else max((len(r) for r in rows), default=0)
    hits = np.zeros((len(captions), max(width, 1)), dtype=bool)
    n_pos = np.zeros(len(captions), dtype=np.int64)
    for i, (q, items) in enumerate(zip(captions, rows)):
        pos = qrels.get(q) or ()
        n_pos[i] = len(pos)
        if items and n_pos[i]:
            pos_set = pos if isinstance(pos, (set, frozenset)) else set(pos)
            hits[i, : len(items)] = [c in pos_set for c in items]
    return hits, n_pos


def per_caption_metrics(
    hits: NDArray[np.bool_], n_positives: NDArray[np.int64], *, ks: Sequence[int] = DEFAULT_KS
) -> dict[str, NDArray[np.float64]]:
    """Per-caption metrics from a hit matrix (pure NumPy).

    - ``correct@K``: 1.0 if any of the first K columns is a hit.
    - AP sums Precision@i over the ranks i (within the matrix width, i.e. the depth) holding a
      positive, then divides by
      - ``ap_textbook``: |P_q|, all positives in the qrels (trec_eval's ``map``; a positive the
        list misses lowers AP);
      - ``ap_fire``: the number of positives retrieved in the list (FIRE's variant; it measures
        only how well the retrieved positives are ordered, so missing positives do not count).
        trec_eval has no such measure, hence this hand-written form.
      Both are 0 when the divisor is 0.
    """
    h = hits.astype(np.float64)
    ranks = np.arange(1, h.shape[1] + 1, dtype=np.float64)
    sum_prec = (np.cumsum(h, axis=1) / ranks * h).sum(axis=1)
    n_ret = h.sum(axis=1)
    n_pos = np.asarray(n_positives, dtype=np.float64)
    out: dict[str, NDArray[np.float64]] = {
        f"correct@{k}": h[:, :k].any(axis=1).astype(np.float64) for k in ks
    }
    out["ap_textbook"] = np.divide(sum_prec, n_pos, out=np.zeros_like(sum_prec), where=n_pos > 0)
    out["ap_fire"] = np.divide(sum_prec, n_ret, out=np.zeros_like(sum_prec), where=n_ret > 0)
    return out


def _trec_eval_metrics(
    run: Run,
    qrels: Qrels,
    captions: Sequence[Hashable],
    *,
    depth: int | None,
    ks: Sequence[int],
) -> dict[str, NDArray[np.float64]]:
    """ap_textbook and correct@K per caption via pytrec_eval.

    trec_eval sorts by score and breaks ties by doc id, so scores are made strictly decreasing
    with rank. It drops queries without run entries and we skip queries without positives; both
    score 0 here, so every caption is averaged in.
    """
    keys = [str(q) for q in captions]
    te_qrels: dict[str, dict[str, int]] = {}
    te_run: dict[str, dict[str, float]] = {}
    for q, key in zip(captions, keys):
        pos = qrels.get(q)
        if not pos:
            continue
        items = _ranked_unique(run.get(q), depth)
        if not items:
            continue
        te_qrels[key] = {str(c): 1 for c in pos}
        n = len(items)
        te_run[key] = {str(c): float(n - j) for j, c in enumerate(items)}
    out = {f"correct@{k}": np.zeros(len(captions)) for k in ks}
    out["ap_textbook"] = np.zeros(len(captions))
    if not te_qrels:
        return out
    measures = {"map", "success." + ",".join(str(k) for k in ks)}
    res = pytrec_eval.RelevanceEvaluator(te_qrels, measures).evaluate(te_run)
    for i, key in enumerate(keys):
        r = res.get(key)
        if r is None:
            continue
        out["ap_textbook"][i] = r["map"]
        for k in ks:
            out[f"correct@{k}"][i] = r[f"success_{k}"]
    return out


def evaluate_run(
    run: Run,
    qrels: Qrels,
    captions: Sequence[Hashable],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    depth: int | None = None,
    backend: Backend = "trec_eval",
) -> RunMetrics:
    """Correct@K, ap_textbook and ap_fire per caption and averaged over ``captions``.

    Cut-off: ``depth=None`` (default) evaluates each caption's whole list, as trec_eval does for
    the run file; pass ``depth`` (e.g. 20 as FIRE, or 10) to cut every list first. The cut-off
    applies to all metrics, and AP@depth still divides by |P_q| in the textbook variant.

    ``backend="trec_eval"`` takes ap_textbook and correct@K from pytrec_eval (the reference);
    ``"numpy"`` computes them from the hit matrix (same numbers, checked in tests; faster when
    called thousands of times). ap_fire is always NumPy.
    """
    hits, n_pos = hit_matrix(run, qrels, captions, depth=depth)
    per = per_caption_metrics(hits, n_pos, ks=ks)
    if backend == "trec_eval":
        per.update(_trec_eval_metrics(run, qrels, captions, depth=depth, ks=ks))
    elif backend != "numpy":
        raise ValueError("backend must be 'trec_eval' or 'numpy'")
    names = metric_names(ks)
    per = {k: per[k] for k in names}
    mean = {k: (float(v.mean()) if v.size else math.nan) for k, v in per.items()}
    return RunMetrics(captions=list(captions), per_caption=per, mean=mean, depth=depth)


def corrected_qrels(
    original_positives: Qrels, resolved_positives: Collection[Pair]
) -> dict[Hashable, set[Hashable]]:
    """Original positives plus every pair resolved relevant (the original always stays)."""
    out: dict[Hashable, set[Hashable]] = {q: set(v) for q, v in original_positives.items()}
    for q, c in resolved_positives:
        out.setdefault(q, set()).add(c)
    return out


# --------------------------------------------------------------------------------------------
# presentation


def format_abc(corrected: float, original: float, *, decimals: int = 1) -> dict[str, Any]:
    """FIRE's ``A (B + C)``: A corrected, B original-only, C = A - B, in percent.

    A and B are rounded to ``decimals``; C is shown as rounded A minus rounded B so that the
    printed figures add up (rounding C on its own can be off by one in the last digit). A
    negative C prints as ``A (B - |C|)``. The exact differences are returned as well.
    """
    a = round(100.0 * corrected, decimals)
    b = round(100.0 * original, decimals)
    c = round(a - b, decimals)
    sign = "+" if c >= 0 else "-"
    text = f"{a:.{decimals}f} ({b:.{decimals}f} {sign} {abs(c):.{decimals}f})"
    return {
        "text": text,
        "a": a,
        "b": b,
        "c": c,
        "a_exact": 100.0 * corrected,
        "b_exact": 100.0 * original,
        "c_exact": 100.0 * (corrected - original),
    }


def abc_table(
    corrected: RunMetrics | Mapping[str, float],
    original: RunMetrics | Mapping[str, float],
    *,
    decimals: int = 1,
) -> dict[str, dict[str, Any]]:
    """``format_abc`` for every metric present in both: ``{metric: {"text": ..., ...}}``."""
    a = corrected.mean if isinstance(corrected, RunMetrics) else corrected
    b = original.mean if isinstance(original, RunMetrics) else original
    return {k: format_abc(a[k], b[k], decimals=decimals) for k in a if k in b}


# --------------------------------------------------------------------------------------------
# leave one run out


def pairs_only_from(provenance: Mapping[Pair, Collection[Hashable]], pairs: Iterable[Pair]
                    ) -> dict[Hashable, list[Pair]]:
    """Run -> the ``pairs`` whose only contributing run it is (``provenance[pair] == {run}``), in
    the order given: what leaving the run out of the pool takes away. A pair with no provenance
    entry (another pool's, an imported verdict's) or proposed by several runs belongs to none."""
    only_by: dict[Hashable, list[Pair]] = {}
    for pair in pairs:
        src = set(provenance.get(pair, ()))
        if len(src) == 1:
            (run,) = src
            only_by.setdefault(run, []).append(pair)
    return only_by


@dataclass
class LeaveOneOutResult:
    """A run's metrics when only pairs some *other* run proposed keep their labels."""

    run: str
    n_positives_removed: int
    metrics: RunMetrics

    def to_dict(self, *, per_caption: bool = False) -> dict[str, Any]:
        return {
            "run": self.run,
            "n_positives_removed": self.n_positives_removed,
            "metrics": self.metrics.to_dict(per_caption=per_caption),
        }


def leave_one_run_out(
    runs: Mapping[str, Run],
    *,
    provenance: Mapping[Pair, Collection[str]],
    resolved_positives: Collection[Pair],
    original_positives: Qrels,
    captions: Sequence[Hashable],
    ks: Sequence[int] = DEFAULT_KS,
    depth: int | None = None,
    backend: Backend = "trec_eval",
) -> dict[str, LeaveOneOutResult]:
    """Re-evaluate each run as if its own pool contributions had never been judged.

    For run r, a resolved positive (q, c) counts only if a run other than r proposed it, i.e.
    it is dropped exactly when ``provenance[(q, c)] == {r}``. Original positives always stay.
    A resolved positive with no provenance entry came from outside these runs (e.g. another
    pool) and is kept for every run. Compare with ``evaluate_run`` on ``corrected_qrels`` to
    see how much a model not in the pool would be under-rated.
    """
    full = corrected_qrels(original_positives, resolved_positives)
    only_by = pairs_only_from(provenance, [(q, c) for q, c in resolved_positives
                                           if c not in (original_positives.get(q) or ())])
    out: dict[str, LeaveOneOutResult] = {}
    for name, run in runs.items():
        removed = only_by.get(name, [])
        if removed:
            qrels = {q: set(v) for q, v in full.items()}
            for q, c in removed:
                qrels[q].discard(c)
        else:
            qrels = full
        out[name] = LeaveOneOutResult(
            run=name,
            n_positives_removed=len(removed),
            metrics=evaluate_run(run, qrels, captions, ks=ks, depth=depth, backend=backend),
        )
    return out


# --------------------------------------------------------------------------------------------
# positives vs caption length


@dataclass
class PositivesByLength:
    """Per-caption counts (arrays aligned to ``captions``) and a summary by length in words.

    Length is the number of whitespace-separated tokens (captions in these benchmarks are
    already tokenised or lower-cased, and a tokenizer choice would only shift punctuation).
    ``spearman_rho``/``spearman_p``: rank correlation of length and positives (NaN if constant).
    """

    captions: list[Hashable]
    length: NDArray[np.int64]
    n_positives: NDArray[np.int64]
    by_length: list[dict[str, Any]]
    spearman_rho: float
    spearman_p: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "captions": list(self.captions),
            "length": self.length.tolist(),
            "n_positives": self.n_positives.tolist(),
            "by_length": self.by_length,
            "spearman_rho": self.spearman_rho,
            "spearman_p": self.spearman_p,
        }


def positives_by_caption_length(
    caption_texts: Mapping[Hashable, str],
    qrels: Qrels,
    *,
    captions: Sequence[Hashable] | None = None,
) -> PositivesByLength:
    """Count positives per caption and group by caption length (every caption id counts)."""
    caps = list(caption_texts) if captions is None else list(captions)
    length = np.array([len(caption_texts[q].split()) for q in caps], dtype=np.int64)
    n_pos = np.array([len(qrels.get(q) or ()) for q in caps], dtype=np.int64)
    by_length = []
    for L in np.unique(length):
        sel = n_pos[length == L]
        by_length.append(
            {
                "length": int(L),
                "n_captions": int(sel.size),
                "total_positives": int(sel.sum()),
                "mean_positives": float(sel.mean()),
                "median_positives": float(np.median(sel)),
            }
        )
    rho, p = math.nan, math.nan
    if len(caps) >= 2 and np.ptp(length) > 0 and np.ptp(n_pos) > 0:
        r = stats.spearmanr(length, n_pos)
        rho, p = float(r.statistic), float(r.pvalue)
    return PositivesByLength(caps, length, n_pos, by_length, rho, p)


# --------------------------------------------------------------------------------------------
# leaderboard agreement


def leaderboard_kendall_tau(
    original: Mapping[str, float], corrected: Mapping[str, float]
) -> dict[str, Any]:
    """Kendall's tau-b (scipy) between two leaderboards, over the runs present in both.

    Inputs map run name -> score of one chosen metric (e.g. ``m.mean["ap_textbook"]``) under
    original and corrected labels. tau-b handles tied scores. NaN with fewer than 2 runs or a
    constant leaderboard.
    """
    runs = [r for r in original if r in corrected]
    tau, p = math.nan, math.nan
    if len(runs) >= 2:
        res = stats.kendalltau([original[r] for r in runs], [corrected[r] for r in runs])
        tau, p = float(res.statistic), float(res.pvalue)
    return {"tau": tau, "p_value": p, "n_runs": len(runs), "runs": runs}
