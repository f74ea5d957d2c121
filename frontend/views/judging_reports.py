"""The judging simulation report's charts on the report page: its four SVG files inlined.

The SVG is our own (annotation/analysis/judging/simulation.curves_svg), but it is stored as a file
and put into the page unescaped, so it passes an allowlist first: drawing elements and
presentation attributes only; no script, event handler, link, foreign object or external
reference; `style` attributes become presentation attributes (the page's CSP refuses inline
styles, which would otherwise drop the colours); ids are prefixed per chart, so four charts on
one page cannot collide. Anything else is dropped, never escaped into the page.
"""
from __future__ import annotations

import re
from html import escape
from xml.etree.ElementTree import Element

from defusedxml import ElementTree as SafeTree
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from annotation.models import Report
from annotation.services.judging.simulation import CHART_NAMES, CHART_TITLES, CSV_NAME, judging_report_file

SVG_NS = "http://www.w3.org/2000/svg"
ELEMENTS = {"svg", "g", "title", "desc", "line", "polyline", "polygon", "path", "rect", "circle", "ellipse", "text",
            "tspan", "defs", "clipPath", "linearGradient", "stop"}
PRESENTATION = {"fill", "fill-opacity", "stroke", "stroke-width", "stroke-dasharray", "stroke-opacity",
                "stroke-linecap", "stroke-linejoin", "opacity", "font-size", "font-family", "font-weight",
                "font-style", "text-anchor", "dominant-baseline", "clip-path", "stop-color", "stop-opacity",
                "shape-rendering", "vector-effect"}
ATTRIBUTES = PRESENTATION | {"viewBox", "width", "height", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx",
                             "ry", "d", "points", "transform", "class", "id", "role", "aria-label",
                             "aria-labelledby", "aria-hidden", "preserveAspectRatio", "offset", "dx", "dy",
                             "clipPathUnits", "gradientUnits", "xml:space"}
_LOCAL_REF = re.compile(r"^url\(#([A-Za-z][\w.-]*)\)$")
_SAFE_VALUE = re.compile(r"^[^<>\"'`\\]*$")


class UnsafeSvg(ValueError):
    """The file is not an SVG document this page may show."""


def _local(tag: str) -> str:
    return tag.split("}", 1)[1] if tag.startswith("{") else tag


def _value(name: str, value: str, prefix: str) -> str | None:
    value = value.strip()
    if not _SAFE_VALUE.match(value) or "url(" in value.replace(" ", "") and not _LOCAL_REF.match(value):
        return None
    if re.search(r"(?i)(javascript|expression|@import)", value):
        return None
    if name == "id":
        return f"{prefix}-{value}"
    if name == "aria-labelledby":
        return " ".join(f"{prefix}-{token}" for token in value.split())
    match = _LOCAL_REF.match(value)
    if match:
        return f"url(#{prefix}-{match.group(1)})"
    return value


def _attributes(element: Element, prefix: str) -> list[tuple[str, str]]:
    given = {}
    for declaration in (element.get("style") or "").split(";"):
        name, _, value = declaration.partition(":")
        if name.strip() in PRESENTATION and value.strip():
            given[name.strip()] = value
    for raw, value in element.attrib.items():
        name = "xml:space" if raw == "{http://www.w3.org/XML/1998/namespace}space" else raw
        if name in ATTRIBUTES:
            given[name] = value  # an attribute wins over the same property in style=
    out = []
    for name, value in given.items():
        clean = _value(name, value, prefix)
        if clean is not None:
            out.append((name, clean))
    return out


def _serialise(element: Element, prefix: str, parts: list[str]) -> None:
    tag = _local(element.tag)
    if tag not in ELEMENTS or (element.tag.startswith("{") and not element.tag.startswith(f"{{{SVG_NS}}}")):
        return  # dropped with everything inside it
    attributes = _attributes(element, prefix)
    if tag == "svg" and not parts:
        attributes = [(n, v) for n, v in attributes if n not in ("role",)] + [("role", "img"), ("xmlns", SVG_NS)]
    parts.append(f"<{tag}" + "".join(f' {n}="{escape(v, quote=True)}"' for n, v in attributes) + ">")
    if element.text:
        parts.append(escape(element.text, quote=False))
    for child in element:
        _serialise(child, prefix, parts)
        if child.tail and _local(child.tag) in ELEMENTS:
            parts.append(escape(child.tail, quote=False))
    parts.append(f"</{tag}>")


def svg_sanitised(text: str | bytes, *, prefix: str) -> SafeString:
    """The SVG document reduced to the allowlist above, ready to put into a page."""
    try:
        root = SafeTree.fromstring(text, forbid_dtd=True)
    except Exception as exc:  # noqa: BLE001 - defusedxml and expat raise several kinds; all mean "not shown"
        raise UnsafeSvg(f"not a well-formed SVG document: {exc}") from exc
    if root.tag not in (f"{{{SVG_NS}}}svg", "svg"):
        raise UnsafeSvg(f"the document's root is <{_local(root.tag)}>, not <svg>")
    parts: list[str] = []
    _serialise(root, re.sub(r"[^\w-]", "-", prefix), parts)
    return mark_safe("".join(parts))  # noqa: S308 - built above from allowlisted, escaped parts only


def judging_simulation_charts(report: Report) -> list[dict]:
    """The report's four charts, each sanitised; a chart whose file is missing or refused is named, not shown."""
    charts = []
    for name in CHART_NAMES:
        found = judging_report_file(report=report, name=f"{name}.svg")
        title = CHART_TITLES[name]
        if found is None:
            continue
        try:
            svg = svg_sanitised(found[1], prefix=f"chart-{name}")
        except (UnsafeSvg, FileNotFoundError) as exc:
            charts.append({"title": f"{title} (not shown: {exc})", "svg": ""})
            continue
        charts.append({"title": title, "svg": svg, "name": name})
    return charts


def judging_report_links(report: Report) -> list[dict]:
    """Downloads of the report's files: the curves as CSV and each chart as SVG."""
    if report.kind != "judging_simulation":
        return []
    base = reverse("api:report-file", args=[report.pk])
    names = (report.result or {}).get("files") or [CSV_NAME, *(f"{c}.svg" for c in CHART_NAMES)]
    return [{"name": name, "url": f"{base}?name={name}"} for name in names]
