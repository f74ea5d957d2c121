"""Issue 17 item 4: GET /metrics, Prometheus' text format. Who may scrape it (the scrape token, or
staff signed in; everyone else 403), the work gauges against a hand-built example, and the request
latency histograms of django-prometheus."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import REPO
from tests.factories import make_pool_with_runs, make_rater, make_user

pytestmark = pytest.mark.django_db
TOKEN = "scrape-token-0123456789"


@pytest.fixture
def token(settings):
    settings.REJUDGE_METRICS_TOKEN = TOKEN
    return TOKEN


def samples(response) -> dict[tuple[str, tuple], float]:
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.content.decode()) for s in family.samples}


def test_the_scrape_token_is_accepted(client, token):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert ("rejudge_jobs", (("status", "queued"),)) in samples(response)
    assert response["Cache-Control"].startswith("max-age=0")


def test_staff_signed_in_may_read_it(client):
    client.force_login(make_user("admin"))
    samples(client.get("/metrics"))


@pytest.mark.parametrize("caller", ["anonymous", "rater", "researcher", "no_role", "wrong_token", "token_as_basic"])
def test_everyone_else_is_refused(client, token, caller):
    headers = {}
    if caller in {"rater", "researcher"}:
        client.force_login(make_user(caller))
    elif caller == "no_role":
        from django.contrib.auth import get_user_model

        client.force_login(get_user_model().objects.create_user(username="plain", password="pw-123456"))
    elif caller == "wrong_token":
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}x"
    elif caller == "token_as_basic":
        headers["HTTP_AUTHORIZATION"] = f"Basic {token}"
    response = client.get("/metrics", **headers)
    assert response.status_code == 403
    assert b"rejudge_" not in response.content


def test_with_no_token_set_no_bearer_value_gets_in(client, settings):
    settings.REJUDGE_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer x").status_code == 403


def test_only_get(client, token):
    assert client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 405


def test_the_work_gauges_count_what_a_hand_built_example_holds(client, token):
    """Pool A: 6 pool pairs, of which 3 are made available (what the queue would hand out); a gold
    pair is available too but is not queue depth (gold is mixed in, never queued on its own).
    Leases on A: 2 active and unexpired (counted), 1 active but past expiry (waiting for the reaper:
    not live), 1 released. Labels on A: 2 given 10 s ago, 1 given 2 min ago (not in the last minute).
    Pool B: nothing available, no lease, no label: reported with zeros, so an empty queue shows.
    Jobs: 1 queued, 2 running (kinds x and y), 1 failed, 0 succeeded."""
    from annotation.models import Job, Label, Lease, PooledPair

    pool_a, _ = make_pool_with_runs(captions=3, clips=6, depth=2)
    pool_b, _ = make_pool_with_runs(captions=2, clips=4, depth=2)
    PooledPair.objects.update(available=False)
    pairs = list(PooledPair.objects.filter(pool=pool_a, role=PooledPair.Role.POOL).order_by("pk"))
    assert len(pairs) >= 6
    PooledPair.objects.filter(pk__in=[p.pk for p in pairs[:3]]).update(available=True)
    PooledPair.objects.create(pool=pool_a, caption=pairs[0].caption, clip=pairs[0].clip, role=PooledPair.Role.GOLD,
                              known_answer="relevant", available=True)
    now = timezone.now()
    raters = [make_rater() for _ in range(4)]
    Lease.objects.create(pair=pairs[0], rater=raters[0], expires_at=now + timedelta(minutes=5))
    Lease.objects.create(pair=pairs[1], rater=raters[1], expires_at=now + timedelta(minutes=5))
    Lease.objects.create(pair=pairs[2], rater=raters[2], expires_at=now - timedelta(seconds=5))
    Lease.objects.create(pair=pairs[3], rater=raters[3], expires_at=now + timedelta(minutes=5), state=Lease.State.RELEASED)
    for n, (pair, age) in enumerate([(pairs[3], 10), (pairs[4], 10), (pairs[5], 120)]):
        label = Label.objects.create(pair=pair, rater=raters[n], value="relevant", client_id=f"m{n}")
        Label.objects.filter(pk=label.pk).update(created_at=now - timedelta(seconds=age))
    Job.objects.create(kind="x", status=Job.Status.QUEUED)
    Job.objects.create(kind="x", status=Job.Status.RUNNING)
    Job.objects.create(kind="y", status=Job.Status.RUNNING)
    Job.objects.create(kind="y", status=Job.Status.FAILED)

    values = samples(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}"))

    def pool_value(name, pool):
        return values[(name, (("dataset", pool.dataset.name), ("pool", str(pool.pk)), ("pool_name", pool.name)))]

    assert [pool_value("rejudge_queue_depth", p) for p in (pool_a, pool_b)] == [3, 0]
    assert [pool_value("rejudge_live_leases", p) for p in (pool_a, pool_b)] == [2, 0]
    assert [pool_value("rejudge_labels_last_minute", p) for p in (pool_a, pool_b)] == [2, 0]
    assert {status: values[("rejudge_jobs", (("status", status),))] for status in Job.Status.values} == \
        {"queued": 1, "running": 2, "succeeded": 0, "failed": 1}
    assert values[("rejudge_jobs_running", (("kind", "x"),))] == 1
    assert values[("rejudge_jobs_running", (("kind", "y"),))] == 1


def test_request_latency_is_counted_per_view_and_method(client, token):
    def me_count() -> float:
        values = samples(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}"))
        return values.get(("django_http_requests_latency_seconds_by_view_method_count",
                           (("method", "GET"), ("view", "api:me"))), 0)

    before = me_count()
    for _ in range(3):
        client.get("/api/v1/me/")
    assert me_count() == before + 3


def test_each_label_set_keeps_its_own_series(client, token):
    """The middleware keeps each labelled series it has looked up (config/request_metrics.py): two
    statuses of one view, and two views, still count apart."""
    def counts() -> dict:
        values = samples(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}"))
        return {(status, view): values.get(("django_http_responses_total_by_status_view_method_total",
                                            (("method", "GET"), ("status", status), ("view", view))), 0)
                for status in ("200", "403") for view in ("api:me", "api:dataset-list")}

    before = counts()
    client.get("/api/v1/me/")
    client.get("/api/v1/me/")  # anonymous: 403
    client.get("/api/v1/datasets/")
    client.force_login(make_user("admin"))
    client.get("/api/v1/me/")
    after = counts()
    assert {key: after[key] - before[key] for key in after} == {
        ("200", "api:me"): 1, ("403", "api:me"): 2, ("200", "api:dataset-list"): 0, ("403", "api:dataset-list"): 1}


SCRIPT = r"""
import os, sys
import django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
client = Client()
if sys.argv[1] == "requests":
    for _ in range(int(sys.argv[2])):
        assert client.get("/api/v1/me/").status_code == 403
else:
    from django.core.management import call_command
    call_command("migrate", verbosity=0)  # the work gauges read the tables
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer " + os.environ["REJUDGE_METRICS_TOKEN"])
    sys.stdout.write(response.content.decode())
"""


def test_multiprocess_mode_sums_the_requests_of_every_process(tmp_path):
    """As under gunicorn: two processes serve requests, a third answers the scrape, which counts
    the requests of both (the files in PROMETHEUS_MULTIPROC_DIR). Anonymous requests to /api/v1/me/
    touch no table; the scraping process migrates an SQLite file for the work gauges."""
    folder = tmp_path / "prometheus"
    folder.mkdir()
    env = os.environ | {"PROMETHEUS_MULTIPROC_DIR": str(folder), "DJANGO_SETTINGS_MODULE": "config.settings",
                        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "REJUDGE_METRICS_TOKEN": TOKEN,
                        "REJUDGE_HTTPS": "0", "SECRET_KEY": "multiprocess-test-key", "LOG_LEVEL": "ERROR"}

    def run(*argv) -> str:
        done = subprocess.run([sys.executable, "-c", SCRIPT, *argv], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    run("requests", "2")
    run("requests", "3")
    scraped = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(run("scrape")) for s in family.samples}
    key = ("django_http_requests_latency_seconds_by_view_method_count", (("method", "GET"), ("view", "api:me")))
    assert scraped[key] == 5
