"""The corrected leaderboard (issue 26; docs/methodology.md section 6, "The corrected
leaderboard"): every run scored against a benchmark's original positives and against the
corrected positives, each mean with a confidence interval over queries, FIRE's ``A (B + C)``, each run's rank before and after, and Kendall's tau-b
between the two orderings of every measure; plus the leaderboard as an SVG chart and as CSV rows
(release archives carry both).

Plain functions over dicts and arrays; no Django. Clip measures are computed by the same C
trec_eval as the ``evaluate`` command's (pytrec_eval, which ``evaluate`` reaches through
ir_measures; the same run and qrels shapes), so the leaderboard equals ``evaluate`` on the pool's
exported qrels:

- ``C@K`` = trec_eval's ``success_K`` (1 if a relevant clip is among the first K);
- ``AP`` = trec_eval's ``map`` (divide by every relevant clip of the query);
- ``nDCG@10`` = trec_eval's ``ndcg_cut_10`` (graded qrels, 0/1 here; log2 discount).

Queries: trec_eval's rule, which ``evaluate`` keeps: a run is averaged over the queries it answered
that have judgments (here: a caption with an original positive or a resolved pool pair); a judged
query the run did not answer is skipped (counted per run), and the original measure (FIRE's B) is
averaged over the same queries as the corrected one (A), so C = A - B compares like with like.

A measure means its name: each run is scored on everything it ranked, in trec_eval's order (the
caller hands the lists in that order), so "C@10" is C@10 of the run file; a clip with no verdict
counts as not relevant (``UNJUDGED``), and ``Judged@K`` (ir_measures' definition) says how much of
each top K had a verdict. A caller that cuts runs at a depth names the cut in every measure
(``measure_label``).
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from xml.sax.saxutils import escape

import numpy as np
from scipy import stats

from .judged import JUDGED_THRESHOLD, not_comparable_note

__all__ = ["clip_measure_names", "measure_label", "judged_cutoffs", "judged_per_query", "UNJUDGED", "clip_per_query", "moment_measure_names", "moment_per_query", "bootstrap_interval", "bootstrap_intervals", "run_cells", "interval_name", "ranks",
           "build_leaderboard", "leaderboard_svg", "leaderboard_csv_rows", "CSV_COLUMNS", "CSV_COLUMN_TITLES",
           "CONVENTIONS", "SHARED_CONVENTIONS", "interval_label", "bootstrap_label", "judged_notes"]

#: How a clip a run ranks without a verdict is scored (the corrected leaderboard's named convention).
UNJUDGED = ("not relevant (trec_eval's convention): a clip a run ranks with no verdict in the corrected qrels "
            "(never pooled, or pooled and not resolved) counts as not relevant")

#: What every leaderboard's A (B + C), ranks and tau mean, clip or moment pool.
SHARED_CONVENTIONS = (
    "FIRE's A (B + C): A = the measure against the corrected positives (original positives plus every pool pair "
    "resolved relevant; a pair not resolved counts as not relevant), B = against the original positives alone, "
    "over the same queries, C = A - B, in percent (C printed as rounded A minus rounded B). Rank 1 = best; tied "
    "values share the best rank ('min'); rank change = original rank - corrected rank (positive: the run moved "
    "up). Kendall's tau-b (scipy.stats.kendalltau) between the runs' original and corrected values of each "
    "measure."
)

CONVENTIONS = SHARED_CONVENTIONS + (
    " Clip measures as trec_eval computes them (C@K = success_K, AP = map, nDCG@10 = ndcg_cut_10) on each run's "
    "whole stored ranking in trec_eval's order (score descending, ties by clip id descending), as `evaluate` "
    "scores the run file; a run is cut at a depth only when the report is asked to, and then every measure's "
    f"name says so. Unjudged clips: {UNJUDGED}. Judged@K = ir_measures' Judged@k against the corrected qrels: "
    "per query the share of the run's first K clips that have a verdict (divided by the list's length when it "
    "holds fewer than K), averaged over the same queries as the measures; its top K is the measures' (ties "
    "broken by clip id descending, trec_eval's rule; ir_measures' own provider breaks ties by id ascending, "
    "so on tied scores the two may name different clips). A run is averaged over the judged "
    "queries it answered (trec_eval's rule, as `evaluate`)."
)


def clip_measure_names(ks: Sequence[int]) -> list[str]:
    return [f"C@{k}" for k in sorted(set(int(k) for k in ks))] + ["AP", "nDCG@10"]


def measure_label(name: str, depth: int | None) -> str:
    """A measure's name as every output prints it: the name alone for a whole run, the cut named
    when runs were cut at ``depth`` ("C@10 (runs cut at depth 5)")."""
    return name if depth is None else f"{name} (runs cut at depth {depth})"


def judged_cutoffs(ks: Sequence[int]) -> list[int]:
    """The K of every Judged@K: each C@K's, and nDCG@10's."""
    return sorted(set(int(k) for k in ks) | {10})


def judged_per_query(ranked: Mapping[Hashable, Sequence[Hashable]], qrels: Mapping[Hashable, Mapping[Hashable, int]],
                     queries: Sequence[Hashable], cutoffs: Sequence[int]) -> dict[int, np.ndarray]:
    """Judged@k on each of ``queries``, as ir_measures' judged provider computes it: the share of
    the first k clips of ``ranked[q]`` (rank order, a repeat counted once) that ``qrels[q]`` holds
    with any grade, divided by the number of clips looked at, min(k, list length); 0 for an empty
    list. Averaging over the scored queries gives ir_measures' aggregate."""
    out = {k: np.zeros(len(queries)) for k in cutoffs}
    for i, q in enumerate(queries):
        clips = list(dict.fromkeys(ranked.get(q, ())))
        judged = qrels.get(q) or {}
        for k in cutoffs:
            top = clips[:k]
            if top:
                out[k][i] = sum(1 for c in top if c in judged) / len(top)
    return out


def _trec_eval_name(name: str) -> str:
    if name.startswith("C@"):
        return f"success_{name[2:]}"
    return {"AP": "map", "nDCG@10": "ndcg_cut_10"}[name]


def clip_per_query(ranked: Mapping[Hashable, Sequence[Hashable]], qrels: Mapping[Hashable, Mapping[Hashable, int]],
                   queries: Sequence[Hashable], measures: Sequence[str]) -> dict[str, np.ndarray]:
    """Each measure's value on each of ``queries`` (in that order), as ``evaluate`` scores a run
    file: ``ranked[q]`` in rank order (a clip repeated counts at its first rank), ``qrels[q]``
    clip -> grade (0 = judged not relevant). A query trec_eval gives no value (no relevant clip
    in ``qrels``) scores 0, as ``evaluate`` averages it.

    The C trec_eval through pytrec_eval, as ``evaluate`` calls it through ir_measures (whose
    pytrec_eval provider runs the same evaluator; called directly here, 5x faster at 27,000
    queries)."""
    import pytrec_eval

    queries = [str(q) for q in queries]
    ranked = {str(q): clips for q, clips in ranked.items()}
    qrels = {str(q): judged for q, judged in qrels.items()}
    te_run: dict[str, dict[str, float]] = {}
    for q in queries:
        clips = [str(c) for c in dict.fromkeys(ranked.get(q, ()))]
        # Strictly decreasing scores keep the rank order whatever trec_eval's tie rule.
        te_run[q] = {c: float(len(clips) - i) for i, c in enumerate(clips)}
    te_qrels = {q: {str(c): int(g) for c, g in (qrels.get(q) or {}).items()} for q in queries}
    ks = sorted(int(m[2:]) for m in measures if m.startswith("C@"))
    wanted = ({"success." + ",".join(map(str, ks))} if ks else set()) | (
        {"map"} if "AP" in measures else set()) | ({"ndcg_cut.10"} if "nDCG@10" in measures else set())
    out = {m: np.zeros(len(queries)) for m in measures}
    if queries and wanted:
        results = pytrec_eval.RelevanceEvaluator(te_qrels, wanted).evaluate(te_run)
        names = {m: _trec_eval_name(m) for m in measures}
        for i, q in enumerate(queries):
            values = results.get(q)
            if values:
                for m in measures:
                    out[m][i] = float(values.get(names[m], 0.0))
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


def bootstrap_label(confidence: float) -> str:
    """The bootstrap interval in a few words, for headers and legends ("95% bootstrap interval")."""
    return f"{100 * confidence:g}% bootstrap interval"


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


def judged_notes(result: Mapping, run: Mapping) -> dict[str, str]:
    """Each measure of ``run`` whose Judged@K (``result["judged_of"]``) is below the leaderboard's
    threshold (``result["judged_threshold"]``; the declared default for a result stored before it)
    -> the flag naming the threshold ("not comparable with the leaderboard (Judged@10 < 0.9)")."""
    threshold = result.get("judged_threshold", JUDGED_THRESHOLD.default)
    judged = run.get("judged") or {}
    notes = {}
    for m, name in (result.get("judged_of") or {}).items():
        note = not_comparable_note(name, judged.get(name), threshold)
        if note:
            notes[m] = note
    return notes


def build_leaderboard(*, measures: Sequence[str], runs: Sequence[Mapping], interval: str, decimals: int = 1,
                      conventions: str = CONVENTIONS, judged_threshold: float = JUDGED_THRESHOLD.default,
                      **extra) -> dict:
    """The leaderboard from each run's cells. ``runs``: ``{"run", "run_id", "original": {m: {"value",
    "low", "high"}}, "corrected": {...}, "judged": {Judged@K name: share}, ...}`` (other keys kept).
    Adds per run the ranks, the rank change and FIRE's ``A (B + C)`` per measure, the measures
    flagged not comparable (``not_comparable``: measure -> flag, where the run's Judged@K of the
    measure's cutoff, ``extra["judged_of"]``, is below ``judged_threshold``), and Kendall's tau-b
    per measure."""
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
    result = {"measures": measures, "interval": interval, "runs": out_runs, "kendall_tau": tau,
              "kendall_tau_p_value": tau_p, "conventions": conventions, "judged_threshold": judged_threshold, **extra}
    for r in out_runs:
        r["not_comparable"] = judged_notes(result, r)
    return result


def cell(value: float, interval: tuple[float, float]) -> dict:
    return {"value": _finite(value), "low": _finite(interval[0]), "high": _finite(interval[1])}


# --------------------------------------------------------------------------------------------
# the leaderboard as CSV rows and as an SVG chart

CSV_COLUMNS = ["run", "run_id", "measure", "original", "original_low", "original_high", "corrected",
               "corrected_low", "corrected_high", "fire", "rank_original", "rank_corrected", "rank_change",
               "kendall_tau", "judged_flag", "judged_measure", "judged"]

#: Each CSV column in words, for pages that show the rows (the field name goes in a tooltip).
CSV_COLUMN_TITLES = {
    "run": "Run", "run_id": "Run id", "measure": "Measure",
    "original": "Original positives (B), 0-1", "original_low": "Original: interval low",
    "original_high": "Original: interval high", "corrected": "Corrected positives (A), 0-1",
    "corrected_low": "Corrected: interval low", "corrected_high": "Corrected: interval high",
    "fire": "A (B + C): corrected (original + change), %", "rank_original": "Rank, original",
    "rank_corrected": "Rank, corrected", "rank_change": "Rank change (+ = moved up)",
    "kendall_tau": "Kendall's tau-b, original vs corrected order",
    "judged_flag": "Flag: Judged@K below the threshold, not comparable with the leaderboard",
    "judged_measure": "Judged@K of this cutoff",
    "judged": "Judged@K: share of the top K with a verdict, 0-1",
}


def leaderboard_csv_rows(result: Mapping) -> list[list]:
    """Header row, then one row per run and measure (runs in corrected order of the first measure);
    each row carries the Judged@K of its measure's cutoff (C@K: Judged@K, nDCG@10: Judged@10; none
    for AP, which has no cutoff, nor for results stored before Judged@K existed) and, in
    ``judged_flag``, the flag of a Judged@K below the threshold (empty when comparable)."""
    rows: list[list] = [list(CSV_COLUMNS)]
    judged_of = result.get("judged_of") or {}
    notes = {r["run"]: judged_notes(result, r) for r in result["runs"]}
    for m in result["measures"]:
        judged_name = judged_of.get(m)
        for r in sorted(result["runs"], key=lambda r: (r["rank_corrected"][m], r["run"])):
            o, c = r["original"][m], r["corrected"][m]
            rows.append([r["run"], r.get("run_id"), m, o["value"], o["low"], o["high"], c["value"], c["low"],
                         c["high"], r["fire"][m], r["rank_original"][m], r["rank_corrected"][m],
                         r["rank_change"][m], result["kendall_tau"].get(m), notes[r["run"]].get(m), judged_name,
                         (r.get("judged") or {}).get(judged_name) if judged_name else None])
    return rows


def interval_label(result: Mapping, side: str) -> str:
    """The interval of one side in a few words ("95% bootstrap interval"), for headers and the
    chart's legend; the full description is ``result["interval"]``."""
    labels = result.get("interval_labels") or {}
    return labels.get(side) or "interval"


# The chart's geometry, in user units of a viewBox 960 wide: pages scale it to the card's width (the
# leaderboard-chart CSS rule), so at 1280 px the 13-unit text renders at 13 px or more.
_WIDTH = 960
_FONT = 13
_LABEL = 210       # run names, right-aligned before the plot
_PLOT = 560        # the 0-100 scale
_JUDGED = 24       # gap before the Judged@K column
_ROW = 24          # one run's band (two interval bars)
_HEAD = 26         # a panel's title
_AXIS = 24         # a panel's tick labels
_LEGEND = 70       # the legend above the panels
_GREY, _BLUE = "#777", "#1f5fbf"


def _fmt(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _legend(result: Mapping) -> list[str]:
    """Grey and blue, dot and bar, said on the chart itself."""
    original, corrected = interval_label(result, "original"), interval_label(result, "corrected")
    bars = (f"bar = {original}" if original == corrected
            else f"bar = interval (original: {original}; corrected: {corrected})")
    parts = ['<g class="legend">']
    for i, (colour, text) in enumerate(((_GREY, "original positives (B)"),
                                        (_BLUE, "corrected positives (A): original + pool pairs judged relevant"))):
        y = 16 + 20 * i
        parts.append(f'<line x1="0" y1="{y - 4}" x2="28" y2="{y - 4}" stroke="{colour}" stroke-width="3"/>'
                     f'<circle cx="14" cy="{y - 4}" r="4.5" fill="{colour}"/>'
                     f'<text x="38" y="{y}">{escape(text)}</text>')
    parts.append(f'<text x="0" y="{16 + 40}" fill-opacity="0.8">{escape(f"dot = value; {bars}; percent")}</text></g>')
    return parts


def leaderboard_svg(result: Mapping) -> str:
    """A standalone SVG: a legend, then one panel per measure, stacked, one band per run in the
    corrected order of that measure, the original value and interval in grey and the corrected one
    in blue on a 0-100 scale, and the run's Judged@K of that cutoff on the right, marked "(!)" when
    below the threshold (the flag on hover, the mark explained at the foot). No width or
    height: a viewBox, so a page scales it to its container (CSS rule leaderboard-chart). Text is
    escaped, so pages may insert it as it is; text and grid take ``currentColor``, so the chart
    follows a page's light or dark theme and a downloaded file reads black on white."""
    measures = list(result["measures"])
    runs = list(result["runs"])
    judged_of = result.get("judged_of") or {}
    notes = {r["run"]: judged_notes(result, r) for r in runs}
    n = len(runs)
    panel = _HEAD + n * _ROW + _AXIS
    height = _LEGEND + len(measures) * panel + 24
    title = (f"Corrected leaderboard: original (grey) and corrected (blue) values with intervals "
             f"({result['interval']}); unjudged clips: {result.get('unjudged') or 'not relevant'}")
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="leaderboard-chart" role="img" '
             f'viewBox="0 0 {_WIDTH} {height}" preserveAspectRatio="xMinYMin meet" font-family="sans-serif" '
             f'font-size="{_FONT}" fill="currentColor"><title>{escape(title)}</title>', *_legend(result)]
    x0, x_judged = _LABEL, _LABEL + _PLOT + _JUDGED
    for p, m in enumerate(measures):
        top = _LEGEND + p * panel
        tau = result["kendall_tau"].get(m)
        head = f"{m}: Kendall's tau-b " + (f"{tau:.2f}" if tau is not None else "undefined (fewer than two runs, "
                                                                               "or an ordering all tied)")
        parts.append(f'<text x="0" y="{top + 17}" font-weight="bold" font-size="{_FONT + 1}">{escape(head)}</text>')
        judged_name = judged_of.get(m)
        if judged_name:
            parts.append(f'<text x="{x_judged}" y="{top + 17}" font-weight="bold">{escape(judged_name)}</text>')
        bottom = top + _HEAD + n * _ROW
        for tick in (0, 25, 50, 75, 100):
            x = x0 + _PLOT * tick / 100
            parts.append(f'<g class="tick"><line x1="{x:.1f}" y1="{top + _HEAD - 4}" x2="{x:.1f}" y2="{bottom}" '
                         f'stroke="currentColor" stroke-opacity="0.2"/><text x="{x:.1f}" y="{bottom + 16}" '
                         f'text-anchor="middle" fill-opacity="0.8">{tick}</text></g>')
        ordered = sorted(runs, key=lambda r: (r["rank_corrected"][m], r["run"]))
        for i, r in enumerate(ordered):
            y = top + _HEAD + i * _ROW
            parts.append(f'<text x="{x0 - 8}" y="{y + 15}" text-anchor="end">{escape(str(r["run"]))}</text>')
            for offset, side, colour in ((7, "original", _GREY), (16, "corrected", _BLUE)):
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
                             f'stroke="{colour}" stroke-width="3"/>'
                             f'<circle cx="{xv:.1f}" cy="{y + offset}" r="4.5" fill="{colour}"/></g>')
            judged = (r.get("judged") or {}).get(judged_name) if judged_name else None
            note = notes[r["run"]].get(m)
            if judged is not None and note:
                # Flagged: the mark on the chart, the flag itself (naming the threshold) on hover.
                parts.append(f'<text class="judged not-comparable" x="{x_judged}" y="{y + 15}" font-weight="bold">'
                             f'<title>{escape(f"{m}: {note}")}</title>{_fmt(judged)}% judged (!)</text>')
            elif judged is not None:
                parts.append(f'<text class="judged" x="{x_judged}" y="{y + 15}">{_fmt(judged)}% judged</text>')
    unjudged = ("Corrected values: the judging estimates of a sampled pool." if result.get("estimated", result.get("sampled"))
                else "Unjudged pairs count as not relevant.")
    threshold = result.get("judged_threshold", JUDGED_THRESHOLD.default)
    flagged = (f" (!) = Judged@K below {threshold:g}: not comparable with the leaderboard."
               if any(notes.values()) else "")
    parts.append(f'<text x="0" y="{height - 6}" fill-opacity="0.8">Runs in the corrected order of each measure. '
                 f'{unjudged}{flagged}</text></svg>')
    return "".join(parts)
