"""Issue 35: every report's page names its columns in words, with the field name (the CSV's column)
as each header's tooltip, and interval columns say which interval they are. One mechanism
(ReportTable.headers / header_cells: a table's own words, else COLUMN_LABELS) for every kind; the
walk covers the tables of every pool kind and of the kinds made from judgment sets."""
from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from annotation.models import PooledPair
from annotation.services.reports.create import report_create
from annotation.services.reports.registry import POOL_REPORT_KINDS, report_tables
from annotation.services.reports.tables import COLUMN_LABELS, ReportTable, interval_words
from tests.api.test_report_kinds_degenerate import _params, _sets_of, no_machine_verdicts, one_run
from tests.factories import make_user

pytestmark = pytest.mark.django_db

#: Names shown as they are: a tool's measure names and the metric labels people look up.
TOOL_NAME = re.compile(r"^(P_\d+|map|bpref|recip_rank|ndcg_cut_\d+|ndcg|Rprec|recall_\d+|success_\d+|"
                       r"[A-Za-z]+@\d+.*|AP.*|C@\d+.*)$")


class _Headers(HTMLParser):
    """table id -> [(header text, title attribute)] of a report page."""

    def __init__(self):
        super().__init__()
        self.tables, self._name, self._th = {}, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h2" and (attrs.get("id") or "").startswith("table-"):
            self._name = attrs["id"][len("table-"):]
            self.tables[self._name] = []
        elif tag == "th" and self._name:
            self._th = ["", attrs.get("title")]

    def handle_endtag(self, tag):
        if tag == "th" and self._th is not None:
            self.tables[self._name].append((self._th[0].strip(), self._th[1]))
            self._th = None
        elif tag == "thead":
            self._name = None

    def handle_data(self, data):
        if self._th is not None:
            self._th[0] += data


def _reports(tmp_path):
    from annotation.services.judging.simulation import judging_simulation_create
    from annotation.services.judgment_sets.scoring import evaluation_report_store, judgment_set_evaluate

    pool = no_machine_verdicts(tmp_path)
    reports = [report_create(pool=pool, kind=kind, params=_params(kind)) for kind in POOL_REPORT_KINDS
               if kind not in ("machine_judge", "ppi_estimates")]
    (tmp_path / "judged").mkdir()
    judged = one_run(tmp_path / "judged")
    reports += [report_create(pool=judged, kind=kind, params=_params(kind)) for kind in ("machine_judge", "ppi_estimates")]
    judgment_set = _sets_of(pool, tmp_path)
    evaluation = judgment_set_evaluate(judgment_set=judgment_set, runs=list(pool.runs.order_by("name")))
    reports.append(evaluation_report_store(evaluation=evaluation, judgment_set=judgment_set, params={}))
    PooledPair.objects.filter(pool=pool, role="pool").exclude(state="resolved").update(
        state="resolved", resolved_label="not_relevant", available=False)
    reports.append(judging_simulation_create(pool=pool))
    return reports


def test_every_table_header_is_words_with_its_field_as_tooltip_and_the_csv_keeps_fields(tmp_path):
    reports = _reports(tmp_path)
    client = Client()
    client.force_login(make_user("researcher"))
    unworded = []
    for report in reports:
        parser = _Headers()
        parser.feed(client.get(f"/reports/{report.pk}/").content.decode())
        for table in report_tables(report=report):
            shown = parser.tables[table.name]
            assert [title for _, title in shown] == table.columns, (report.kind, table.name)
            assert [text for text, _ in shown] == table.headers, (report.kind, table.name)
            response = client.get(f"/api/v1/reports/{report.pk}/csv/", {"table": table.name})
            assert next(csv.reader(io.StringIO(response.content.decode()))) == table.columns
            for words, field in zip(table.headers, table.columns):
                if words == field and not TOOL_NAME.match(field):
                    unworded.append(f"{report.kind}.{table.name}.{field}")
                if not TOOL_NAME.match(field):  # no snake_case field name passed off as words
                    assert not re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", words), (report.kind, table.name, words)
    assert unworded == []


@pytest.mark.parametrize("kind, table, columns", [
    ("agreement", "agreement", {"alpha_low": "Alpha, 95% bootstrap interval: low",
                                "percent_agreement_high": "Percent agreement, 95% bootstrap interval: high"}),
    ("sample_estimate", "runs", {"precision_low": "Precision, 95% Wilson interval (finite pool): low",
                                 "false_negatives_high": "False negatives, 95% Wilson interval (finite pool): high"}),
    ("machine_judge", "kappa", {"kappa_low": "Cohen's kappa, 95% bootstrap interval over pairs: low"}),
    ("machine_judge", "system_ranking", {"low": "95% bootstrap interval over queries: low"}),
])
def test_interval_columns_say_which_interval(tmp_path, kind, table, columns):
    pool = one_run(tmp_path)
    report = report_create(pool=pool, kind=kind, params=_params(kind))
    found = next(t for t in report_tables(report=report) if t.name == table)
    assert {c: w for c, w in zip(found.columns, found.headers) if c in columns} == columns


def test_one_mechanism_a_tables_own_words_then_the_platforms_then_the_name():
    table = ReportTable("t", "T", ["alpha_low", "labels", "P_5"], [], words=interval_words("90% interval", {"alpha": "Alpha"}))
    assert table.header_cells == [("Alpha, 90% interval: low", "alpha_low"), (COLUMN_LABELS["labels"], "labels"),
                                  ("P_5", "P_5")]
