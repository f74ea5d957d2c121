"""The corrected leaderboard (issue 26; docs/methodology.md section 6, "The corrected
leaderboard"): every run scored against a benchmark's original positives and against the
corrected positives, each mean with a confidence interval over queries, FIRE's ``A (B + C)``, each run's rank before and after, and Kendall's tau-b
between the two orderings of every measure; plus the leaderboard as an SVG chart and as CSV rows
(release archives carry both).

Plain functions over dicts and arrays; no Django. Clip measures are computed exactly as the
``evaluate`` command computes trec_eval's (ir_measures over pytrec_eval, the same run and qrels
shapes), so the leaderboard equals ``evaluate`` on the pool's exported qrels:

- ``C@K`` = trec_eval's ``success_K`` (1 if a relevant clip is among the first K);
- ``AP`` = trec_eval's ``map`` (divide by every relevant clip of the query);
- ``nDCG@10`` = trec_eval's ``ndcg_cut_10`` (graded qrels, 0/1 here; log2 discount).

Queries: trec_eval's rule, which ``evaluate`` keeps: a run is averaged over the queries it answered
that have judgments (here: a caption with an original positive or a resolved pool pair); a judged
query the run did not answer is skipped (counted per run), and the original measure (FIRE's B) is
averaged over the same queries as the corrected one (A), so C = A - B compares like with like.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from xml.sax.saxutils import escape

import numpy as np
from scipy import stats

__all__ = ["clip_measure_names", "clip_per_query", "moment_measure_names", "moment_per_query", "bootstrap_interval", "bootstrap_intervals", "run_cells", "interval_name", "ranks",
           "build_leaderboard", "leaderboard_svg", "leaderboard_csv_rows", "CSV_COLUMNS", "CONVENTIONS"]

CONVENTIONS = (
    "FIRE's A (B + C): A = the measure against the corrected positives (original positives plus every pool pair "
    "resolved relevant; a pair not resolved counts as not relevant), B = against the original positives alone, "
    "over the same queries, C = A - B, in percent (C printed as rounded A minus rounded B). Clip measures as "
    "trec_eval computes them (C@K = success_K, AP = map, nDCG@10 = ndcg_cut_10); a run is averaged over the "
    "judged queries it answered (trec_eval's rule, as `evaluate`). Rank 1 = best; tied values share the best "
    "rank ('min'); rank change = original rank - corrected rank (positive: the run moved up). Kendall's tau-b "
    "(scipy.stats.kendalltau) between the runs' original and corrected values of each measure."
)


def clip_measure_names(ks: Sequence[int]) -> list[str]:
    return [f"C@{k}" for k in sorted(set(int(k) for k in ks))] + ["AP", "nDCG@10"]


def _ir_measure(name: str) -> str:
    return f"Success@{name[2:]}" if name.startswith("C@") else name


def clip_per_query(ranked: Mapping[Hashable, Sequence[Hashable]], qrels: Mapping[Hashable, Mapping[Hashable, int]],
                   queries: Sequence[Hashable], measures: Sequence[str]) -> dict[str, np.ndarray]:
    """Each measure's value on each of ``queries`` (in that order), as ``evaluate`` scores a run
    file: ``ranked[q]`` in rank order (a clip repeated counts at its first rank), ``qrels[q]``
    clip -> grade (0 = judged not relevant). A query trec_eval gives no value (no relevant clip
    in ``qrels``) scores 0, as ``evaluate`` averages it."""
    import ir_measures

    queries = [str(q) for q in queries]
    ranked = {str(q): clips for q, clips in ranked.items()}
    qrels = {str(q): judged for q, judged in qrels.items()}
    te_run: dict[str, dict[str, float]] = {}
    for q in queries:
        clips = [str(c) for c in dict.fromkeys(ranked.get(q, ()))]
        # Strictly decreasing scores keep the rank order in every ir_measures provider.
        te_run[q] = {c: float(len(clips) - i) for i, c in enumerate(clips)}
    te_qrels = {q: {str(c): int(g) for c, g in (qrels.get(q) or {}).items()} for q in queries}
    by_measure = {ir_measures.parse_measure(_ir_measure(m)): m for m in measures}
    position = {q: i for i, q in enumerate(queries)}
    out = {m: np.zeros(len(queries)) for m in measures}
    if queries:
        for metric in ir_measures.iter_calc(list(by_measure), te_qrels, te_run):
            out[by_measure[metric.measure]][position[metric.query_id]] = float(metric.value)
    return out


MOMENT_MAP = "mAP"
MOMENT_CONVENTIONS = (
    "Moment pools: R@K IoU=t = 1 if one of the run's first K predictions overlaps a positive moment of the same "
    "video with temporal IoU >= t; Video R@K = a video holding a positive among the first K distinct videos (the "
    "moment_metrics report's definitions, annotation.analysis.moments.moment_recall_table); mAP = QVHighlights' "
    "MR-full-mAP (Moment-DETR's standalone_eval: the first 10 predictions, AP at IoU 0.50, 0.55, ..., 0.95, each "
    "positive matched once, averaged) where a prediction in a video without a positive matches nothing. Averaged "
    "over the captions some run answered that have a corrected positive (the moment_metrics report's captions); a "
    "caption a run did not answer scores 0, and a caption without an original moment scores 0 in B."
)


def moment_measure_names(ks: Sequence[int], iou_thresholds: Sequence[float]) -> list[str]:
    from annotation.analysis.moments import moment_recall_table

    columns = moment_recall_table({}, {}, ks=ks, iou_thresholds=iou_thresholds).columns
    return [*columns, MOMENT_MAP]


def moment_per_query(ranked: Mapping[str, Sequence[tuple[str, float, float]]],
                     positives: Mapping[str, Sequence[tuple[str, float, float]]], captions: Sequence[str], *,
                     ks: Sequence[int], iou_thresholds: Sequence[float]) -> dict[str, np.ndarray]:
    """Each moment measure on each caption, ``ranked[caption]`` = the run's ``(video, start, end)``
    in rank order, ``positives[caption]`` = positive moments (may be empty: every measure 0)."""
    from annotation.analysis.moment_eval import qvhighlights_metrics
    from annotation.analysis.moments import moment_recall_table

    names = moment_measure_names(ks, iou_thresholds)
    out = {m: np.zeros(len(captions)) for m in names}
    truth, predictions = {}, {}
    for i, caption in enumerate(captions):
        positive = list(positives.get(caption) or ())
        row = moment_recall_table({"run": {caption: list(ranked.get(caption, ()))}}, {caption: positive}, ks=ks,
                                  iou_thresholds=iou_thresholds).rows["run"]
        for m, value in row.items():
            out[m][i] = value
        if positive:
            # Each video holding a positive gets its own stretch of one time line, far from the others, so
            # QVHighlights' single-video AP sees a prediction in another video as overlapping nothing.
            offset = {video: 1e6 * (j + 1) for j, video in enumerate(dict.fromkeys(v for v, _, _ in positive))}
            truth[caption] = [(offset[v] + s, offset[v] + e) for v, s, e in positive]
            predictions[caption] = [((offset[v] + s, offset[v] + e) if v in offset else (0.0, 1.0)) + (-float(r),)
                                    for r, (v, s, e) in enumerate(ranked.get(caption, ()))]
    if truth:
        per_query = qvhighlights_metrics(truth, predictions).per_query
        for i, caption in enumerate(captions):
            if caption in truth:
                out[MOMENT_MAP][i] = per_query[caption]["MR-full-mAP"] / 100
    return out


def interval_name(*, replicates: int, seed: int, confidence: float) -> str:
    return (f"percentile bootstrap over queries: {replicates} resamples of the run's scored queries with "
            f"replacement (numpy default_rng seed {seed}, the same resamples for every run and for original and "
            f"corrected), {confidence:.0%} interval = the {(1 - confidence) / 2:.1%} and "
            f"{(1 + confidence) / 2:.1%} percentiles of the resampled means")


#: Resampled counts held at once (replicates x queries); the draws go chunk by chunk so memory stays
#: flat at a FIRE-sized query set, and the chunking depends on the number of queries only, so a seed
#: gives the same intervals every time.
_BOOTSTRAP_CELLS = 2_000_000


def bootstrap_intervals(matrix: np.ndarray, *, replicates: int, seed: int, confidence: float
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap of the column means of ``matrix`` (queries x series), every column
    resampled with the same draws of queries; NaN columns for no query."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    n, k = matrix.shape
    if n == 0:
        return np.full(k, math.nan), np.full(k, math.nan)
    rng = np.random.default_rng(seed)
    chunk = max(1, min(replicates, _BOOTSTRAP_CELLS // n))
    means = np.empty((replicates, k))
    for start in range(0, replicates, chunk):
        size = min(chunk, replicates - start)
        # Each resample's query indices, counted per resample (bincount over row-offset indices): a
        # matrix product of the counts then gives every resampled mean of every series at once, 5x
        # faster than numpy's multinomial at 27,000 queries.
        drawn = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
        counts = np.bincount(drawn.ravel(), minlength=size * n).reshape(size, n).astype(float)
        means[start:start + size] = counts @ matrix / n
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2], axis=0)
    return low, high


def bootstrap_interval(values: np.ndarray, *, replicates: int, seed: int, confidence: float
                       ) -> tuple[float, float]:
    """Percentile bootstrap of the mean of ``values`` (one per query); NaN for no query."""
    low, high = bootstrap_intervals(np.asarray(values, dtype=float)[:, None], replicates=replicates, seed=seed,
                                    confidence=confidence)
    return float(low[0]), float(high[0])


def run_cells(values: Mapping[str, Mapping[str, np.ndarray]], *, replicates: int, seed: int, confidence: float
              ) -> dict[str, dict[str, dict]]:
    """``{side: {measure: per-query values}}`` (every array over the same queries) -> ``{side:
    {measure: {"value", "low", "high"}}}``: the means with their bootstrap intervals, all from one
    set of resamples (original and corrected move together, as a paired comparison needs)."""
    keys = [(side, m) for side, by_measure in values.items() for m in by_measure]
    n = len(next(iter(values[keys[0][0]].values()))) if keys else 0
    matrix = np.column_stack([values[side][m] for side, m in keys]) if keys and n else np.zeros((0, len(keys)))
    low, high = bootstrap_intervals(matrix, replicates=replicates, seed=seed, confidence=confidence)
    out: dict[str, dict[str, dict]] = {side: {} for side in values}
    for i, (side, m) in enumerate(keys):
        mean = float(matrix[:, i].mean()) if n else math.nan
        out[side][m] = cell(mean, (low[i], high[i]))
    return out


def ranks(values: Mapping[str, float]) -> dict[str, int]:
    """Rank 1 = highest value; ties share the best rank of the tie (competition ranking)."""
    names = list(values)
    if not names:
        return {}
    scores = np.array([values[n] if values[n] is not None and math.isfinite(values[n]) else -math.inf
                       for n in names])
    return dict(zip(names, (int(r) for r in stats.rankdata(-scores, method="min"))))


def _tau(original: Mapping[str, float], corrected: Mapping[str, float]) -> tuple[float | None, float | None]:
    runs = [r for r in original if r in corrected]
    if len(runs) < 2:
        return None, None
    res = stats.kendalltau([original[r] for r in runs], [corrected[r] for r in runs])
    tau, p = float(res.statistic), float(res.pvalue)
    return (tau if math.isfinite(tau) else None), (p if math.isfinite(p) else None)


def _fire_text(corrected: float, original: float, decimals: int) -> str:
    a = round(100.0 * corrected, decimals)
    b = round(100.0 * original, decimals)
    c = round(a - b, decimals)
    return f"{a:.{decimals}f} ({b:.{decimals}f} {'+' if c >= 0 else '-'} {abs(c):.{decimals}f})"


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def build_leaderboard(*, measures: Sequence[str], runs: Sequence[Mapping], interval: str, decimals: int = 1,
                      conventions: str = CONVENTIONS, **extra) -> dict:
    """The leaderboard from each run's cells. ``runs``: ``{"run", "run_id", "original": {m: {"value",
    "low", "high"}}, "corrected": {...}, ...}`` (other keys kept). Adds per run the ranks, the rank
    change and FIRE's ``A (B + C)`` per measure, and Kendall's tau-b per measure."""
    measures = list(measures)
    out_runs = [dict(r) for r in runs]
    rank_original = {m: ranks({r["run"]: r["original"][m]["value"] for r in out_runs}) for m in measures}
    rank_corrected = {m: ranks({r["run"]: r["corrected"][m]["value"] for r in out_runs}) for m in measures}
    tau, tau_p = {}, {}
    for m in measures:
        tau[m], tau_p[m] = _tau({r["run"]: r["original"][m]["value"] for r in out_runs},
                                {r["run"]: r["corrected"][m]["value"] for r in out_runs})
    for r in out_runs:
        name = r["run"]
        r["rank_original"] = {m: rank_original[m][name] for m in measures}
        r["rank_corrected"] = {m: rank_corrected[m][name] for m in measures}
        r["rank_change"] = {m: rank_original[m][name] - rank_corrected[m][name] for m in measures}
        r["fire"] = {m: (_fire_text(r["corrected"][m]["value"], r["original"][m]["value"], decimals)
                         if r["corrected"][m]["value"] is not None and r["original"][m]["value"] is not None else "–")
                     for m in measures}
    return {"measures": measures, "interval": interval, "runs": out_runs, "kendall_tau": tau,
            "kendall_tau_p_value": tau_p, "conventions": conventions, **extra}


def cell(value: float, interval: tuple[float, float]) -> dict:
    return {"value": _finite(value), "low": _finite(interval[0]), "high": _finite(interval[1])}


# --------------------------------------------------------------------------------------------
# the leaderboard as CSV rows and as an SVG chart

CSV_COLUMNS = ["run", "run_id", "measure", "original", "original_low", "original_high", "corrected",
               "corrected_low", "corrected_high", "fire", "rank_original", "rank_corrected", "rank_change",
               "kendall_tau"]


def leaderboard_csv_rows(result: Mapping) -> list[list]:
    """Header row, then one row per run and measure (runs in corrected order of the first measure)."""
    rows: list[list] = [list(CSV_COLUMNS)]
    for m in result["measures"]:
        for r in sorted(result["runs"], key=lambda r: (r["rank_corrected"][m], r["run"])):
            o, c = r["original"][m], r["corrected"][m]
            rows.append([r["run"], r.get("run_id"), m, o["value"], o["low"], o["high"], c["value"], c["low"],
                         c["high"], r["fire"][m], r["rank_original"][m], r["rank_corrected"][m],
                         r["rank_change"][m], result["kendall_tau"].get(m)])
    return rows


_ROW = 16          # height of one run's band (two interval bars)
_LABEL = 150       # room for run names
_PLOT = 360        # width of one measure's panel
_GAP = 24          # between panels
_TOP = 36          # measure names and axis labels


def _fmt(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def leaderboard_svg(result: Mapping) -> str:
    """A standalone SVG: one panel per measure, one band per run (in corrected order of that
    measure), the original value and interval in grey and the corrected one in blue, on a 0-100
    scale shared by both. Text is escaped, so pages may insert it as it is."""
    measures = list(result["measures"])
    runs = list(result["runs"])
    n = len(runs)
    panels = max(len(measures), 1)
    width = _LABEL + panels * (_PLOT + _GAP)
    height = _TOP + n * _ROW + 28
    title = f"Corrected leaderboard: original (grey) and corrected (blue) values with intervals ({result['interval']})"
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="leaderboard-chart" role="img" '
             f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" font-family="sans-serif" '
             f'font-size="11"><title>{escape(title)}</title>']
    for p, m in enumerate(measures):
        x0 = _LABEL + p * (_PLOT + _GAP)
        tau = result["kendall_tau"].get(m)
        head = f"{m} (tau-b {tau:.2f})" if tau is not None else m
        parts.append(f'<text x="{x0}" y="12" font-weight="bold">{escape(head)}</text>')
        for tick in (0, 25, 50, 75, 100):
            x = x0 + _PLOT * tick / 100
            parts.append(f'<line x1="{x:.1f}" y1="{_TOP - 6}" x2="{x:.1f}" y2="{_TOP + n * _ROW}" stroke="#ddd"/>'
                         f'<text x="{x:.1f}" y="{_TOP + n * _ROW + 14}" text-anchor="middle" fill="#555">{tick}</text>')
        ordered = sorted(runs, key=lambda r: (r["rank_corrected"][m], r["run"]))
        for i, r in enumerate(ordered):
            y = _TOP + i * _ROW
            if p == 0:
                parts.append(f'<text x="{_LABEL - 6}" y="{y + 11}" text-anchor="end">{escape(str(r["run"]))}</text>')
            for offset, side, colour in ((4, "original", "#888"), (11, "corrected", "#1f5fbf")):
                c = r[side][m]
                if c["value"] is None:
                    continue
                low = c["low"] if c["low"] is not None else c["value"]
                high = c["high"] if c["high"] is not None else c["value"]
                xl, xh, xv = (x0 + _PLOT * min(max(v, 0.0), 1.0) for v in (low, high, c["value"]))
                label = (f'{r["run"]} {m} {side}: {_fmt(c["value"])} [{_fmt(c["low"])}, {_fmt(c["high"])}]; '
                         f'rank {r["rank_" + side][m]}')
                parts.append(f'<g class="{side}"><title>{escape(label)}</title>'
                             f'<line x1="{xl:.1f}" y1="{y + offset}" x2="{xh:.1f}" y2="{y + offset}" '
                             f'stroke="{colour}" stroke-width="2"/>'
                             f'<circle cx="{xv:.1f}" cy="{y + offset}" r="3" fill="{colour}"/></g>')
    parts.append(f'<text x="{_LABEL}" y="{height - 2}" fill="#555">percent; grey: original positives, blue: '
                 f'corrected; runs in corrected order</text></svg>')
    return "".join(parts)
