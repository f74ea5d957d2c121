"""Issue 14 item 1: the pool build form attaches training and gold pairs, and a pool page never
shows a pass mark (or raters 'pending') for a pool with no training."""
from __future__ import annotations

import pytest

from annotation.models import Pool
from annotation.services.queue.leases import lease_next
from annotation.services.accounts.raters import memberships_grant, rater_create
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user, judging_setup

pytestmark = pytest.mark.browser


def build_from_form(page, server, dataset_id: int, name: str, *, copy_from: int | None = None,
                    csv_path=None) -> Pool:
    page.goto(f"{server}/admin-ui/datasets/{dataset_id}/")
    page.fill("#pool-name", name)
    page.fill("#pool-depth", "1")
    if copy_from is not None:
        page.select_option("#pool-known-from", str(copy_from))
    if csv_path is not None:
        page.set_input_files("#pool-known-file", str(csv_path))
    page.click("#pool-build [type=submit]")
    page.wait_for_selector("#pool-build .job-progress[data-status=succeeded]")
    return Pool.objects.get(name=name)


def test_pool_built_from_the_page_copies_training_and_a_new_rater_trains_first(page, server):
    setup = judging_setup(pairs=6, training=2, pool_name="Seed pool")
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/datasets/{setup.pool.dataset_id}/")
    assert_controls_labelled(page)
    option = page.text_content(f"#pool-known-from option[value='{setup.pool.pk}']")
    assert "2 training, 0 gold" in option
    pool = build_from_form(page, server, setup.pool.dataset_id, "copied training", copy_from=setup.pool.pk)
    snap(page, "admin-pool-built-with-training")
    assert pool.pairs.filter(role="training").count() == 2

    newcomer = rater_create(username="newcomer", password=PASSWORD)
    memberships_grant(pool=pool, users=[newcomer])
    page.goto(f"{server}/admin-ui/pools/{pool.pk}/")
    assert "training pass mark 80%" in page.text_content("main")
    assert "2 training pairs" in page.text_content("#known-title + p")
    assert page.text_content("text=newcomer >> xpath=ancestor::tr").count("pending") == 1
    assert lease_next(pool=pool, rater=newcomer).mode == "training"


def test_pool_built_from_the_page_reads_a_known_pairs_csv(page, server, tmp_path):
    setup = judging_setup(pairs=6, training=0, pool_name="Plain pool")
    admin = admin_user()
    csv_path = tmp_path / "known.csv"
    csv_path.write_text("caption,clip,answer,role,explanation\nq0,v0,relevant,training,all there\n"
                        "q1,v0,not_relevant,training,another clip\nq2,v2,relevant,gold,\n")
    log_in(page, server, admin.username, PASSWORD)
    pool = build_from_form(page, server, setup.pool.dataset_id, "csv training", csv_path=csv_path)
    assert (pool.pairs.filter(role="training").count(), pool.pairs.filter(role="gold").count()) == (2, 1)

    bad = tmp_path / "bad.csv"
    bad.write_text("caption,clip,answer,role\nq0,v0,relevant,training\nq0,nope,relevant,training\n")
    page.goto(f"{server}/admin-ui/datasets/{setup.pool.dataset_id}/")
    page.fill("#pool-name", "refused")
    page.set_input_files("#pool-known-file", str(bad))
    page.click("#pool-build [type=submit]")
    page.wait_for_selector("#pool-build table.issues")
    row = page.text_content("#pool-build table.issues tbody tr")
    assert "bad.csv" in row and "3" in row and "clip" in row
    snap(page, "admin-pool-build-bad-known-csv")
    assert not Pool.objects.filter(name="refused").exists()


def test_pool_without_training_shows_no_pass_mark_and_no_pending_raters(page, server):
    setup = judging_setup(pairs=4, training=0, pool_name="No training")
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/")
    text = page.text_content("main")
    assert "pass mark" not in text
    assert "no training" in text
    row = page.text_content("section[aria-labelledby=raters-title] tbody tr")
    assert setup.rater.username in row
    assert "pending" not in row and "no training" in row
    snap(page, "admin-pool-no-training")
