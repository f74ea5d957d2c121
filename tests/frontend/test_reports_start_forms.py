"""Issue 39, finding 6: "Reports and exports" opened from a pool's page starts with that pool, and
a report's or an export's parameters are fields built from what each kind or format declares
(services/reports/kinds/*, services/exports/labels.py), not a box of raw JSON."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils.html import escape

from annotation.services.exports.labels import EXPORT_FORMATS, export_format_params
from annotation.services.reports.registry import POOL_REPORT_KINDS, REPORT_KINDS
from tests.factories import make_pool_with_runs, make_user

pytestmark = pytest.mark.django_db


def _admin() -> Client:
    client = Client()
    client.force_login(make_user("admin"))
    return client


def _selected(page: str, select_id: str) -> list[str]:
    select = re.search(rf'<select id="{select_id}"[^>]*>(.*?)</select>', page, re.S).group(1)
    return re.findall(r'<option value="(\d+)" selected>', select)


def _fieldset(page: str, form: str, choice: str) -> str:
    start = page.index(f'id="{form}"')
    return re.search(rf'<fieldset class="sub-fields" data-params-for="{choice}">(.*?)</fieldset>', page[start:], re.S).group(1)


def test_the_pool_page_opens_reports_with_its_pool_chosen():
    first, _ = make_pool_with_runs()
    second, _ = make_pool_with_runs()
    admin = _admin()
    pool_page = admin.get(f"/admin-ui/pools/{second.pk}/").content.decode()
    assert f'href="/reports/?pool={second.pk}">Reports and exports</a>' in pool_page

    page = admin.get(f"/reports/?pool={second.pk}").content.decode()
    for select in ("report-pool", "export-pool", "pool-set-pool"):
        assert _selected(page, select) == [str(second.pk)], select
    # Without a pool asked for, the browser's own first choice stands.
    assert _selected(admin.get("/reports/").content.decode(), "report-pool") == []
    assert _selected(admin.get("/reports/?pool=x").content.decode(), "report-pool") == []


def test_parameters_are_fields_of_each_kinds_declarations():
    make_pool_with_runs()
    page = _admin().get("/reports/").content.decode()
    assert "Parameters (JSON" not in page and 'name="params"' not in page
    for kind in POOL_REPORT_KINDS:
        fields = _fieldset(page, "report-form", kind)
        for name, spec in REPORT_KINDS[kind].params.items():
            assert f'name="{name}"' in fields, (kind, name)
            assert escape(spec.description[1:]) in fields, (kind, name)  # the declaration's words, beside the field
    for fmt in EXPORT_FORMATS:
        fields = _fieldset(page, "export-form", fmt)
        assert all(f'name="{name}"' in fields for name in export_format_params(fmt)), fmt

    agreement = _fieldset(page, "report-form", "agreement")
    n_boot = re.search(r'<input id="report-agreement-n_boot"[^>]*>', agreement).group(0)
    assert 'data-param="int"' in n_boot and 'type="number"' in n_boot and 'value="1000"' in n_boot
    assert 'min="0"' in n_boot and 'max="20000"' in n_boot and "(between 0 and 20000)" in agreement
    metrics = _fieldset(page, "report-form", "metrics")
    ks = re.search(r'<input id="report-metrics-ks"[^>]*>', metrics).group(0)
    assert 'data-param="list-int"' in ks and 'value="1, 5, 10"' in ks
    # A default that is the pool's own (its depth) is left to the pool: empty, said to be the default.
    depth = re.search(r'<input id="report-metrics-depth"[^>]*>', metrics).group(0)
    assert 'value=""' in depth and 'placeholder="default"' in depth
    qrels = _fieldset(page, "export-form", "qrels")
    assert re.search(r'<input id="export-qrels-originals" name="originals" type="checkbox" data-param="bool" checked', qrels)
    assert re.search(r'<select id="export-qrels-aggregation"[^>]*>.*<option selected>majority</option>', qrels, re.S)


def test_a_link_may_choose_the_kind_and_its_values():
    pool, _ = make_pool_with_runs()
    page = _admin().get(f"/reports/?pool={pool.pk}&kind=machine_judge&judge=7").content.decode()
    assert '<option value="machine_judge" selected>' in page
    judge = re.search(r'<input id="report-machine_judge-judge"[^>]*>', page).group(0)
    assert 'value="7"' in judge
    # Only the chosen kind takes values from the link.
    assert 'value="7"' not in re.search(r'<input id="report-ppi_estimates-judge"[^>]*>', page).group(0)
