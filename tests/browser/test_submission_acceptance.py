"""Issue 38, "Filling the holes with people" and "The leaderboard grows", walked through the pages:
a researcher submits a run on the release page and sees its Judged@K and holes; an admin accepts
it there; a rater judges one of its holes on the judging screen (the rest are labelled through
the service, as other raters would); the admin makes the next version from the release form, and
its leaderboard ranks the run with Judged@10 = 100% and says where it came from, people named by
the release's pseudonyms."""
from __future__ import annotations

import re

import pytest

from annotation.models import Label, Lease, PooledPair, Release, Submission
from annotation.services.queue.leases import lease_release
from annotation.services.accounts.users import user_create
from annotation.services.releases.create import release_create
from tests.browser.conftest import WAIT_MS, assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user, judging_setup
from tests.browser.test_judging import KEYS, next_pair
from tests.factories import label_pair, unique

pytestmark = pytest.mark.browser

PAIRS = 6
# Each query's own clip (judged in the release) first, then the next query's clip: a hole.
RUN = "".join(f"q{i} Q0 v{i} 1 0.9 model-x\nq{i} Q0 v{(i + 1) % PAIRS} 2 0.8 model-x\n" for i in range(PAIRS))


def _page_as(browser, server, user):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    log_in(page, server, user.username, PASSWORD)
    return context, page


def _row_text(page) -> str:
    return page.inner_text("#release-submissions-table tbody tr")


def _reload_until(page, test, what: str) -> None:
    """The scoring and acceptance are jobs: the page shows their outcome once they ran."""
    for _ in range(60):
        if test():
            return
        page.wait_for_timeout(500)
        page.reload()
    raise AssertionError(f"the page never showed {what}: {_row_text(page)}")


def test_a_submission_is_accepted_judged_and_ranked_in_the_next_version(page, server, browser):
    setup = judging_setup(pairs=PAIRS, training=0, pool_name="Acceptance pool")
    for pair in PooledPair.objects.filter(pool=setup.pool, role="pool"):
        label_pair(setup.rater, pair, client_id=unique("c"), value="relevant", seconds=2.0)
    v1 = release_create(pools=[setup.pool], name="browser-fire")
    researcher = user_create(username="researcher-x", password=PASSWORD, role="researcher")
    admin = admin_user()

    # The researcher submits a run and sees its Judged@K and its holes.
    log_in(page, server, researcher.username, PASSWORD)
    page.goto(f"{server}/releases/{v1.pk}/")
    page.fill("#release-submission-form [name=name]", "model-x")
    page.set_input_files("#release-submission-form [type=file]",
                         {"name": "model-x.trec", "mimeType": "text/plain", "buffer": RUN.encode()})
    page.click("#release-submission-form [type=submit]")
    page.wait_for_url(f"**/releases/{v1.pk}/*")
    _reload_until(page, lambda: "scored" in _row_text(page), "the scored submission")
    row = _row_text(page)
    assert "Judged@1 100.0" in row and "Judged@10 50.0" in row, row
    assert "6 in 6 of 6 queries (top 10)" in row
    assert page.locator("form.submission-accept").count() == 0  # not an admin's page
    snap(page, "submission-scored")
    submission = Submission.objects.get()

    # The admin accepts it on the same page, with the strategy chosen there.
    admin_context, admin_page = _page_as(browser, server, admin)
    admin_page.goto(f"{server}/releases/{v1.pk}/")
    assert_controls_labelled(admin_page)
    admin_page.select_option("form.submission-accept [name=strategy]", "pool_order")
    admin_page.click("form.submission-accept [type=submit]")
    admin_page.wait_for_url(f"**/releases/{v1.pk}/*")
    _reload_until(admin_page, lambda: "judged in pool" in _row_text(admin_page), "the acceptance")
    submission.refresh_from_db()
    pool = submission.pool
    assert submission.status == Submission.Status.ACCEPTED and pool is not None
    assert pool.name in _row_text(admin_page)
    snap(admin_page, "submission-accepted")
    admin_page.click(f"#release-submissions-table a:text('{pool.name}')")
    assert f"holes of model-x (submission {submission.pk}) to release browser-fire@v1" in re.sub(
        r"\s+", " ", admin_page.inner_text("#pool-submission"))
    holes = PooledPair.objects.filter(pool=pool, role="pool", state=PooledPair.State.OPEN)
    assert holes.count() == PAIRS  # only the holes are queued; the release's verdicts were seeded

    # A rater of the release judges one hole on the judging screen; the others are labelled as other raters would.
    rater_context, rater_page = _page_as(browser, server, setup.rater)
    rater_page.goto(f"{server}/judge/{pool.pk}/")
    next_pair(rater_page)
    rater_page.keyboard.press(KEYS["relevant"])
    rater_page.wait_for_selector("#save-status[data-status=saved]")
    judged_here = Label.objects.filter(pair__pool=pool, rater=setup.rater)
    assert judged_here.count() == 1
    rater_context.close()
    for pair in holes.exclude(pk__in=judged_here.values("pair_id")):
        # The closed page held the next pairs: each goes back to the queue, as its lease's expiry would send it.
        for token in Lease.objects.filter(rater=setup.rater, pair=pair, state=Lease.State.ACTIVE).values_list(
                "token", flat=True):
            lease_release(token=token, rater=setup.rater)
        label_pair(setup.rater, pair, client_id=unique("c"), value="not_relevant", seconds=2.0)
    assert not PooledPair.objects.filter(pool=pool, role="pool").exclude(state=PooledPair.State.RESOLVED).exists()

    # The admin makes the next version from the release form; its leaderboard ranks the run.
    admin_page.goto(f"{server}/releases/?pool={setup.pool.pk}")
    admin_page.fill("#release-name", "browser-fire")
    admin_page.click("#release-form [type=submit]")
    admin_page.wait_for_url("**/releases/*/", timeout=120_000)
    v2 = Release.objects.get(name="browser-fire", version=2)
    assert admin_page.url.endswith(f"/releases/{v2.pk}/")
    rows = admin_page.eval_on_selector_all(
        "#release-leaderboard-table tbody tr", "rows => rows.map(r => [...r.children].map(c => c.innerText))")
    by_run = {r[0]: r for r in rows}
    assert set(by_run) == {"browser-run", "model-x"}
    headers = admin_page.eval_on_selector_all("#release-leaderboard-table thead tr:last-child th",
                                              "cells => cells.map(c => c.innerText)")
    assert by_run["model-x"][1 + headers.index("Judged@10")] == "100.0"
    provenance = by_run["model-x"][-1]
    assert f"submitted run (submission {submission.pk} to browser-fire@v1)" in provenance
    assert "by p01" in provenance and "accepted" in provenance and "by p02" in provenance
    assert researcher.username not in admin_page.inner_text("#release-leaderboard-table")
    assert admin.username not in admin_page.inner_text("#release-leaderboard-table")
    assert "pooled run" in by_run["browser-run"][-1]
    snap(admin_page, "release-next-version-with-submission")
    admin_context.close()
