"""Issue 24 finding 4: every figure of the pool page comes from one snapshot and follows the raters'
work without a reload — progress, the raters table (training included), the queries table and the
charts — and they agree with each other and with the database after every refresh.

Raters label through the REST API (their browser's part) while the admin's page stays open."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Label, Lease, PoolMembership, PooledPair
from annotation.services.accounts.raters import memberships_grant, rater_create
from annotation.services.pools.build import known_pairs_add
from tests.browser.conftest import log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user, judging_setup

pytestmark = pytest.mark.browser

# Everything the page shows, read in one go (no poll can land between two reads).
READ_PAGE = """() => {
  const text = (el) => el ? el.textContent.trim() : null;
  const figures = {};
  for (const el of document.querySelectorAll('.figures b[data-live]')) figures[el.dataset.live] = text(el);
  figures.surplus_labels = text(document.querySelector('[data-live=surplus_labels]'));
  const raters = {};
  for (const row of document.querySelectorAll('tr[data-rater-id]')) {
    const cell = (key) => text(row.querySelector(`[data-live-rater=${key}]`));
    raters[row.dataset.raterId] = {labels: cell('labels'), today: cell('labels_today'), last_hour: cell('labels_last_hour'),
      training: cell('training'), gold: cell('gold'), ambiguous: cell('ambiguous'), broken: cell('broken'), rate: cell('rate')};
  }
  const queries = {};
  for (const row of document.querySelectorAll('#query-rows tr[data-caption]')) {
    const cells = [...row.querySelectorAll('td')].map(text);
    queries[row.dataset.caption] = {caption: text(row.querySelector('.caption-text')), pairs: cells[0], judged: cells[1],
      relevant: cells[2], left: cells[3]};
  }
  const table = (chart) => [...document.querySelectorAll(`[data-chart=${chart}] details tbody tr`)]
    .map((tr) => [...tr.querySelectorAll('td')].map(text));
  return {figures, raters, queries, per_rater: table('raters'), hourly: table('hourly'),
          progress: table('progress'), polls: Number(document.getElementById('pool-live').dataset.polls || 0)};
}"""


def number(text: str) -> int:
    return int(text.replace(",", "").replace("\u202f", "").replace("\xa0", ""))


def database_truth(pool, raters) -> dict:
    pairs = PooledPair.objects.filter(pool=pool, role="pool")
    production = Label.objects.filter(pair__pool=pool, pair__role__in=["pool", "gold"])
    hour_ago = timezone.now() - timedelta(hours=1)
    per_rater = {}
    for rater in raters:
        mine = production.filter(rater=rater)
        membership = PoolMembership.objects.get(pool=pool, rater=rater)
        gold = mine.filter(pair__role="gold")
        right = sum(1 for label in gold.select_related("pair") if label.value == label.pair.known_answer)
        per_rater[str(rater.pk)] = {
            "labels": mine.count(), "last_hour": mine.filter(created_at__gte=hour_ago).count(),
            "training": membership.training, "gold": f"{right}/{gold.count()}" if gold.exists() else "–",
            "ambiguous": mine.filter(value="ambiguous").count(), "broken": mine.filter(value="broken").count(),
        }
    queries = {}
    for caption_id in pairs.values_list("caption_id", flat=True).distinct():
        mine = pairs.filter(caption_id=caption_id)
        queries[str(caption_id)] = {
            "judged": mine.filter(state__in=["resolved", "disagreement"]).count(),
            "relevant": mine.filter(state="resolved", resolved_label="relevant").count(),
            "left": mine.filter(state="open").count(), "caption": mine.first().caption.text,
        }
    return {
        "pairs": pairs.count(), "resolved": pairs.filter(state="resolved").count(),
        "left": pairs.filter(state="open").count(),
        "relevant": pairs.filter(state="resolved", resolved_label="relevant").count(),
        "labels": production.count(), "surplus": production.exclude(surplus_reason="").count(),
        "last_hour": production.filter(created_at__gte=hour_ago).count(),
        "double": pairs.filter(required_labels__gte=2).count(),
        "raters": per_rater, "queries": queries,
    }


def assert_page_matches(shown: dict, truth: dict, usernames: dict) -> None:
    f = shown["figures"]
    assert (number(f["pairs"]), number(f["by_state.resolved"]), number(f["left"]), number(f["relevant"])) == (
        truth["pairs"], truth["resolved"], truth["left"], truth["relevant"]), shown
    assert (number(f["labels"]), number(f["surplus_labels"]), number(f["labels_last_hour"]), number(f["double_labelled"])) == (
        truth["labels"], truth["surplus"], truth["last_hour"], truth["double"]), shown
    # The pool's label count is the raters' counts added up, and the last hour is part of it.
    assert sum(number(r["labels"]) for r in shown["raters"].values()) == truth["labels"]
    for rater_id, expected in truth["raters"].items():
        row = shown["raters"][rater_id]
        assert (number(row["labels"]), number(row["last_hour"]), number(row["ambiguous"]), number(row["broken"])) == (
            expected["labels"], expected["last_hour"], expected["ambiguous"], expected["broken"]), (rater_id, row)
        assert row["training"].startswith(expected["training"]), (rater_id, row)
        assert row["gold"] == expected["gold"], (rater_id, row)
        assert number(row["today"]) == expected["labels"]  # every label of this test is today's
        # A rater without labels has no rate: never "0 labels, 1046/h".
        if expected["labels"] == 0:
            assert row["rate"] == "–", row
    for caption_id, expected in truth["queries"].items():
        row = shown["queries"][caption_id]
        assert row["caption"] == expected["caption"]  # the caption's words, not its id
        assert (number(row["judged"]), number(row["relevant"]), number(row["left"])) == (
            expected["judged"], expected["relevant"], expected["left"]), (caption_id, row)
    # The charts: bars per rater are each rater's labels (all within the window), the hourly
    # columns add up to the same, and the cumulative line ends at the label count.
    bars = {name: number(value) for name, value in shown["per_rater"]}
    assert bars == {usernames[r]: e["labels"] for r, e in truth["raters"].items() if e["labels"]}
    assert sum(number(value) for _, value in shown["hourly"]) == truth["labels"]
    assert number(shown["progress"][-1][1]) == truth["labels"]


class RaterByApi:
    """A rater working through the REST API, as their judging page does."""

    def __init__(self, rater, pool):
        self.client = Client()
        self.client.force_login(rater)
        self.pool = pool
        self.count = 0

    def answer(self, choose) -> dict:
        """Takes the next pair and answers it with choose(assignment) (a value or None to stop)."""
        response = self.client.post(f"/api/v1/pools/{self.pool.pk}/next/", {}, content_type="application/json")
        assert response.status_code == 200, response.content
        assignment = response.json()["assignment"]
        assert assignment, response.json()
        # The clip's minimum watching time has passed: the lease was handed out a minute ago.
        Lease.objects.filter(token=assignment["lease_id"]).update(created_at=timezone.now() - timedelta(minutes=1))
        self.count += 1
        response = self.client.post("/api/v1/labels/", {
            "client_id": f"snap-{self.pool.pk}-{id(self)}-{self.count}", "lease_id": assignment["lease_id"],
            "value": choose(assignment), "seconds": 3.0}, content_type="application/json")
        assert response.status_code in (200, 201), response.content
        return assignment


def test_every_figure_of_the_pool_page_follows_labels_and_agrees_with_the_database(page, server):
    setup = judging_setup(pairs=8, training=2, pool_name="Snapshot pool", redundancy=0.5)
    known_pairs_add(pool=setup.pool, items=[{"caption": "q0", "clip": "v1", "answer": "not_relevant", "role": "gold"}])
    setup.pool.gold_rate = 0.5
    setup.pool.save(update_fields=["gold_rate"])
    second = rater_create(username="rater2", password=PASSWORD)
    memberships_grant(pool=setup.pool, users=[second])
    raters = [setup.rater, second]
    usernames = {str(r.pk): r.username for r in raters}
    admin = admin_user()
    log_in(page, server, admin.username, PASSWORD)
    page.goto(f"{server}/admin-ui/pools/{setup.pool.pk}/")
    page.evaluate("() => { window.notReloaded = true; }")
    page.wait_for_selector("#pool-charts[data-drawn=true]")
    assert_page_matches(page.evaluate(READ_PAGE), database_truth(setup.pool, raters), usernames)

    def refreshed_and_checked(step: str) -> None:
        truth = database_truth(setup.pool, raters)
        # Wait for a refresh that saw the last label (the count), then every other number must
        # come from that same snapshot.
        page.wait_for_function("(n) => document.querySelector('b[data-live=labels]').textContent === String(n)"
                               " && document.querySelector('#pool-charts[data-drawn=true]') !== null", arg=truth["labels"])
        page.wait_for_function(
            "(n) => [...document.querySelectorAll('[data-chart=hourly] details tbody tr td:last-child')]"
            ".reduce((s, td) => s + Number(td.textContent.replace(/\\D/g, '')), 0) === n", arg=truth["labels"])
        assert_page_matches(page.evaluate(READ_PAGE), truth, usernames)
        assert page.evaluate("() => window.notReloaded") is True, step

    first = RaterByApi(setup.rater, setup.pool)
    # Training through the API: the training badge goes from pending to passed without a reload.
    for _ in range(2):
        first.answer(lambda a: setup.training_answers[a["caption"]["text"]])
    page.wait_for_function(f"() => document.querySelector(\"tr[data-rater-id='{setup.rater.pk}'] [data-live-rater=training]\")"
                           ".textContent.trim().startsWith('passed')")
    refreshed_and_checked("training")

    values = ["relevant", "not_relevant", "ambiguous", "relevant"]
    for step, value in enumerate(values):
        first.answer(lambda a, value=value: value)
        refreshed_and_checked(f"label {step}")
    snap(page, "admin-pool-live-snapshot")
