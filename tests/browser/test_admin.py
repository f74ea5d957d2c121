"""The admin pages: an upload watched to the end, a pool built and managed, raters, adjudication."""
from __future__ import annotations

import pytest

from annotation.models import Label, Pool, PooledPair, RaterProfile, Run
from annotation.services.queue.labels import label_submit
from annotation.services.queue.leases import lease_next
from annotation.services.accounts.raters import rater_create
from annotation.services.accounts.users import user_create
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user, judging_setup
from tests.factories import make_dataset

pytestmark = pytest.mark.browser


def test_admin_uploads_a_run_and_sees_the_job_finish(page, server, tmp_path):
    admin = admin_user()
    dataset = make_dataset(name="msrvtt-mini", clips=5, captions=3)
    good = tmp_path / "good.trec"
    good.write_text("".join(f"q{q} Q0 v{rank} {rank} {1 - rank / 10:.2f} tag\n"
                            for q in (1, 2, 3) for rank in (1, 2, 3)))
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 v1 1 0.9 tag\nq1 Q0 v2 1 0.8 tag\n")

    log_in(page, server, admin.username, PASSWORD)
    snap(page, "admin-home")
    page.click("nav >> text=Datasets")
    snap(page, "admin-datasets")
    assert_controls_labelled(page)
    page.click(f"text={dataset.name}")
    page.wait_for_url(f"{server}/admin-ui/datasets/{dataset.pk}/")

    page.set_input_files("#run-file", str(bad))
    page.click("#run-upload [type=submit]")
    page.wait_for_selector("#run-upload .issues")
    problems = page.text_content("#run-upload .issues")
    assert "bad.trec" in problems and "rank" in problems and "2" in problems
    snap(page, "admin-run-refused")

    page.set_input_files("#run-file", str(good))
    page.fill("#run-name", "model-a")
    page.click("#run-upload [type=submit]")
    page.wait_for_selector("#run-upload .job-progress[data-status=succeeded]")
    assert page.locator("#run-upload .job-progress progress").evaluate("p => p.value") == 1
    snap(page, "admin-run-imported")
    page.wait_for_selector("tr[data-run=model-a]")  # the page reloads with the new run
    run = Run.objects.get(dataset=dataset, name="model-a")
    assert run.prediction_count == 9

    page.goto(f"{server}/admin-ui/")
    page.click("table >> text=Import a run: model-a")  # a job named by what it works on
    page.wait_for_selector(".job-progress[data-status=succeeded]")
    snap(page, "admin-job")


def test_admin_builds_a_pool_gives_access_and_watches_it(page, server):
    setup = judging_setup(pairs=12, training=2, pool_name="Seed pool")
    admin = admin_user()
    newcomer = rater_create(username="newcomer", password=PASSWORD)
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/datasets/{setup.pool.dataset_id}/")
    page.fill("#pool-name", "second look")
    page.fill("#pool-depth", "1")
    page.fill("#pool-redundancy", "0.5")
    page.click("#pool-build [type=submit]")
    page.wait_for_selector("#pool-build .job-progress[data-status=succeeded]")
    snap(page, "admin-pool-built")
    page.click("text=Open the pool")
    pool = Pool.objects.get(name="second look")
    page.wait_for_url(f"{server}/admin-ui/pools/{pool.pk}/")
    assert pool.pairs.filter(role="pool").count() == 12

    page.check(f"#members-add input[value='{newcomer.pk}']")
    page.check(f"#members-add input[value='{setup.rater.pk}']")
    page.click("#members-add [type=submit]")
    page.wait_for_selector("text=newcomer >> xpath=ancestor::tr")
    assert set(pool.memberships.values_list("rater__username", flat=True)) == {"newcomer", setup.rater.username}

    # Some work in the seeded pool, then its page: progress, agreement, charts, raters.
    for rater in (setup.rater, newcomer):
        setup.pool.memberships.get_or_create(rater=rater, defaults={"training": "passed"})
        setup.pool.memberships.filter(rater=rater).update(training="passed")
    values = ["relevant", "not_relevant", "ambiguous", "relevant", "broken", "relevant"]
    for step, value in enumerate(values):
        lease = lease_next(pool=setup.pool, rater=setup.rater).lease
        label_submit(rater=setup.rater, client_id=f"c{step}", lease=lease.token, value=value, seconds=3.5,
                     comment="hmm" if value == "ambiguous" else "")
    page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/")
    page.wait_for_selector("#pool-charts[data-drawn=true]")
    assert_controls_labelled(page)
    assert "6 labels" in page.get_attribute("[data-chart=hourly] svg", "aria-label")
    assert page.locator("[data-chart=raters] svg rect.bar").count() == 1
    snap(page, "admin-pool")

    page.click("text=Adjudication queue")
    page.wait_for_selector("article.pair")
    snap(page, "admin-adjudication")
    escalated = PooledPair.objects.get(pool=setup.pool, state="adjudication")
    page.fill(f"#note-{escalated.pk}", "both shapes are there")
    page.click("text=Decide: relevant")
    page.click("text=Confirm: relevant")
    page.wait_for_selector("[data-empty]:not([hidden])")
    escalated.refresh_from_db()
    assert (escalated.state, escalated.resolved_label, escalated.resolved_by_admin) == ("resolved", "relevant", True)
    assert escalated.adjudication_note == "both shapes are there"

    page.goto(f"{server}/admin-ui/pools/")
    snap(page, "admin-pools")


def test_admin_manages_raters(page, server, tmp_path):
    admin = admin_user()
    setup = judging_setup(pairs=2, training=0)
    csv_file = tmp_path / "raters.csv"
    csv_file.write_text("username,email\nann,ann@example.org\nbob,\n")
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/raters/")

    page.fill("#rater-username", "carol")
    page.fill("#rater-password", "carol-pw-1234")
    page.click("#rater-create [type=submit]")
    page.wait_for_selector("tr[data-rater=carol]")

    page.set_input_files("#raters-file", str(csv_file))
    page.click("#rater-import [type=submit]")
    page.wait_for_selector("tr[data-rater=bob]")

    page.select_option("#grant-pool", str(setup.pool.pk))
    page.check("#grant-access label:has-text('ann') input")
    page.click("#grant-access [type=submit]")
    page.wait_for_selector("tr[data-rater=ann] >> text=Browser pool")

    page.click("tr[data-rater=carol] >> text=Pause")
    page.click("tr[data-rater=carol] >> text=Confirm: Pause")  # asked in the page, not in a browser dialog
    page.wait_for_selector("tr[data-rater=carol] >> text=Resume")
    assert RaterProfile.objects.get(user__username="carol").paused
    assert setup.pool.memberships.filter(rater__username="ann").exists()
    snap(page, "admin-raters")
    assert_controls_labelled(page)

    page.fill("#rater-username", "carol")
    page.click("#rater-create [type=submit]")
    page.wait_for_selector("#rater-create .field-error")
    assert "already exists" in page.text_content("#rater-create .field-error")
    assert Label.objects.count() == 0


def test_login_page_and_a_page_the_role_may_not_open(page, server):
    setup = judging_setup(pairs=1, training=0)
    page.goto(f"{server}/admin-ui/")
    page.wait_for_url(f"{server}/login/?next=/admin-ui/")
    snap(page, "login")
    page.fill("#id_username", setup.rater.username)
    page.fill("#id_password", "wrong password")
    page.keyboard.press("Enter")
    page.wait_for_selector("[role=alert]")
    page.fill("#id_password", PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_selector("h1:has-text('Not allowed')")
    assert "for admins only" in page.text_content("main")
    snap(page, "not-allowed")

    page.click("text=Log out")
    page.wait_for_url(f"{server}/login/")
    researcher = user_create(username="reader", password=PASSWORD, role="researcher")
    log_in(page, server, researcher.username, PASSWORD)
    assert page.locator("nav a[href='/reports/']").count() == 1 and page.locator("a[href^='/admin-ui/']").count() == 0
    snap(page, "researcher-home")
