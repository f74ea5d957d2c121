"""The pool page runs a machine judge: an admin registers one (naming the key's variable, never the
key), starts it, watches the job to its end on the page, and finds the judge in the pool's table."""
from __future__ import annotations

import pytest

from annotation.models import JudgeEndpoint, MachineJudge
from tests.annotation.services.machine_judges.judge_world import agreement, judge_server, mini_pool  # noqa: F401
from tests.browser.conftest import assert_controls_labelled, log_in, snap
from tests.browser.scenarios import PASSWORD, admin_user

pytestmark = pytest.mark.browser


def test_an_admin_registers_and_runs_a_machine_judge_from_the_pool_page(page, server, judge_server, monkeypatch):
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_PAGE", "sk-page-test-secret")
    monkeypatch.setenv("REJUDGE_JUDGE_KEY_PAGE_HOSTS", f"http://127.0.0.1:{judge_server.port}")
    pool = mini_pool(clips=("demo01", "demo04"), captions=("cap01", "cap13"))
    log_in(page, server, admin_user().username, PASSWORD)
    page.goto(f"{server}/admin-ui/pools/{pool.pk}/")
    assert page.locator("#machine-judge-run").count() == 0  # nothing registered: nothing to run yet
    page.click("text=Register a machine judge")
    page.fill("#judge-name", "page judge")
    page.fill("#judge-url", judge_server.url)
    page.fill("#judge-model", "demo-vl")
    page.fill("#judge-key-env", "REJUDGE_JUDGE_KEY_PAGE")
    page.fill("#judge-frames", "4")
    page.click("#machine-judge-register [type=submit]")
    page.wait_for_selector("#machine-judge-run", timeout=60_000)  # registered: the page reloads with the run form
    assert JudgeEndpoint.objects.get(name="page judge").key_env == "REJUDGE_JUDGE_KEY_PAGE"
    assert_controls_labelled(page)
    page.click("#machine-judge-run [type=submit]")
    page.wait_for_selector("#machine-judge-run [data-status=succeeded]", timeout=180_000)
    snap(page, "admin-pool-machine-judge")
    judge = MachineJudge.objects.get(pool=pool)
    assert judge.counts["judged"] == 4 and agreement(judge) == 1.0
    assert judge_server.stats()["authorization"] == ["Bearer sk-page-test-secret"]
    page.reload()
    assert page.locator("#pool-machine-judge table tbody tr").count() == 1
    assert "sk-page-test-secret" not in page.content()
