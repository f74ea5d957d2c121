"""The reports page's judgment sets: an admin imports raw rater labels with a column mapping, a bad
file is refused with its line and field, and the set's agreement ends on its report page."""
from __future__ import annotations

import re

import pytest

from annotation.models import Report
from annotation.models.judgment_sets import JudgmentSet
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user
from tests.factories import make_dataset

pytestmark = pytest.mark.browser

# Four units, three raters, a's two labels of p2 (see tests/frontend/test_judgment_set_pages.py).
LABELS = "pair,worker,grade\n" + "".join(f"{u},{w},{g}\n" for u, w, g in [
    ("p1", "a", 1), ("p1", "b", 1), ("p1", "c", 0), ("p2", "a", 0), ("p2", "b", 0), ("p2", "a", 1),
    ("p3", "a", 1), ("p3", "c", 1), ("p4", "b", 0), ("p4", "c", 1)])


def test_admin_imports_rater_labels_and_measures_their_agreement(page, server, tmp_path):
    admin = admin_user()
    dataset = make_dataset(name="tvr-mini", clips=2, captions=2)
    bad = tmp_path / "bad.csv"
    bad.write_text("pair,worker,grade\np1,a,1\np2,,1\n")  # line 3 has no rater
    good = tmp_path / "raw.csv"
    good.write_text(LABELS)

    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/reports/")
    assert page.is_hidden("#rater-options")  # shown only for rater_labels
    page.select_option("#judgments-dataset", str(dataset.pk))
    page.select_option("#judgments-format", "rater_labels")
    assert page.is_visible("#rater-options")
    assert "column mapping" in page.text_content("#judgments-format-hint")
    assert_controls_labelled(page)
    page.fill("#judgments-columns", "unit=pair,rater=worker,value=grade")
    page.select_option("#judgments-repeats", "first")

    page.set_input_files("#judgments-file", str(bad))
    page.click("#judgments-form [type=submit]")
    page.wait_for_selector("#job-status.failed li")
    problems = page.text_content("#job-status")
    assert "bad.csv, line 3, field 'worker'" in problems
    snap(page, "judgment-set-refused")
    assert not JudgmentSet.objects.exists()  # nothing half-imported

    page.set_input_files("#judgments-file", str(good))
    page.click("#judgments-form [type=submit]")
    page.wait_for_selector("tr.just-added")  # the page shows the list afresh, the new set marked
    judgment_set = JudgmentSet.objects.get()
    row = page.locator(f"tr[data-judgment-set='{judgment_set.pk}']")
    assert "rater_labels" in row.text_content() and "labels: 10" in row.text_content()
    assert row.locator(f"a[href='/api/v1/judgment-sets/{judgment_set.pk}/download/']").count() == 1
    assert "Judgment set 'raw'" in page.text_content("#job-status")
    assert judgment_set.params["repeats"] == "first" and not judgment_set.seeds_pools
    snap(page, "judgment-set-imported")

    page.select_option("#agreement-set", str(judgment_set.pk))
    page.click("#agreement-form [type=submit]")
    page.wait_for_url(re.compile(rf"{re.escape(server)}/reports/\d+/$"))
    report = Report.objects.get(kind="judgment_set_agreement")
    assert page.url == f"{server}/reports/{report.pk}/"
    # alpha = 0.2 with the first of a's p2 labels kept (worked in tests/api/test_judgment_sets_api.py).
    summary = page.text_content("section:has(#table-summary)")
    assert "Krippendorff's alpha (nominal) [95% interval]" in summary and "0.200 [" in summary
    assert page.locator("#table-raters + .scroll tbody tr").count() == 3
    snap(page, "judgment-set-agreement")
