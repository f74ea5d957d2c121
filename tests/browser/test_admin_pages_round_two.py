"""Issue 14 item 9: the proxies page computes a proxy matrix itself (it only told the admin which
API call or command would), and a run file uploaded twice says it was already imported."""
from __future__ import annotations

import pytest

from annotation.models import Artefact, Run
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user
from tests.browser.test_csp import dataset_with

pytestmark = pytest.mark.browser


def test_admin_computes_a_proxy_matrix_from_the_page(page, server):
    dataset = dataset_with("proxy data", clips=3, captions=3)
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/proxies/")
    form = page.locator(f"#proxies-{dataset.pk}")
    assert "No proxy matrix yet." in page.text_content("main")
    form.locator("select[name=proxy]").select_option("bow")
    form.locator("button[type=submit]").click()
    page.wait_for_selector(f"#proxies-{dataset.pk} .job-progress[data-status=succeeded]")
    page.wait_for_function("() => !document.querySelector('main').textContent.includes('No proxy matrix yet.')")
    matrix = Artefact.objects.get(kind="proxy_matrix", dataset=dataset)
    assert matrix.params["proxy"] == "bow" and matrix.params["mode"] == "modern"
    assert matrix.name in page.text_content("main")
    snap(page, "proxies-computed")


def test_uploading_the_same_run_again_says_it_was_already_imported(page, server, tmp_path):
    dataset = dataset_with("runs data", clips=3, captions=2)
    run_file = tmp_path / "model.trec"
    run_file.write_text("".join(f"q{q} Q0 v{r} {r} {1 - r / 10:.1f} model\n" for q in (1, 2) for r in (1, 2, 3)))
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/datasets/{dataset.pk}/")
    page.set_input_files("#run-file", str(run_file))
    page.click("#run-upload [type=submit]")
    page.wait_for_selector("tr[data-run=model]")  # imported; the page reloaded with it
    run = Run.objects.get(dataset=dataset)

    page.set_input_files("#run-file", str(run_file))
    page.click("#run-upload [type=submit]")
    notice = page.wait_for_selector("#run-upload .already-imported")
    assert notice.text_content() == f"This file was already imported as run 'model' (run {run.pk}); nothing was added."
    assert Run.objects.filter(dataset=dataset).count() == 1
    snap(page, "run-uploaded-again")
