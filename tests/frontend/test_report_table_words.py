"""Issue 14 item 9: report pages show column headers in words and name raters as the reader may
know them (admins by user name, researchers by pseudonym written 'rater N'); CSV downloads keep
the snake_case column names and bare pseudonyms that scripts read."""
from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from annotation.models import RaterProfile
from annotation.selectors.reports import report_rater_names
from annotation.services.reports.registry import report_tables
from annotation.services.reports.tables import COLUMN_LABELS
from annotation.services.reports.create import report_create
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def report(tmp_path):
    return report_create(pool=example_pool(tmp_path), kind="agreement", params={"n_boot": 0})


def _page(role, report):
    client = Client()
    client.force_login(make_user(role))
    return client.get(f"/reports/{report.pk}/").content.decode()


def test_headers_are_words_on_the_page_and_names_in_the_csv(report):
    page = _page("researcher", report)
    assert '<th scope="col" title="multiply_labelled_pairs">Multiply labelled pairs</th>' in page
    assert '<th scope="col" title="agreement_with_resolved">Agreement with resolved</th>' in page
    assert "multiply_labelled_pairs</th>" not in page
    agreement = next(t for t in report_tables(report=report) if t.name == "agreement")
    assert agreement.columns[1] == "multiply_labelled_pairs"
    assert agreement.headers[1] == "Multiply labelled pairs"
    assert not [h for h in agreement.headers if "_" in h]
    admin = Client()
    admin.force_login(make_user("admin"))
    response = admin.get(f"/api/v1/reports/{report.pk}/csv/?table=agreement")
    body = b"".join(response.streaming_content if response.streaming else [response.content]).decode()
    assert next(csv.reader(io.StringIO(body)))[:3] == ["labels", "multiply_labelled_pairs", "pairable_labels"]


def test_a_tool_measure_name_is_shown_as_it_is():
    # trec_eval's names are what people look up; only the platform's own columns are reworded.
    assert "P_5" not in COLUMN_LABELS and "ndcg_cut_10" not in COLUMN_LABELS
    assert COLUMN_LABELS["p_value"] == "p-value"


def test_admins_see_user_names_and_researchers_pseudonyms(report):
    pseudonyms = sorted(r["rater"] for r in report.result["raters"])
    usernames = dict(RaterProfile.objects.filter(pseudonym__in=pseudonyms).values_list("pseudonym", "user__username"))
    assert len(usernames) == len(pseudonyms) > 0

    assert report_rater_names(report=report, usernames=False) == {p: f"rater {p}" for p in pseudonyms}
    assert report_rater_names(report=report, usernames=True) == usernames
    raters = next(t for t in report_tables(report=report, rater_names=usernames) if t.name == "raters")
    assert sorted(row[0] for row in raters.rows) == sorted(usernames.values())
    # Without names (CSV, CLI) the bare pseudonyms stay.
    raters = next(t for t in report_tables(report=report) if t.name == "raters")
    assert sorted(row[0] for row in raters.rows) == pseudonyms

    admin, researcher = _page("admin", report), _page("researcher", report)
    for p, name in usernames.items():
        assert f"<td>{name}</td>" in admin
        assert f"<td>rater {p}</td>" in researcher and f"<td>{name}</td>" not in researcher
        assert f"<td>{p:,}</td>" not in researcher  # not a number with a thousands separator
