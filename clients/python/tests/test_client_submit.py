"""``Client.submit`` and ``rejudge-client submit`` against the platform itself (Django's live server,
real HTTP): a run submitted to a release of the hand-worked example comes back scored, with the
holes worked by hand (tests/annotation/services/submissions/test_score_submission.py); a retry
with the same Idempotency-Key gets the first submission; a bad file's errors name file, line and
field; a rater is refused."""
from __future__ import annotations

import json

import pytest

from rejudge_client import Client
from rejudge_client.cli import main
from rejudge_client.errors import APIError

pytestmark = pytest.mark.django_db(transaction=True)

RUN_S = ("q1 Q0 v4 1 0.9 S\nq1 Q0 v2 2 0.8 S\nq1 Q0 v3 3 0.7 S\n"
         "q2 Q0 v4 1 0.9 S\nq2 Q0 v5 2 0.8 S\nq2 Q0 v2 3 0.7 S\n"
         "q3 Q0 v1 1 0.9 S\nq3 Q0 v3 2 0.8 S\n")


@pytest.fixture
def platform(tmp_path, live_server, settings):
    # The example's verdicts are given the moment their pairs are leased (tests/conftest.py does the
    # same for the platform's own tests, which this folder's tests are not under).
    settings.REJUDGE = {**settings.REJUDGE, "MIN_WATCH_SECONDS": 0}
    from annotation.services.accounts.users import api_token_for
    from annotation.services.releases.create import release_create
    from tests.annotation.services.reports.test_report_metrics import example_pool
    from tests.factories import make_rater, make_user

    release = release_create(allow_unresolved=True, pools=[example_pool(tmp_path)], name="example-fire")
    run = tmp_path / "s.trec"
    run.write_text(RUN_S)
    return {"url": live_server.url, "release": release, "run": run,
            "researcher": api_token_for(user=make_user("researcher")), "rater": api_token_for(user=make_rater())}


def test_submit_waits_for_the_scores(platform):
    with Client(platform["url"], token=platform["researcher"]) as client:
        first = client.submit("example-fire@v1", platform["run"], name="model-s", idempotency_key="once", poll=0.1)
        again = client.submit(platform["release"].pk, platform["run"], name="model-s", idempotency_key="once",
                              poll=0.1)
    assert first["state"] == "scored" and first["release"] == "example-fire@v1", first.get("job")
    assert first["summary"]["holes"]["per_query"] == {"q1": 1, "q2": 2, "q3": 1}
    assert first["summary"]["values"]["C@5"]["value"] == 1.0
    assert again["id"] == first["id"]


def test_a_bad_file_fails_naming_its_line_and_a_rater_is_refused(platform, tmp_path):
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 v1 1 0.9 S\nq1 Q0 nope 2 0.8 S\n")
    with Client(platform["url"], token=platform["researcher"]) as client:
        failed = client.submit(platform["release"].pk, bad, name="bad", poll=0.1)
    assert failed["state"] == "failed"
    assert [(e["file"], e["line"], e["field"]) for e in failed["job"]["errors"]] == [("bad.trec", 2, "doc_id")]
    with Client(platform["url"], token=platform["rater"]) as client, pytest.raises(APIError) as refused:
        client.submit(platform["release"].pk, platform["run"], name="m")
    assert refused.value.status == 403


def test_the_command_prints_measures_judged_and_holes(platform, capsys):
    args = ["submit", str(platform["release"].pk), str(platform["run"]), "--name", "model-s", "--url",
            platform["url"], "--token", platform["researcher"]]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "model-s to example-fire@v1: scored" in out and "Judged@10" in out
    assert "holes: 4 pairs of the top 10 without a verdict, in 3 of 3 queries" in out
    assert main(args + ["--json", "--no-wait"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "model-s"
