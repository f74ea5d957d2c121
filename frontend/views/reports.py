"""Report pages: the list of reports and exports, and one report as tables in the papers' layout
with hand-written SVG charts (metric deltas per run, agreement per rater, positives against
caption length). The list page also lists every judgment set. Admins start reports, exports,
judgment imports, scoring stored runs against a set, a set's agreement and a set from a pool's
labels there; its script posts to the REST API, so every rule and refusal message is the API's."""
from __future__ import annotations

import json
import math
from dataclasses import replace

from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from annotation import roles
from annotation.analysis.leaderboard import leaderboard_svg
from annotation.models import Dataset, Pool
from annotation.models.judgment_sets import JudgmentSet
from annotation.page_access import page_for
from annotation.query_numbers import id_or_none
from annotation.selectors.exports import artefact_list
from annotation.selectors.reports import judgment_sets_listed, report_list, report_rater_names, scorable_runs
from annotation.services.evaluation.conventions import CONVENTIONS
from annotation.services.exports.labels import EXPORT_FORMATS, export_format_params
from annotation.services.judgment_sets.agreement import LEVELS
from annotation.services.judgment_sets.counts import counts_in_words
from annotation.services.judgment_sets.imports import JUDGMENT_FORMATS, REPEAT_RULES
from annotation.services.judgment_sets.scoring import stored_run_format
from annotation.services.reports.registry import POOL_REPORT_KINDS, REPORT_KINDS, kind_title, report_tables
from frontend.views.judging_reports import judging_report_links, judging_simulation_charts
from frontend.views.param_inputs import param_inputs

BAR_HEIGHT = 18
LABEL_WIDTH = 150
PLOT_WIDTH = 420

#: What each importable format is, shown beside the import form's format choice.
FORMAT_HINTS = {
    "qrels": "TREC qrels, 'query 0 clip relevance' per line (trec_eval). Pools take its verdicts.",
    "sample_eval": "TRECVID stratified qrels, 'topic stratum shot judged relevance' per line (sample_eval.pl, "
                   "infAP). Pools take its verdicts.",
    "fire_json": "FIRE's dataset JSON: captions by text, videos by file name, every rater's label. Pools take "
                 "its verdicts; 'Only FIRE records of dataset' keeps one dataset tag.",
    "rater_labels": "Raw labels, one row per rater and unit (CSV or JSON lines), e.g. TVR-Ranking's: give the "
                    "column mapping and the repeat rule. For agreement, or scored after aggregation; never "
                    "seeds pools.",
    "qvhighlights": "QVHighlights ground truth JSON lines (relevant windows per query), scored as Moment-DETR's "
                    "standalone_eval does.",
    "didemo": "DiDeMo annotations JSON (5-second segments, four annotators), scored as LocalizingMoments' "
              "eval.py does.",
    "tvr": "TVR ground truth JSON lines (a moment per description), scored as TVRetrieval's standalone_eval does.",
}


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return "–" if not math.isfinite(value) else f"{value:.4g}" if abs(value) < 1000 else f"{value:,.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _svg(title: str, width: int, height: int, body: SafeString, chart_id: str) -> SafeString:
    return format_html('<svg class="chart" viewBox="0 0 {} {}" width="{}" height="{}" role="img" '
                       'aria-labelledby="{}-title"><title id="{}-title">{}</title>{}</svg>',
                       width, height, width, height, chart_id, chart_id, title, body)


def _delta_bars(chart_id: str, title: str, rows: list[tuple[str, float, float]]) -> SafeString:
    """Horizontal bars in percent: the original value B, then the change C drawn on from B (green
    when the corrected labels raise it, red hatched back from B when they lower it)."""
    height = 24 + BAR_HEIGHT * 1.6 * len(rows)
    scale = PLOT_WIDTH / 100.0
    parts = [format_html('<line x1="{}" y1="14" x2="{}" y2="{}" class="axis"/>', LABEL_WIDTH, LABEL_WIDTH, height - 4)]
    for tick in (0, 25, 50, 75, 100):
        x = LABEL_WIDTH + tick * scale
        parts.append(format_html('<text x="{}" y="10" class="tick">{}</text>', f"{x:.1f}", tick))
    for i, (label, base, delta) in enumerate(rows):
        y = 18 + i * BAR_HEIGHT * 1.6
        corrected = base + delta
        parts.append(format_html('<text x="{}" y="{}" class="label">{}</text>', LABEL_WIDTH - 6,
                                 f"{y + BAR_HEIGHT * 0.7:.1f}", label))
        low = min(base, corrected)
        parts.append(format_html('<rect class="bar-base" x="{}" y="{}" width="{}" height="{}"><title>{}: original {} '
                                 '</title></rect>', LABEL_WIDTH, f"{y:.1f}", f"{low * scale:.1f}", BAR_HEIGHT, label,
                                 f"{base:.1f}"))
        css = "bar-gain" if delta >= 0 else "bar-loss"
        parts.append(format_html('<rect class="{}" x="{}" y="{}" width="{}" height="{}"><title>{}: {} ({} {} {})'
                                 '</title></rect>', css, f"{LABEL_WIDTH + low * scale:.1f}", f"{y:.1f}",
                                 f"{abs(delta) * scale:.1f}", BAR_HEIGHT, label, f"{corrected:.1f}", f"{base:.1f}",
                                 "+" if delta >= 0 else "-", f"{abs(delta):.1f}"))
        parts.append(format_html('<text x="{}" y="{}" class="value">{}</text>',
                                 f"{LABEL_WIDTH + max(base, corrected) * scale + 4:.1f}",
                                 f"{y + BAR_HEIGHT * 0.7:.1f}", f"{corrected:.1f}"))
    body = format_html_join("", "{}", ((p,) for p in parts))
    return _svg(title, LABEL_WIDTH + PLOT_WIDTH + 60, int(height), body, chart_id)


def _share_bars(chart_id: str, title: str, rows: list[tuple[str, list[tuple[str, float | None]]]]) -> SafeString:
    """Grouped horizontal bars of shares (0-1), one group per row; missing values are left out."""
    series = len(rows[0][1]) if rows else 0
    group = BAR_HEIGHT * (series + 0.6)
    height = 24 + group * len(rows)
    scale = PLOT_WIDTH
    parts = []
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = LABEL_WIDTH + tick * scale
        parts.append(format_html('<text x="{}" y="10" class="tick">{}</text>', f"{x:.1f}", f"{tick:.0%}"))
    for i, (label, values) in enumerate(rows):
        y0 = 18 + i * group
        parts.append(format_html('<text x="{}" y="{}" class="label">{}</text>', LABEL_WIDTH - 6,
                                 f"{y0 + BAR_HEIGHT * 0.7:.1f}", label))
        for j, (name, value) in enumerate(values):
            if value is None:
                continue
            y = y0 + j * BAR_HEIGHT
            parts.append(format_html('<rect class="bar-s{}" x="{}" y="{}" width="{}" height="{}"><title>{} {}: {}'
                                     '</title></rect>', j, LABEL_WIDTH, f"{y:.1f}", f"{value * scale:.1f}",
                                     BAR_HEIGHT - 2, label, name, f"{value:.1%}"))
            parts.append(format_html('<text x="{}" y="{}" class="value">{} {}</text>',
                                     f"{LABEL_WIDTH + value * scale + 4:.1f}", f"{y + BAR_HEIGHT * 0.65:.1f}",
                                     f"{value:.0%}", name))
    body = format_html_join("", "{}", ((p,) for p in parts))
    return _svg(title, LABEL_WIDTH + PLOT_WIDTH + 140, int(height), body, chart_id)


def _length_scatter(chart_id: str, points: list[list[int]], by_length: list[dict]) -> SafeString:
    """Positives per caption against caption length: a circle per (length, positives) whose area
    grows with the number of captions there, and the mean per length as a line."""
    width, height, left, bottom, top = 560, 300, 50, 40, 16
    if not points:
        return _svg("No captions", width, 40, mark_safe(""), chart_id)
    max_len = max(p[0] for p in points)
    min_len = min(p[0] for p in points)
    max_pos = max(1, max(p[1] for p in points))
    most = max(p[2] for p in points)

    def x(length):
        # Half a word of room either side keeps the extreme circles off the axes.
        return left + (length - min_len + 0.5) / (max_len - min_len + 1) * (width - left - 20)

    def y(positives):
        return height - bottom - (positives + 0.25) / (max_pos + 0.5) * (height - bottom - top)

    parts = [format_html('<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"/>', left, height - bottom, width - 10,
                         height - bottom),
             format_html('<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"/>', left, top, left, height - bottom),
             format_html('<text x="{}" y="{}" class="axis-title">caption length (words)</text>', width / 2, height - 6),
             format_html('<text x="12" y="{}" class="axis-title" transform="rotate(-90 12 {})">positives</text>',
                         height / 2, height / 2)]
    for length in sorted({p[0] for p in points}):
        parts.append(format_html('<text x="{}" y="{}" class="tick">{}</text>', f"{x(length):.1f}",
                                 height - bottom + 14, length))
    for value in sorted({0, max_pos // 2, max_pos}):
        parts.append(format_html('<text x="{}" y="{}" class="tick-y">{}</text>', left - 6, f"{y(value) + 4:.1f}",
                                 value))
    for length, positives, captions in points:
        radius = 2 + 8 * math.sqrt(captions / most)
        parts.append(format_html('<circle class="dot" cx="{}" cy="{}" r="{}"><title>{} words, {} positives: {} '
                                 'caption(s)</title></circle>', f"{x(length):.1f}", f"{y(positives):.1f}",
                                 f"{radius:.1f}", length, positives, captions))
    line = " ".join(f"{x(b['length']):.1f},{y(b['mean_positives']):.1f}" for b in by_length)
    parts.append(format_html('<polyline class="mean-line" points="{}"><title>mean positives per length</title>'
                             '</polyline>', line))
    body = format_html_join("", "{}", ((p,) for p in parts))
    return _svg("Positives per caption against caption length", width, height, body, chart_id)


def _reliability_chart(chart_id: str, bins: list[dict]) -> SafeString:
    """The machine judge's reliability curve: observed relevant share (human) against its mean
    probability per bin, a circle per non-empty bin (area = pairs), and the diagonal a calibrated
    judge would follow."""
    size, left, bottom, top = 300, 46, 40, 12
    span = size - left - 12

    def x(v):
        return left + v * span

    def y(v):
        return size - bottom - v * (size - bottom - top)

    filled = [b for b in bins if b["count"]]
    most = max((b["count"] for b in filled), default=1)
    parts = [format_html('<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"/>', left, y(0), x(1), y(0)),
             format_html('<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"/>', left, y(0), left, y(1)),
             format_html('<line x1="{}" y1="{}" x2="{}" y2="{}" class="mean-line" stroke-dasharray="4 3">'
                         '<title>perfect calibration</title></line>', x(0), f"{y(0):.1f}", f"{x(1):.1f}", f"{y(1):.1f}"),
             format_html('<text x="{}" y="{}" class="axis-title">machine probability of relevance</text>',
                         left + span / 2, size - 6),
             format_html('<text x="12" y="{}" class="axis-title" transform="rotate(-90 12 {})">relevant (human)</text>',
                         size / 2, size / 2)]
    for v in (0, 0.5, 1):
        parts.append(format_html('<text x="{}" y="{}" class="tick">{}</text>', f"{x(v):.1f}", y(0) + 14, v))
        parts.append(format_html('<text x="{}" y="{}" class="tick-y">{}</text>', left - 6, f"{y(v) + 4:.1f}", v))
    if filled:
        line = " ".join(f"{x(b['mean_probability']):.1f},{y(b['observed_relevant']):.1f}" for b in filled)
        parts.append(format_html('<polyline class="mean-line" points="{}"><title>reliability curve</title></polyline>',
                                 line))
    for b in filled:
        parts.append(format_html('<circle class="dot" cx="{}" cy="{}" r="{}"><title>{}-{}: {} pairs, mean probability '
                                 '{}, relevant {}</title></circle>', f"{x(b['mean_probability']):.1f}",
                                 f"{y(b['observed_relevant']):.1f}", f"{2 + 8 * math.sqrt(b['count'] / most):.1f}",
                                 f"{b['low']:g}", f"{b['high']:g}", b["count"], f"{b['mean_probability']:.3f}",
                                 f"{b['observed_relevant']:.3f}"))
    body = format_html_join("", "{}", ((p,) for p in parts))
    return _svg("Reliability of the machine judge", size, size, body, chart_id)


def _charts(report) -> list[dict]:
    result = report.result or {}
    charts = []
    if report.kind == "metrics":
        labels = result["metric_labels"]
        for metric in result["metrics"]:
            rows = [(run, result["per_run"][run]["metrics"][metric]["b"], result["per_run"][run]["metrics"][metric]["c"])
                    for run in result["runs"]]
            title = (f"{labels[metric]} in percent: original labels (grey), gain (green) or loss (red) with "
                     f"corrected labels")
            charts.append({"title": title, "svg": _delta_bars(f"delta-{metric}".replace("@", "-"), title, rows)})
        by_length = result["positives_by_length"]
        charts.append({"title": "Positives per caption against caption length: circle area = number of captions, "
                                "line = mean positives per length",
                       "svg": _length_scatter("positives-length", by_length["points"], by_length["by_length"])})
    elif report.kind == "agreement" and result.get("raters"):
        rows = [(f"rater {r['rater']}", [("with resolved", r["agreement_with_resolved"]),
                                         ("on gold", r["gold_accuracy"])]) for r in result["raters"]]
        title = "Agreement per rater: with the resolved label, and accuracy on gold"
        charts.append({"title": title, "svg": _share_bars("raters", title, rows)})
    elif report.kind == "sample_estimate" and result.get("runs"):
        rows = [(run, [("estimate", result["per_run"][run]["precision"]),
                       ("whole pool", result["per_run"][run]["full_pool_precision"])]) for run in result["runs"]]
        title = "Precision of each run's pool pairs: estimate from the sample, and the whole pool where known"
        charts.append({"title": title, "svg": _share_bars("precision", title, rows)})
    elif report.kind == "judgment_set_agreement" and result.get("per_rater"):
        rows = [(f"rater {r['rater']}", [("with majority", r["agreement_with_resolved"])])
                for r in result["per_rater"]]
        title = "Agreement per rater with the majority label of units labelled more than once"
        charts.append({"title": title, "svg": _share_bars("raters", title, rows)})
    elif report.kind == "machine_judge" and (result.get("calibration") or {}).get("ece") is not None:
        calibration = result["calibration"]
        title = (f"Reliability: share of pairs people found relevant against the machine's probability, per bin "
                 f"(circle area = pairs; dashed: perfect calibration). ECE {calibration['ece']:.3f}")
        charts.append({"title": title, "svg": _reliability_chart("reliability", calibration["bins"])})
    elif report.kind == "judging_simulation":
        charts = judging_simulation_charts(report)
    elif report.kind == "corrected_leaderboard" and result.get("runs"):
        # leaderboard_svg escapes every text it writes, so its markup can go in as it is.
        charts.append({"title": f"Original (grey) and corrected (blue) values with intervals: {result['interval']}",
                       "svg": mark_safe(leaderboard_svg(result))})  # noqa: S308
    return charts


def _run_kind_words(run) -> str:
    """What a run offered for scoring is, beside its name: a set scores only runs of its format."""
    if run.scores_file:
        return "score matrix"
    return "ranked clips" if stored_run_format(run) == "trec" else f"{stored_run_format(run)} moments"


def _chosen_pool(request) -> int | None:
    return id_or_none(request.GET.get("pool"))


def _given(fields: list, query, chosen: bool) -> list:
    """The chosen kind's fields with the values a link gives (?kind=machine_judge&judge=3: the
    judge a machine judge's job page offers to measure), else as declared."""
    if not chosen:
        return fields
    return [replace(f, value=query[f.name]) if query.get(f.name) and f.widget != "checkbox" else f for f in fields]


@page_for("admin", "researcher")
def report_index(request):
    is_admin = roles.is_admin(request.user)
    judgment_sets = judgment_sets_listed()
    reports = report_list()[:200]
    context = {"reports": [(r, kind_title(r.kind)) for r in reports],
               "exports": artefact_list()[:200], "is_admin": is_admin,
               "judgment_sets": [(s, counts_in_words(s.counts)) for s in judgment_sets]}
    if is_admin:
        formats = dict(JudgmentSet.Format.choices)
        chosen_kind = request.GET.get("kind") if request.GET.get("kind") in POOL_REPORT_KINDS else None
        context |= {"pools": Pool.objects.select_related("dataset").order_by("dataset__name", "name"),
                    "datasets": Dataset.objects.order_by("name"),
                    # Opened from a pool's page (?pool=): that pool is the one chosen in every form.
                    "chosen_pool": _chosen_pool(request),
                    "chosen_kind": chosen_kind,
                    "kinds": [{"name": kind, "title": kind_title(kind),
                               "fields": _given(param_inputs(REPORT_KINDS[kind].params), request.GET, kind == chosen_kind)}
                              for kind in POOL_REPORT_KINDS],
                    "export_formats": [{"name": fmt, "fields": param_inputs(export_format_params(fmt))}
                                       for fmt in EXPORT_FORMATS],
                    "judgment_formats": [(f, formats[f], FORMAT_HINTS.get(f, "")) for f in JUDGMENT_FORMATS],
                    "repeat_rules": REPEAT_RULES, "levels": LEVELS, "conventions": CONVENTIONS,
                    # Only kept files can be scored or measured; a moment set scores stored moment
                    # runs of its benchmark's format (the API says which run a set cannot score).
                    "score_sets": [s for s in judgment_sets if s.stored_file],
                    "rater_sets": [s for s in judgment_sets
                                   if s.stored_file and s.source_format == JudgmentSet.Format.RATER_LABELS],
                    "runs": [(run, _run_kind_words(run)) for run in scorable_runs() if stored_run_format(run)]}
    return render(request, "frontend/reports/index.html", context)


@page_for("admin", "researcher")
def report_detail(request, report_id: int):
    report = get_object_or_404(report_list(), pk=report_id)
    if report.result is None:
        raise Http404("this report has no result")
    names = report_rater_names(report=report, usernames=roles.is_admin(request.user))
    # Headers in words with the field name (the CSV's column) as their tooltip.
    tables = [{"name": t.name, "title": t.title, "headers": t.header_cells,
               "rows": [[_cell(v) for v in row] for row in t.rows]}
              for t in report_tables(report=report, rater_names=names)]
    result = report.result if isinstance(report.result, dict) else {}
    notes = [v for k, v in result.items() if k.endswith("note") and isinstance(v, str)]
    notes += [v["note"] for v in result.values() if isinstance(v, dict) and isinstance(v.get("note"), str)]
    return render(request, "frontend/reports/detail.html", {
        "report": report, "tables": tables, "charts": _charts(report), "notes": notes,
        "params": json.dumps(report.params, indent=1), "versions": report.versions,
        "raw_result": None if tables else json.dumps(report.result, indent=1)[:200_000],
        "files": judging_report_links(report),
    })
