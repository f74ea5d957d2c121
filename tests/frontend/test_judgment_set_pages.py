"""Judgment sets on the reports page: the list for admins and researchers, the admin forms, and the
report pages (and CSV tables) of scoring stored runs against a set and of a set's agreement."""
from __future__ import annotations

import csv
import io
import re

import pytest
from django.test import Client

from annotation.models import Report, Run
from annotation.services.reports.registry import report_tables
from annotation.services.judgment_sets.counts import counts_in_words
from annotation.services.judgment_sets.from_pool import judgment_set_from_pool
from annotation.services.judgment_sets.imports import JUDGMENT_FORMATS, judgments_import
from annotation.services.judgment_sets.scoring import (agreement_report_store, evaluation_report_store,
                                                        judgment_set_agreement, judgment_set_evaluate)
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.factories import make_user

pytestmark = pytest.mark.django_db

# Ten labels of four units by three raters; a labels p2 twice (0, then 1).
RATER_LABELS = "pair,worker,grade\n" + "".join(f"{u},{w},{g}\n" for u, w, g in [
    ("p1", "a", 1), ("p1", "b", 1), ("p1", "c", 0), ("p2", "a", 0), ("p2", "b", 0), ("p2", "a", 1),
    ("p3", "a", 1), ("p3", "c", 1), ("p4", "b", 0), ("p4", "c", 1)])
COLUMNS = "unit=pair,rater=worker,value=grade"


def _client(role):
    client = Client()
    if role:
        client.force_login(make_user(role))
    return client


@pytest.fixture
def pool(tmp_path):
    return example_pool(tmp_path)


def _raw_set(pool, tmp_path, name="raw"):
    path = tmp_path / f"{name}.csv"
    path.write_text(RATER_LABELS)
    return judgments_import(dataset=pool.dataset, path=path, fmt="rater_labels", name=name,
                            options={"columns": COLUMNS, "repeats": "first"}).judgment_set


def _qrels_set(pool, tmp_path):
    path = tmp_path / "published.qrels"
    path.write_text("q1 0 v2 1\nq1 0 v1 1\nq1 0 v3 0\n")
    return judgments_import(dataset=pool.dataset, path=path, name="published").judgment_set


def _rows(page: str, table_id: str) -> list[list[str]]:
    """The body rows of the page's table in the section headed `table_id`, as cell texts."""
    section = page.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    body = section.split("<tbody>", 1)[1]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


def test_sets_are_listed_for_admins_and_researchers_and_raters_are_refused(pool, tmp_path):
    published, raw = _qrels_set(pool, tmp_path), _raw_set(pool, tmp_path)
    made = judgment_set_from_pool(pool=pool, name="round 1").judgment_set
    made.stored_file = ""  # as a set imported before files were kept
    made.save(update_fields=["stored_file"])

    assert _client("rater").get("/reports/").status_code == 403
    assert _client(None).get("/reports/").status_code == 302
    for role in ("researcher", "admin"):
        page = _client(role).get("/reports/").content.decode()
        assert 'id="judgment-sets-title">Judgment sets</h2>' in page
        rows = {row[1]: row for row in _rows(page, "judgment-sets-title")}
        assert set(rows) == {"published", "raw", "round 1"}
        # dataset, name, format, seeds pools, counts in words, created, download
        assert rows["published"][:5] == ["example", "published", "qrels", "yes", counts_in_words(published.counts)]
        assert rows["published"][4].startswith("relevant: 2, not relevant: 1")
        assert rows["raw"][2:4] == ["rater_labels", "no"]
        assert set(rows["raw"][4].split(", ")) == {"labels: 10", "units: 4", "raters: 3", "repeated cells: 1"}
        assert f'<a href="/api/v1/judgment-sets/{raw.pk}/download/">raw.csv</a>' in page
        assert rows["round 1"][2:4] == ["pool", "no"] and "not kept" in rows["round 1"][6]
        assert f"/api/v1/judgment-sets/{made.pk}/download/" not in page


def test_only_admins_get_the_judgment_set_forms_with_every_format_and_its_hint(pool, tmp_path):
    published, raw = _qrels_set(pool, tmp_path), _raw_set(pool, tmp_path)
    kept_out = judgment_set_from_pool(pool=pool, name="round 1").judgment_set
    kept_out.stored_file = ""
    kept_out.save(update_fields=["stored_file"])
    researcher = _client("researcher").get("/reports/").content.decode()
    for form in ("judgments-form", "evaluate-form", "agreement-form", "pool-set-form"):
        assert f'id="{form}"' not in researcher
    assert "reports.js" not in researcher

    page = _client("admin").get("/reports/").content.decode()
    for form in ("judgments-form", "evaluate-form", "agreement-form", "pool-set-form"):
        assert f'id="{form}"' in page
    for fmt in JUDGMENT_FORMATS:
        assert re.search(rf'<option value="{fmt}" data-hint="[^"]{{20,}}">{fmt}: ', page), fmt
    assert "LocalizingMoments" in page and "sample_eval.pl" in page  # the hints name the tools
    for name in ("columns", "repeats", "file_format", "seeds_pools", "name"):
        assert f'name="{name}"' in page.split('id="judgments-form"')[1].split("</form>")[0]

    evaluate = page.split('id="evaluate-form"')[1].split("</form>")[0]
    # Sets whose file is kept, with the dataset their runs must come from; the runs by dataset.
    assert f'<option value="{published.pk}" data-dataset="{pool.dataset_id}">' in evaluate
    assert f'<option value="{raw.pk}" ' in evaluate and f'<option value="{kept_out.pk}" ' not in evaluate
    assert f'<optgroup label="example" data-dataset="{pool.dataset_id}">' in evaluate
    for run in Run.objects.filter(dataset=pool.dataset):
        assert f'<option value="{run.pk}">{run.name} (ranked clips)</option>' in evaluate
    assert '<option value="trecvid">trecvid: NIST sample_eval.pl' in evaluate

    agreement = page.split('id="agreement-form"')[1].split("</form>")[0]
    assert f'<option value="{raw.pk}">example / raw</option>' in agreement
    assert f'value="{published.pk}"' not in agreement  # only rater_labels sets have raters
    assert "<option>interval</option>" in agreement
    pool_form = page.split('id="pool-set-form"')[1].split("</form>")[0]
    assert f'<option value="{pool.pk}">example / example pool</option>' in pool_form


def _evaluation_report(pool) -> Report:
    judgment_set = judgment_set_from_pool(pool=pool, name="round 1").judgment_set
    runs = list(Run.objects.filter(dataset=pool.dataset).order_by("name"))
    evaluation = judgment_set_evaluate(judgment_set=judgment_set, runs=runs, measures=["map", "P_3"])
    return evaluation_report_store(evaluation=evaluation, judgment_set=judgment_set,
                                   params={"judgment_set_id": judgment_set.pk, "conventions": "trec"})


def test_an_evaluation_report_shows_runs_conventions_and_queries(pool):
    report = _evaluation_report(pool)
    # The set is the pool's qrels with the originals: positives q1 {v1 v2 v5}, q2 {v1 v2}, q3 {v3 v4},
    # q4 none (every pair judged not relevant). trec_eval orders by score, ties by clip id descending.
    # Run A: q1 [v2 v1 v3] AP (1 + 1)/3 = 2/3, P_3 2/3; q2 [v2 v4 v6] AP 1/2, P_3 1/3;
    #        q3 [v4 v3 v6] AP 1, P_3 2/3; q4 AP 0, P_3 0 -> map 13/24 = 0.5417, P_3 5/12 = 0.4167.
    # Run B: q1 tied, so [v6 v5 v1]: AP (1/2 + 2/3)/3 = 7/18 = 0.3889; q2, q3 AP 1; q4 unanswered,
    #        skipped -> map (7/18 + 2)/3 = 43/54 = 0.7963, P_3 2/3 = 0.6667.
    tables = {t.name: t for t in report_tables(report=report)}
    assert list(tables) == ["runs", "conventions", "per_query"]  # no FIRE layout: no original-only scores
    runs = tables["runs"]
    assert runs.title == "Scores against 'round 1' (pool), trec conventions (trec_eval 9, default options)"
    assert runs.columns == ["run", "map", "P_3", "queries_scored", "queries_unanswered", "queries_without_judgments"]
    assert runs.rows == [["A", pytest.approx(13 / 24), pytest.approx(5 / 12), 4, 0, 0],
                         ["B", pytest.approx(43 / 54), pytest.approx(2 / 3), 3, 1, 0]]
    assert ["tie break", "score descending, then document id descending"] in tables["conventions"].rows
    assert ["max result size", "none"] in tables["conventions"].rows
    per_query = {(row[0], row[1]): row[2:] for row in tables["per_query"].rows}
    assert per_query[("B", "q1")] == [pytest.approx(7 / 18), pytest.approx(2 / 3)]
    assert ("B", "q4") not in per_query and per_query[("A", "q4")] == [0.0, 0.0]

    page = _client("researcher").get(f"/reports/{report.pk}/").content.decode()
    assert "Scores against &#x27;round 1&#x27; (pool), trec conventions (trec_eval 9, default options)" in page
    assert _rows(page, "table-runs") == [["A", "0.5417", "0.4167", "4", "0", "0"],
                                         ["B", "0.7963", "0.6667", "3", "1", "0"]]
    assert f'href="/api/v1/reports/{report.pk}/csv/?table=per_query"' in page
    assert '<pre class="raw">{' not in page.split("Provenance")[0]  # tables, not the raw result

    download = _client("researcher").get(f"/api/v1/reports/{report.pk}/csv/?table=runs")
    assert download.status_code == 200
    rows = list(csv.reader(io.StringIO(download.content.decode())))
    assert rows[0][:3] == ["run", "map", "P_3"] and rows[2][0] == "B" and float(rows[2][1]) == pytest.approx(43 / 54)


def test_an_evaluation_report_with_fire_scores_shows_the_fire_layout(pool):
    report = _evaluation_report(pool)
    # FIRE's A (B + C) as evaluate --with-originals stores it (its numbers are checked by the
    # evaluate tests); here only the layout: the text per run and measure, and A, B, C unrounded.
    fire = {"map": {"A": 62.2222, "B": 34.4444, "C": 27.7778, "text": "62.2 (34.4 + 27.8)"},
            "P_3": {"A": 40.0, "B": 20.0, "C": 20.0, "text": "40.0 (20.0 + 20.0)"}}
    report.result["runs"][0]["fire"] = fire
    report.save(update_fields=["result"])
    tables = {t.name: t for t in report_tables(report=report)}
    assert tables["fire"].columns == ["run", "map", "P_3"]
    assert tables["fire"].rows == [["A", "62.2 (34.4 + 27.8)", "40.0 (20.0 + 20.0)"]]  # B has none
    assert tables["fire_values"].rows == [["A", "map", 62.2222, 34.4444, 27.7778], ["A", "P_3", 40.0, 20.0, 20.0]]
    page = _client("admin").get(f"/reports/{report.pk}/").content.decode()
    assert "FIRE layout: A (B + C)" in page and "<td>62.2 (34.4 + 27.8)</td>" in page


def test_a_judgment_set_agreement_report_shows_alpha_its_interval_and_each_rater(pool, tmp_path):
    raw = _raw_set(pool, tmp_path)
    result = judgment_set_agreement(judgment_set=raw, n_boot=200)
    report = agreement_report_store(result=result, judgment_set=raw, params={"level": "nominal", "repeats": "first"})
    # First of a's two p2 labels kept: p1 (1,1,0), p2 (0,0), p3 (1,1), p4 (0,1).
    # alpha (worked in tests/api/test_judgment_sets_api.py): o11 = 3, o00 = 2, o10 = o01 = 2, n = 9,
    # D_o = 4/9, D_e = 2*5*4/(9*8) = 5/9 -> alpha = 0.2.
    # Percent agreement over rater pairs: p1 1 of 3 pairs agree, p2 1 of 1, p3 1 of 1, p4 0 of 1 -> 3/6.
    # Majority labels of units labelled more than once: p1 1, p2 0, p3 1, p4 none (1-1). So a agrees
    # 3 of 3, b 2 of 2 (p1, p2), c 1 of 2 (p1 wrong, p3 right).
    tables = {t.name: t for t in report_tables(report=report)}
    assert list(tables) == ["summary", "agreement", "raters"]
    summary = dict(tables["summary"].rows)
    assert (summary["labels"], summary["labels used"], summary["units"], summary["raters"]) == (10, 9, 4, 3)
    assert summary["repeated cells (one rater, one unit, several labels)"] == 1
    assert summary["repeated cells with identical labels"] == 0
    assert summary["repeat rule"] == "first (repeats ordered by file order)"
    low, high = result["alpha_ci"]
    assert summary["Krippendorff's alpha (nominal) [95% interval]"] == f"0.200 [{low:.3f}, {high:.3f}]"
    assert summary["percent agreement [95% interval]"].startswith("0.500 [")
    assert tables["agreement"].rows[0][:3] == ["nominal", 9, pytest.approx(0.5)]
    assert tables["agreement"].rows[0][5] == pytest.approx(0.2)
    assert tables["raters"].rows == [["a", 4, 3, 1, 3, 1.0], ["b", 3, 3, 0, 2, 1.0], ["c", 3, 3, 0, 2, 0.5]]

    page = _client("admin").get(f"/reports/{report.pk}/").content.decode()
    assert "Agreement of raw" in page
    assert "<td>Krippendorff&#x27;s alpha (nominal) [95% interval]</td><td>0.200 [" in page
    assert _rows(page, "table-raters") == [["a", "4", "3", "1", "3", "1"], ["b", "3", "3", "0", "2", "1"],
                                           ["c", "3", "3", "0", "2", "0.5"]]
    assert page.count('<svg class="chart"') == 1 and '<title>rater c with majority: 50.0%</title>' in page
    index = _client("researcher").get("/reports/").content.decode()
    assert f'<a href="/reports/{report.pk}/">Agreement of raw</a>' in index


def test_reports_of_both_kinds_without_a_title_take_the_page_kind_title(pool, tmp_path):
    report = _evaluation_report(pool)
    Report.objects.filter(pk=report.pk).update(title="")
    index = _client("admin").get("/reports/").content.decode()
    assert f'<a href="/reports/{report.pk}/">Evaluation against a judgment set</a>' in index
