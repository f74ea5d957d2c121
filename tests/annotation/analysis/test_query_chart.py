"""Per-query summary (median / best over runs) and the standalone SVG chart."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from annotation.analysis.query_chart import (
    per_query_summary,
    query_sort_key,
    render_per_query_chart_svg,
)

SVG = "{http://www.w3.org/2000/svg}"

SCORES = {
    "runA": {"1101": 0.10, "1102": 0.50, "1110": 0.90},
    "runB": {"1101": 0.30, "1102": 0.40, "1110": 0.20},
    "runC": {"1101": 0.20, "1102": 0.60},  # no score for 1110 -> 0
}


def test_per_query_summary_median_and_best():
    s = per_query_summary(SCORES)
    assert list(s) == ["1101", "1102", "1110"]
    assert s["1101"].median == pytest.approx(0.20) and s["1101"].best == pytest.approx(0.30)
    assert s["1101"].best_runs == ("runB",)
    assert s["1102"].median == pytest.approx(0.50) and s["1102"].best == pytest.approx(0.60)
    assert s["1110"].median == pytest.approx(0.20) and s["1110"].best == pytest.approx(0.90)
    assert s["1110"].n_runs == 3


def test_per_query_summary_missing_runs_can_be_skipped_and_even_median():
    s = per_query_summary(SCORES, missing=None)
    assert s["1110"].n_runs == 2
    assert s["1110"].median == pytest.approx(0.55)  # mean of the middle two (0.2, 0.9)


def test_per_query_summary_ties_and_nan():
    s = per_query_summary({"a": {"q": 0.5}, "b": {"q": 0.5}, "c": {"q": 0.1}})
    assert s["q"].best_runs == ("a", "b")
    with pytest.raises(ValueError, match="NaN"):
        per_query_summary({"a": {"q": math.nan}})


def test_natural_query_order():
    assert sorted(["q10", "q2", "q1"], key=query_sort_key) == ["q1", "q2", "q10"]


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg.encode("utf-8"))
    assert root.tag == f"{SVG}svg"
    return root


def test_svg_parses_and_has_one_dot_per_query_and_a_legend():
    summary = per_query_summary(SCORES)
    svg = render_per_query_chart_svg("runA", summary, SCORES["runA"], title="AVS 2024: runA")
    root = _parse(svg)
    assert root.get("width") and root.get("viewBox")
    dots = root.findall(f".//{SVG}circle[@class='run-score']")
    assert [d.get("data-query") for d in dots] == ["1101", "1102", "1110"]
    boxes = root.findall(f".//{SVG}rect[@class='best-score']")
    assert len(boxes) == 3
    assert root.find(f".//{SVG}polyline[@class='median']") is not None
    legend = root.find(f".//{SVG}g[@class='legend']")
    assert legend is not None
    legend_text = [t.text for t in legend.iter(f"{SVG}text")]
    assert legend_text == ["runA", "median of runs", "best run"]
    title = root.find(f"{SVG}title")
    assert title is not None and title.text == "AVS 2024: runA"
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "query-label"]
    assert labels == ["1101", "1102", "1110"]
    y_labels = [t.text for t in root.find(f".//{SVG}g[@class='y-axis']").iter(f"{SVG}text")]
    assert "0.0" in y_labels and "1.0" in y_labels and "infAP" in y_labels


def test_dot_heights_follow_scores():
    summary = per_query_summary(SCORES)
    root = _parse(render_per_query_chart_svg("runA", summary, SCORES["runA"]))
    cy = {d.get("data-query"): float(d.get("cy"))
          for d in root.findall(f".//{SVG}circle[@class='run-score']")}
    # SVG y grows downwards: a higher score is drawn higher up.
    assert cy["1110"] < cy["1102"] < cy["1101"]
    y_ticks = {t.text: float(t.get("y")) for t in
               root.find(f".//{SVG}g[@class='y-axis']").iter(f"{SVG}text") if t.text[0].isdigit()}
    # 0.1 lies a tenth of the way from the 0.0 tick to the 1.0 tick (labels sit 4 px lower).
    zero, one = y_ticks["0.0"] - 4, y_ticks["1.0"] - 4
    assert cy["1101"] == pytest.approx(zero + 0.1 * (one - zero), abs=0.1)


def test_svg_escapes_ids_and_handles_missing_scores():
    scores = {"r<&>": {'q"1': 0.4, "q<2>": 0.7}, "other": {'q"1': 0.2}}
    summary = per_query_summary(scores)
    root = _parse(render_per_query_chart_svg("r<&>", summary, scores["r<&>"]))
    assert len(root.findall(f".//{SVG}circle[@class='run-score']")) == 2
    other = _parse(render_per_query_chart_svg("other", summary, scores["other"]))
    dots = other.findall(f".//{SVG}circle[@class='run-score']")
    assert {d.get("data-query") for d in dots} == {'q"1', "q<2>"}


def test_svg_with_many_queries_grows_wider_and_empty_summary_still_renders():
    scores = {"a": {f"t{i}": i / 100 for i in range(80)}, "b": {f"t{i}": 0.5 for i in range(80)}}
    root = _parse(render_per_query_chart_svg("a", per_query_summary(scores), scores["a"]))
    assert float(root.get("width")) > 80 * 20
    assert len(root.findall(f".//{SVG}circle[@class='run-score']")) == 80
    empty = _parse(render_per_query_chart_svg("a", {}, {}))
    assert empty.findall(f".//{SVG}circle[@class='run-score']") == []
