"""The machine_judge report page (/reports/<id>/): kappa with its interval, the confusion matrix,
per-query disagreement, tau and tau_AP with intervals, headers in words; for a pool's judge and a
judgment set's. Figures worked by hand in tests/annotation/services/machine_judges/."""
from __future__ import annotations

import csv
import io
from html.parser import HTMLParser

import pytest
from django.test import Client

from annotation.services.machine_judges.imports import machine_judge_import
from annotation.services.machine_judges.reports import machine_judge_report_create
from tests.annotation.services.machine_judges.world import (SET_MACHINE, machine_file, resolve_by_hand, small_pool,
                                                            small_set)
from tests.factories import make_user

pytestmark = pytest.mark.django_db


class _Tables(HTMLParser):
    """section id -> (title, header cells, body rows) of a report page."""

    def __init__(self):
        super().__init__()
        self.tables, self._name, self._cell, self._row, self._in = {}, None, None, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h2" and (attrs.get("id") or "").startswith("table-"):
            self._name = attrs["id"][len("table-"):]
            self.tables[self._name] = ["", [], []]
            self._in = "title"
        elif self._name and tag in ("th", "td"):
            self._cell = ""
        elif self._name and tag == "tr":
            self._row = []

    def handle_endtag(self, tag):
        if tag == "h2":
            self._in = None
        elif self._name and tag in ("th", "td") and self._cell is not None:
            self._row.append(self._cell.strip())
            self._cell = None
        elif self._name and tag == "tr" and self._row is not None:
            header, rows = self.tables[self._name][1], self.tables[self._name][2]
            (rows if header else header).extend([self._row] if header else self._row)
            self._row = None
        elif tag == "table":
            self._name = None

    def handle_data(self, data):
        if self._in == "title":
            self.tables[self._name][0] += data
        elif self._cell is not None:
            self._cell += data


def _page_tables(report, role="researcher") -> dict:
    client = Client()
    client.force_login(make_user(role))
    response = client.get(f"/reports/{report.pk}/")
    assert response.status_code == 200
    parser = _Tables()
    parser.feed(response.content.decode())
    return parser.tables


def _row(rows, first):
    return next(r for r in rows if r[0] == first)


def test_pool_judge_report_page_shows_kappa_confusion_queries_and_tau(tmp_path):
    pool, _ = small_pool()
    resolve_by_hand(pool)
    judge = machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path), name="gpt", pool=pool)
    report = machine_judge_report_create(judge=judge, params={"n_boot": 200, "seed": 2})
    tables = _page_tables(report)
    assert list(tables) == ["summary", "kappa", "confusion", "per_query", "system_ranking", "runs", "calibration"]
    assert _row(tables["calibration"][2], "0.9")[2] == "4"
    client = Client()
    client.force_login(make_user("researcher"))
    page = client.get(f"/reports/{report.pk}/").content.decode()
    assert 'aria-labelledby="reliability-title"' in page and "ECE 0.360" in page
    assert page.count('<circle class="dot"') == 2  # the two non-empty bins
    for _, headers, _ in tables.values():
        assert headers and not [h for h in headers if "_" in h], headers  # words, not names

    kappa = report.result["kappa"]
    low, high = kappa["interval"]
    summary = tables["summary"][2]
    # kappa = 2/7 (test_machine_judge_report.py), shown with its interval
    assert _row(summary, "Cohen's kappa [95% interval, bootstrap percentile over pairs]")[1] == \
        f"0.286 [{low:.3f}, {high:.3f}]"
    assert _row(summary, "machine judge")[1] == "gpt (gpt-judge, umbrela-v1)"
    k_title, k_headers, k_rows = tables["kappa"]
    assert k_headers[:3] == ["Cohen's kappa", "Cohen's kappa, 95% bootstrap interval over pairs: low",
                             "Cohen's kappa, 95% bootstrap interval over pairs: high"]
    assert k_rows == [["0.2857", f"{low:.4g}", f"{high:.4g}", "0.6", "0.44", "5", "200", "0.95"]]

    # Rows human, columns machine: [[1, 2], [0, 2]]
    c_title, c_headers, c_rows = tables["confusion"]
    assert c_headers == ["Human label", "Machine: not relevant", "Machine: relevant", "Total"]
    assert c_rows == [["not relevant", "1", "2", "3"], ["relevant", "0", "2", "2"], ["total", "1", "4", "5"]]

    q_headers, q_rows = tables["per_query"][1:]
    assert q_headers == ["Caption id", "Pairs", "Disagreements", "Disagreement rate", "Relevant (human)",
                         "Relevant (machine)"]
    assert [r[:3] for r in q_rows] == [["q2", "2", "1"], ["q1", "3", "1"]]

    ranking = report.result["system_ranking"]
    s_title, s_headers, s_rows = tables["system_ranking"]
    assert s_headers[:4] == ["Statistic", "Value", "95% bootstrap interval over queries: low",
                             "95% bootstrap interval over queries: high"]
    t_low, t_high = ranking["tau_interval"]
    a_low, a_high = ranking["tau_ap_interval"]
    assert _row(s_rows, "Kendall's tau-b")[1:4] == ["-1", f"{t_low:.4g}", f"{t_high:.4g}"]
    assert _row(s_rows, "tau_AP")[1:4] == ["-1", f"{a_low:.4g}", f"{a_high:.4g}"]
    assert _row(summary, "tau_AP, machine ranking against the human one [95% interval]")[1].startswith("-1.000 [")
    # People rank B first (19/24 vs 1), the machine A (1 vs 5/6).
    assert tables["runs"][2] == [["A", "0.7917", "2", "1", "1"], ["B", "1", "1", "0.8333", "2"]]


def test_set_judge_report_page_and_its_csv(tmp_path):
    pool, _ = small_pool()
    judgment_set = small_set(pool.dataset)
    judge = machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path, SET_MACHINE), name="vlm",
                                 judgment_set=judgment_set)
    report = machine_judge_report_create(judge=judge, params={"n_boot": 100, "depth": 3})
    tables = _page_tables(report, role="admin")
    # kappa = 1/6 over [[1, 1], [1, 2]] (test_machine_judge_set_report.py)
    assert _row(tables["summary"][2], "human side")[1] == "the judgment set's verdicts"
    assert tables["kappa"][2][0][0] == "0.1667"
    assert tables["confusion"][2][:2] == [["not relevant", "1", "1", "2"], ["relevant", "1", "2", "3"]]
    assert _row(tables["system_ranking"][2], "tau_AP")[1] == "1"
    client = Client()
    client.force_login(make_user("researcher"))
    response = client.get(f"/api/v1/reports/{report.pk}/csv/?table=confusion")
    body = b"".join(response.streaming_content if response.streaming else [response.content]).decode()
    assert list(csv.reader(io.StringIO(body)))[:3] == [
        ["human_label", "machine_label_not_relevant", "machine_label_relevant", "total"],
        ["not relevant", "1", "1", "2"], ["relevant", "1", "2", "3"]]
