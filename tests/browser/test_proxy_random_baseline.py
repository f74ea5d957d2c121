"""Issue 26: the proxies page shows the random-ranking nDCG of a dataset's matrices (the baseline
row of Wray et al.'s tables), through the service `proxy_ndcg --random-baseline` and the REST
option use, and fills its form again with what was asked."""
from __future__ import annotations

import pytest

from annotation.models import Caption, Clip, Dataset
from annotation.services.proxies.matrices import proxy_matrices_compute, proxy_random_baseline_table
from tests.annotation.services.proxies.test_proxy_matrices import TINY
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user

pytestmark = pytest.mark.browser


def test_admin_scores_random_rankings_from_the_page(page, server):
    dataset = Dataset.objects.create(name="baseline data")
    for i, text in enumerate(TINY, start=1):
        clip = Clip.objects.create(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}")
        Caption.objects.create(dataset=dataset, external_id=f"q{i}", text=text, original_clip=clip)
    (matrix,) = proxy_matrices_compute(dataset=dataset, proxies=["bow"])
    log_in(page, server, admin_user().username, PASSWORD)
    page.goto(f"{server}/proxies/")
    form = page.locator(f"#baseline-{dataset.pk}")
    assert page.locator(f"#baseline-table-{dataset.pk}").count() == 0  # nothing is drawn until asked
    form.locator("input[name=draws]").fill("6")
    form.locator("input[name=seed]").fill("4")
    form.locator("select[name=gain]").select_option("exponential")
    form.locator("button[type=submit]").click()
    row = page.wait_for_selector(f"#baseline-table-{dataset.pk} tr[data-matrix='{matrix.pk}']")

    (expected,) = proxy_random_baseline_table(dataset=dataset, draws=6, seed=4, gain="exponential")["proxies"]
    assert row.query_selector("[data-col=mean]").text_content() == f"{100 * expected['mean']:.2f}%"
    assert row.query_selector("[data-col=expected]").text_content() == f"{100 * expected['expected']:.2f}%"
    caption = page.text_content(f"#baseline-table-{dataset.pk} caption")
    assert "6 random rankings" in caption and "seed 4, gain exponential" in caption
    # The form keeps what was asked, so a second seed is one edit away.
    assert form.locator("input[name=draws]").input_value() == "6"
    assert form.locator("select[name=gain]").input_value() == "exponential"
    assert_controls_labelled(page)
    snap(page, "proxies-random-baseline")
