"""Per-query chart data and a standalone SVG chart, in the style of TRECVID's run reports.

TRECVID hands each team, per run, a chart with one column per query: the run's score (a dot), the
median over all runs (a line) and the best run's score (a box). It shows at a glance where a run is
above or below the field, which a single mean hides. This module computes the per-query median and
maximum over runs and renders that chart as hand-written SVG: no plotting library is needed, the
output is a self-contained XML document that browsers display inline and users can download as an
image file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from xml.sax.saxutils import escape

import numpy as np

__all__ = ["QuerySummary", "per_query_summary", "query_sort_key", "render_per_query_chart_svg"]


@dataclass(frozen=True, slots=True)
class QuerySummary:
    """Median and best score over runs for one query, and which run(s) reached the best."""

    query: str
    median: float
    best: float
    best_runs: tuple[str, ...]
    n_runs: int


def query_sort_key(query: str) -> tuple:
    """Natural order: ``q2`` before ``q10``, numeric TRECVID topic ids in numeric order."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.findall(r"\d+|\D+", query))


def per_query_summary(
    scores: Mapping[str, Mapping[str, float]],
    *,
    missing: float | None = 0.0,
) -> dict[str, QuerySummary]:
    """Median and maximum over runs of ``scores[run][query]``, per query (natural query order).

    A run that has no score for a query counts as ``missing`` (0 by default, as ir_measures scores
    an unanswered query); pass ``missing=None`` to leave such runs out of that query's statistics.
    NaN scores are rejected: they would silently poison the median.
    """
    queries = sorted({q for per_run in scores.values() for q in per_run}, key=query_sort_key)
    out: dict[str, QuerySummary] = {}
    for q in queries:
        vals: list[tuple[str, float]] = []
        for run in sorted(scores):
            v = scores[run].get(q)
            if v is None:
                if missing is None:
                    continue
                v = missing
            v = float(v)
            if math.isnan(v):
                raise ValueError(f"NaN score for run {run!r}, query {q!r}")
            vals.append((run, v))
        arr = np.array([v for _, v in vals])
        best = float(arr.max())
        out[q] = QuerySummary(q, float(np.median(arr)), best,
                              tuple(r for r, v in vals if v == best), len(vals))
    return out


def render_per_query_chart_svg(
    run: str,
    summary: Mapping[str, QuerySummary],
    run_scores: Mapping[str, float],
    *,
    title: str | None = None,
    measure: str = "infAP",
    column_width: int = 28,
    height: int = 420,
    min_width: int = 480,
) -> str:
    """A standalone SVG chart of ``run_scores`` against the ``summary`` of all runs.

    One column per query of ``summary`` (in its order): a filled dot = this run's score (0 when the
    run has no score for the query, matching :func:`per_query_summary`), a dashed line through the
    medians, an open square = the best run's score. Y axis 0..1 with gridlines, query ids along
    x (rotated), a legend and a title. Scores outside [0, 1] are clamped to the plot area; the
    tooltip (``<title>``) of each mark shows the exact value.
    """
    queries = list(summary)
    margin_l, margin_r, margin_t = 56, 20, 64
    longest = max((len(q) for q in queries), default=1)
    margin_b = 48 + min(longest, 24) * 6  # room for the rotated query labels
    plot_w = max(min_width - margin_l - margin_r, column_width * max(len(queries), 1))
    width = margin_l + plot_w + margin_r
    plot_h = height - margin_t - margin_b
    if plot_h < 80:
        raise ValueError(f"height {height} leaves too little room for the plot")
    step = plot_w / max(len(queries), 1)

    def x_of(i: int) -> float:
        return margin_l + step * (i + 0.5)

    def y_of(v: float) -> float:
        return margin_t + plot_h * (1.0 - min(max(v, 0.0), 1.0))

    title = title if title is not None else f"{measure} per query: {run}"
    e = lambda s: escape(str(s), {'"': "&quot;"})  # noqa: E731 - attribute- and text-safe
    parts: list[str] = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
        f'viewBox="0 0 {width:.0f} {height}" font-family="Helvetica, Arial, sans-serif" '
        f'font-size="12" role="img" aria-label="{e(title)}">',
        f"<title>{e(title)}</title>",
        f'<rect x="0" y="0" width="{width:.0f}" height="{height}" fill="#ffffff"/>',
        f'<text class="chart-title" x="{width / 2:.1f}" y="22" text-anchor="middle" '
        f'font-size="15" font-weight="bold">{e(title)}</text>',
    ]
    # Y axis: gridlines and labels every 0.2.
    parts.append('<g class="y-axis">')
    for tick in np.linspace(0.0, 1.0, 6):
        y = y_of(tick)
        parts.append(f'<line x1="{margin_l}" y1="{y:.1f}" x2="{margin_l + plot_w:.1f}" '
                     f'y2="{y:.1f}" stroke="#dddddd" stroke-width="1"/>')
        parts.append(f'<text x="{margin_l - 6}" y="{y + 4:.1f}" text-anchor="end">'
                     f"{tick:.1f}</text>")
    parts.append(f'<line x1="{margin_l}" y1="{margin_t}" x2="{margin_l}" '
                 f'y2="{margin_t + plot_h:.1f}" stroke="#333333"/>')
    parts.append(f'<text class="axis-label" transform="translate(16 {margin_t + plot_h / 2:.1f}) '
                 f'rotate(-90)" text-anchor="middle">{e(measure)}</text>')
    parts.append("</g>")
    # X axis: one tick label per query.
    base = margin_t + plot_h
    parts.append('<g class="x-axis">')
    parts.append(f'<line x1="{margin_l}" y1="{base:.1f}" x2="{margin_l + plot_w:.1f}" '
                 f'y2="{base:.1f}" stroke="#333333"/>')
    for i, q in enumerate(queries):
        x = x_of(i)
        parts.append(f'<text class="query-label" x="{x:.1f}" y="{base + 12:.1f}" '
                     f'text-anchor="end" transform="rotate(-60 {x:.1f} {base + 12:.1f})">'
                     f"{e(q)}</text>")
    parts.append(f'<text class="axis-label" x="{margin_l + plot_w / 2:.1f}" '
                 f'y="{height - 8}" text-anchor="middle">query</text>')
    parts.append("</g>")
    # Median line, then boxes, then dots on top (drawing order = visual priority).
    if queries:
        pts = " ".join(f"{x_of(i):.1f},{y_of(summary[q].median):.1f}"
                       for i, q in enumerate(queries))
        parts.append(f'<polyline class="median" points="{pts}" fill="none" stroke="#d62728" '
                     f'stroke-width="1.5" stroke-dasharray="5 3"/>')
    half = min(step * 0.3, 6.0)
    parts.append('<g class="best">')
    for i, q in enumerate(queries):
        s = summary[q]
        parts.append(f'<rect class="best-score" data-query="{e(q)}" x="{x_of(i) - half:.1f}" '
                     f'y="{y_of(s.best) - half:.1f}" width="{2 * half:.1f}" '
                     f'height="{2 * half:.1f}" fill="none" stroke="#1f77b4" stroke-width="1.5">'
                     f"<title>{e(q)}: best {s.best:.4f} ({e(', '.join(s.best_runs))}), "
                     f"median {s.median:.4f}</title></rect>")
    parts.append("</g>")
    parts.append('<g class="run">')
    for i, q in enumerate(queries):
        v = run_scores.get(q, 0.0)
        v = float(v)
        if math.isnan(v):
            raise ValueError(f"NaN score for run {run!r}, query {q!r}")
        parts.append(f'<circle class="run-score" data-query="{e(q)}" cx="{x_of(i):.1f}" '
                     f'cy="{y_of(v):.1f}" r="{min(step * 0.2, 4.5):.1f}" fill="#111111">'
                     f"<title>{e(q)}: {e(run)} {v:.4f}</title></circle>")
    parts.append("</g>")
    # Legend, top right, above the plot so it never hides a mark. Text width is estimated at
    # 7 px per character (no font metrics without a renderer); long run names are shortened.
    label = run if len(run) <= 40 else run[:39] + "\u2026"
    x_med = 14 + 7 * len(label) + 18
    x_best = x_med + 26 + 7 * len("median of runs") + 18
    legend_w = x_best + 16 + 7 * len("best run")
    lx, ly = max(8.0, width - margin_r - legend_w), 44
    parts.append(f'<g class="legend" transform="translate({lx:.1f} {ly})">')
    parts.append('<circle cx="6" cy="0" r="4" fill="#111111"/>')
    parts.append(f'<text x="14" y="4">{e(label)}</text>')
    parts.append(f'<line x1="{x_med}" y1="0" x2="{x_med + 20}" y2="0" stroke="#d62728" '
                 'stroke-width="1.5" stroke-dasharray="5 3"/>')
    parts.append(f'<text x="{x_med + 26}" y="4">median of runs</text>')
    parts.append(f'<rect x="{x_best}" y="-5" width="10" height="10" fill="none" '
                 'stroke="#1f77b4" stroke-width="1.5"/>')
    parts.append(f'<text x="{x_best + 16}" y="4">best run</text>')
    parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)

