"""`manage.py agreement` on raw multi-rater label files: the TVR-Ranking excerpt against the
`krippendorff` package called directly with the same repeat rule, a hand-worked file where
first / last / all give different alphas, and refusals."""
from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from io import StringIO
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from django.core.management import CommandError, call_command

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "tvr_ranking_excerpt.csv"
TVR_COLUMNS = "unit=pair_id,rater=worker,value=relevance"


def _agreement(path, *args) -> dict:
    out = StringIO()
    call_command("agreement", "--judgments", str(path), "--judgments-format", "rater_labels", "--json", *args,
                 stdout=out)
    return json.loads(out.getvalue())


def _tvr_rows(labels_per_pair: int | None = None) -> list[tuple[str, str, int]]:
    with FIXTURE.open(newline="") as handle:
        rows = [(r["pair_id"], r["worker"], int(r["relevance"])) for r in csv.DictReader(handle)]
    if labels_per_pair is None:
        return rows
    per_pair = Counter(pair for pair, _, _ in rows)
    return [r for r in rows if per_pair[r[0]] == labels_per_pair]


def _write_tvr(tmp_path, rows) -> Path:
    path = tmp_path / "tvr_subset.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["pair_id", "worker", "relevance"])
        writer.writerows(rows)
    return path


def _package_alpha(rows, *, rule: str, level: str) -> float:
    """Krippendorff's alpha from the package, the repeat rule applied here independently of the
    platform's code: one value per (rater, pair) as raters x units reliability data, or, for
    'all', the units x values counts (a rater may then appear twice in a unit)."""
    pairs = sorted({p for p, _, _ in rows}, key=int)
    column = {p: i for i, p in enumerate(pairs)}
    if rule == "all":
        counts = np.zeros((len(pairs), 5), dtype=int)
        for pair, _, value in rows:
            counts[column[pair], value] += 1
        return krippendorff.alpha(value_counts=counts, value_domain=np.arange(5), level_of_measurement=level)
    cell: dict[tuple[str, str], int] = {}
    for pair, worker, value in rows:  # file order: the last label overwrites, the first is kept by setdefault
        if rule == "last":
            cell[(worker, pair)] = value
        else:
            cell.setdefault((worker, pair), value)
    workers = sorted({w for w, _ in cell})
    data = np.full((len(workers), len(pairs)), np.nan)
    for (worker, pair), value in cell.items():
        data[workers.index(worker), column[pair]] = value
    return krippendorff.alpha(reliability_data=data, value_domain=np.arange(5), level_of_measurement=level)


def _percent_agreement(rows, *, rule: str) -> float:
    values = defaultdict(dict)
    every = defaultdict(list)
    for pair, worker, value in rows:
        every[pair].append(value)
        if rule == "last" or worker not in values[pair]:
            values[pair][worker] = value
    units = every.values() if rule == "all" else [list(v.values()) for v in values.values()]
    multi = [u for u in units if len(u) >= 2]
    return sum(len(set(u)) == 1 for u in multi) / len(multi)


@pytest.mark.parametrize("labels_per_pair", [None, 2, 4])
@pytest.mark.parametrize("level", ["nominal", "ordinal"])
@pytest.mark.parametrize("rule", ["last", "first", "all"])
def test_tvr_ranking_excerpt_matches_the_krippendorff_package(tmp_path, rule, level, labels_per_pair):
    rows = _tvr_rows(labels_per_pair)
    path = FIXTURE if labels_per_pair is None else _write_tvr(tmp_path, rows)
    result = _agreement(path, "--columns", TVR_COLUMNS, "--level", level, "--repeats", rule, "--n-boot", "0")
    assert result["alpha"] == pytest.approx(_package_alpha(rows, rule=rule, level=level), abs=1e-12)
    assert result["percent_agreement"] == pytest.approx(_percent_agreement(rows, rule=rule))
    assert result["units"] == len({p for p, _, _ in rows})
    assert result["labels"] == len(rows)


def test_tvr_ranking_excerpt_counts_and_repeats(tmp_path):
    # The excerpt holds 130 pairs (111 with two labels, 19 with four) by 6 workers; on pairs 92-99
    # workers 1 and 3 labelled the same pair twice: 10 repeated cells, 6 of them with equal labels
    # (92/1 2,2; 92/3 4,4; 97/1 2,2; 98/1 2,2; 99/1 1,1; 99/3 3,3).
    last = _agreement(FIXTURE, "--columns", TVR_COLUMNS, "--level", "ordinal", "--n-boot", "200")
    assert {k: last[k] for k in ("labels", "units", "units_multiply_labelled", "raters", "repeated_cells",
                                 "repeated_cells_identical", "labels_set_aside", "labels_used", "repeats",
                                 "repeats_ordered_by", "level", "binarize_at", "values", "scale")} == {
        "labels": 298, "units": 130, "units_multiply_labelled": 130, "raters": 6, "repeated_cells": 10,
        "repeated_cells_identical": 6, "labels_set_aside": 10, "labels_used": 288, "repeats": "last",
        "repeats_ordered_by": "file order", "level": "ordinal", "binarize_at": None, "values": "numbers",
        "scale": [0, 1, 2, 3, 4]}
    low, high = last["alpha_ci"]
    assert low < last["alpha"] < high
    low, high = last["percent_agreement_ci"]
    assert low <= last["percent_agreement"] <= high
    workers = {r["rater"]: r for r in last["per_rater"]}
    assert [r["rater"] for r in last["per_rater"]] == ["1", "3", "4", "6", "21", "22"]
    assert workers["1"]["labels"] == 65 and workers["1"]["labels_used"] == 60 and workers["1"]["repeated_cells"] == 5
    assert workers["4"]["repeated_cells"] == 0 and workers["4"]["labels"] == workers["4"]["labels_used"] == 70
    every = _agreement(FIXTURE, "--columns", TVR_COLUMNS, "--level", "ordinal", "--repeats", "all", "--n-boot", "0")
    assert every["labels_set_aside"] == 0 and every["labels_used"] == 298 and every["repeated_cells"] == 10
    assert every["alpha"] != pytest.approx(last["alpha"])


def test_binarized_tvr_ranking_excerpt_matches_the_package():
    rows = [(p, w, int(v >= 3)) for p, w, v in _tvr_rows()]
    result = _agreement(FIXTURE, "--columns", TVR_COLUMNS, "--binarize-at", "3", "--n-boot", "0")
    assert result["binarize_at"] == 3 and result["scale"] == [0, 1]
    assert result["alpha"] == pytest.approx(_package_alpha(rows, rule="last", level="nominal"), abs=1e-12)


def test_interval_level_on_the_excerpt_and_on_a_half_point_scale(tmp_path):
    rows = _tvr_rows()
    result = _agreement(FIXTURE, "--columns", TVR_COLUMNS, "--level", "interval", "--n-boot", "0")
    assert result["alpha"] == pytest.approx(_package_alpha(rows, rule="last", level="interval"), abs=1e-12)
    # Values 0, 0.5 and 1.5: interval distances must use the values, not their ranks (ranks would
    # put 1.5 as close to 0.5 as 0.5 is to 0).
    path = tmp_path / "half.csv"
    path.write_text("unit,rater,value\n1,a,0\n1,b,0.5\n2,a,1.5\n2,b,1.5\n3,a,0\n3,b,0\n4,a,0.5\n4,b,1.5\n")
    result = _agreement(path, "--level", "interval", "--n-boot", "0")
    data = np.array([[0, 1.5, 0, 0.5], [0.5, 1.5, 0, 1.5]])
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert result["alpha"] == pytest.approx(expected, abs=1e-12)
    assert result["scale"] == [0, 0.5, 1, 1.5]
    assert _agreement(path, "--level", "ordinal", "--n-boot", "0")["scale"] == [0, 0.5, 1.5]
    # A scale that would need 10,006 grid points (0 to 1000.5 in steps of 0.1) is refused for interval.
    wide = tmp_path / "wide.csv"
    wide.write_text("unit,rater,value\n1,a,0\n1,b,1000.5\n2,a,0.1\n2,b,0\n")
    with pytest.raises(CommandError, match="at most 1001 points; .* from 0 to 1000.5 in steps of 0.1 \\(10,006 points\\)"):
        _agreement(wide, "--level", "interval")
    assert _agreement(wide, "--level", "nominal", "--n-boot", "0")["scale"] == [0, 0.1, 1000.5]


# Hand-worked (the arrays of tests/annotation/analysis/test_repeats.py as a file). Units are
# (query, item) pairs: u0 = q1/v1 ... u5 = q3/v2; raters A and B.
HAND = """query,item,rater,value,time
q1,v1,A,1,1
q1,v1,B,1,2
q1,v2,A,0,3
q1,v2,B,0,4
q2,v1,A,1,20
q2,v1,B,0,6
q2,v1,A,0,10
q2,v2,A,1,8
q2,v2,B,1,9
q2,v2,B,0,11
q3,v1,A,0,12
q3,v1,A,0,12
q3,v2,A,1,14
q3,v2,B,1,15
"""


@pytest.mark.parametrize("rule, alpha, pa, used", [
    # first: u0 (1,1) u1 (0,0) u2 (1,0) u3 (1,1) u5 (1,1); o11 = 6, o00 = 2, o01 = o10 = 1:
    #   D_o = 2/10, D_e = 2*7*3/90, alpha = 1 - 18/42 = 4/7
    ("first", 4 / 7, 4 / 5, 11),
    # last: u2 (B0, A0) u3 (A1, B0); o11 = o00 = 4, o01 = o10 = 1: alpha = 1 - 0.2 * 90/50 = 16/25
    ("last", 16 / 25, 4 / 5, 11),
    # all: u2 (1,0,0), u3 (1,1,0), u4 (0,0) A with themself; o00 = o11 = 5, o01 = o10 = 2:
    #   D_o = 4/14, D_e = 98/182, alpha = 1 - 52/98 = 23/49
    ("all", 23 / 49, 4 / 6, 14),
])
def test_hand_worked_repeats_first_last_all(tmp_path, rule, alpha, pa, used):
    path = tmp_path / "hand.csv"
    path.write_text("\n".join(",".join(line.split(",")[:4]) for line in HAND.splitlines()) + "\n")  # no time
    result = _agreement(path, "--repeats", rule, "--n-boot", "0")
    assert result["alpha"] == pytest.approx(alpha)
    assert result["percent_agreement"] == pytest.approx(pa)
    # Every label counted, whatever the rule: u0, u1, u4 (A twice, 0 and 0) and u5 agree; u2 (1,0,0)
    # and u3 (1,1,0) do not: 4 of the 6 units with two or more labels.
    assert result["percent_agreement_every_label"] == pytest.approx(4 / 6)
    assert result["labels_used"] == used
    assert (result["units"], result["raters"], result["repeated_cells"], result["repeated_cells_identical"]) == (6, 2, 3, 1)
    assert result["repeats_ordered_by"] == "file order"


def test_hand_worked_repeats_follow_the_time_column(tmp_path):
    # A's labels of q2/v1: 1 at time 20, 0 at time 10, so by time the 1 is the last label:
    # u2 (B0, A1) and u3 (A1, B0) disagree: o11 = 4, o00 = 2, o01 = o10 = 2, n1 = 6, n0 = 4;
    # D_o = 4/10, D_e = 48/90, alpha = 1 - 36/48 = 0.25; agreement 3/5.
    path = tmp_path / "hand_timed.csv"
    path.write_text(HAND)
    result = _agreement(path, "--n-boot", "0")
    assert result["repeats_ordered_by"] == "time"
    assert result["alpha"] == pytest.approx(0.25)
    assert result["percent_agreement"] == pytest.approx(3 / 5)
    # Same labels as JSON Lines with ISO 8601 times in another zone: the same order, the same alpha.
    jsonl = tmp_path / "hand_timed.jsonl"
    with jsonl.open("w") as handle:
        for line in HAND.splitlines()[1:]:
            q, item, rater, value, t = line.split(",")
            handle.write(json.dumps({"query": q, "item": item, "rater": rater, "value": int(value),
                                     "time": f"2024-03-01T{int(t):02d}:00:00+02:00"}) + "\n")
    assert _agreement(jsonl, "--n-boot", "0")["alpha"] == pytest.approx(0.25)


def test_text_labels_are_nominal_codes(tmp_path):
    # The hand-worked file with words for the values gives the numeric file's alpha.
    words = {"1": "relevant", "0": "not relevant"}
    path = tmp_path / "words.csv"
    lines = HAND.splitlines()
    path.write_text("query,item,rater,value\n" + "".join(
        ",".join(line.split(",")[:3] + [words[line.split(",")[3]]]) + "\n" for line in lines[1:]))
    result = _agreement(path, "--repeats", "first", "--n-boot", "0")
    assert result["values"] == "labels" and result["scale"] == ["not relevant", "relevant"]
    assert result["alpha"] == pytest.approx(4 / 7)
    with pytest.raises(CommandError, match="the ordinal level needs numeric values"):
        _agreement(path, "--level", "ordinal")
    with pytest.raises(CommandError, match="--binarize-at needs numeric values"):
        _agreement(path, "--binarize-at", "1")


def test_table_output_names_the_repeat_rule_and_the_figures():
    out = StringIO()
    call_command("agreement", "--judgments", str(FIXTURE), "--judgments-format", "rater_labels", "--columns",
                 TVR_COLUMNS, "--level", "ordinal", "--n-boot", "50", stdout=out)
    text = out.getvalue()
    alpha = _package_alpha(_tvr_rows(), rule="last", level="ordinal")
    assert "298 labels, 130 units (130 with two or more labels), 6 raters" in text
    assert "10 (unit, rater) cells labelled more than once, 6 of them identically; rule 'last'" in text
    assert f"Krippendorff's alpha\t{alpha:.4f}\t[" in text
    # Both shares, each under its own name (the excerpt's last-label share and the every-label share).
    last = _agreement(FIXTURE, "--columns", TVR_COLUMNS, "--n-boot", "0")
    every = _agreement(FIXTURE, "--columns", TVR_COLUMNS, "--repeats", "all", "--n-boot", "0")
    assert (f"percent agreement, one label per rater ('last'): units whose raters all agree\t"
            f"{last['percent_agreement']:.4f}\t[") in text
    assert (f"percent agreement, every label counted (repeats included): units whose labels all agree\t"
            f"{every['percent_agreement']:.4f}\n") in text
    assert "\n1\t65\t60\t5\t" in text


def test_a_bad_file_is_refused_with_file_line_and_field_and_no_figure(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("pair_id,worker,relevance\n1,w1,3\n1,w2,x\n2,w1,inf\n")
    out = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("agreement", "--judgments", str(path), "--judgments-format", "rater_labels",
                     "--columns", TVR_COLUMNS, stdout=out)
    assert str(exc.value).splitlines() == [
        "file refused, no figure computed:",
        "  bad.csv, line 3, field 'relevance': 'x' is not a number like the file's first value (line 2); "
        "values are all numbers or all labels",
        "  bad.csv, line 4, field 'relevance': 'inf' is not a finite number (NaN and infinity are refused)",
    ]
    assert out.getvalue() == ""


@pytest.mark.parametrize("args, message", [
    (["--columns", "unit=pair_id,rater"], "--columns expects name=column pairs"),
    (["--columns", "unit=pair_id,rater=worker,value=grade"], "field 'grade': --columns maps value to 'grade'"),
    ([], "no column of the header for query and item \\(or unit\\)"),
])
def test_column_mapping_problems_are_clear(args, message):
    with pytest.raises(CommandError, match=message):
        _agreement(FIXTURE, *args)


def test_a_header_only_file_and_a_missing_file(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("unit,rater,value\n")
    with pytest.raises(CommandError, match="header.csv: the file holds no labels"):
        _agreement(path)
    with pytest.raises(CommandError, match="no such file"):
        _agreement(tmp_path / "missing.csv")


def test_single_labels_only_give_undefined_figures_as_null(tmp_path):
    path = tmp_path / "single.csv"
    path.write_text("unit,rater,value\n1,a,1\n2,b,0\n")
    result = _agreement(path)
    assert result["alpha"] is None and result["percent_agreement"] is None and result["alpha_ci"] == [None, None]
    assert result["units_multiply_labelled"] == 0
