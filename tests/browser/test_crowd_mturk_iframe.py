"""An MTurk worker inside MTurk's iframe, in a real browser: a parent page served by a second
local server on http://127.0.0.1 (MTurk's part) frames the study link on the live server,
http://localhost, another site. (Chromium refuses a public origin such as worker.mturk.com framing
a local server, so the parent is local and REJUDGE_MTURK_FRAME_ANCESTORS names it; the header test
in tests/api/test_crowd_worker_token.py checks the real two origins.) A SameSite=Lax cookie is
never sent in that frame, so the worker goes through consent, guidelines and judging to the quota
on the worker token alone, and the completion form posts the assignment to
turkSubmitTo/mturk/externalSubmit (https://workersandbox.mturk.com, answered by Playwright).
No request to our server carries the session cookie; every API call carries the token."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest
from django.conf import settings

from annotation.models import CrowdWorker, Label
from annotation.services.crowd.studies import study_save
from tests.browser.conftest import snap
from tests.browser.scenarios import judging_setup
from tests.browser.test_csp import WATCH_CSP
from tests.browser.waits import WAIT_MS

pytestmark = pytest.mark.browser

QUOTA = 3
SANDBOX = "https://workersandbox.mturk.com"


def parent_server(entry: str) -> ThreadingHTTPServer:
    """MTurk's stand-in: one page framing the study link."""
    body = (f"<!doctype html><title>MTurk</title><iframe id='hit' src='{entry}' "
            "style='width:1200px;height:850px'></iframe>").encode()

    class Parent(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Parent)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def test_mturk_worker_in_the_iframe_from_accept_to_submitted_assignment(browser, server, settings):
    setup = judging_setup(pairs=6, training=0, pool_name="MTurk pool")
    study = study_save(pool=setup.pool, platform="mturk", title="Judge video clips", description="Caption and clip.",
                       quota_pairs=QUOTA, consent_text="You agree that your answers are stored anonymously.",
                       training_required=False)
    entry = (f"{server}/study/{study.token}/?workerId=A1IFRAMEWORKER&assignmentId=3ASSIGN1&hitId=3HIT1"
             f"&turkSubmitTo={SANDBOX}")
    assert server.startswith("http://localhost:")
    httpd = parent_server(entry)
    parent = f"http://127.0.0.1:{httpd.server_address[1]}"
    settings.REJUDGE_MTURK_FRAME_ANCESTORS = [parent]
    submitted, our_requests, errors = [], [], []

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    context.add_init_script(WATCH_CSP)

    def mturk_submit(route):
        submitted.append((route.request.method, parse_qs(route.request.post_data or "")))
        route.fulfill(status=200, content_type="text/html", body="<h1 id='mturk-received'>Assignment submitted</h1>")

    context.route(f"{SANDBOX}/mturk/externalSubmit", mturk_submit)
    context.on("request", lambda request: our_requests.append(request) if request.url.startswith(server) else None)
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
    violations = []
    try:
        page.goto(parent)
        frame = page.frame_locator("#hit")
        frame.locator("#consent-agree").wait_for()
        violations += next(f for f in page.frames if f.url.startswith(server)).evaluate("() => window.__cspViolations")
        frame.locator("#consent-agree").click()
        frame.locator("#guidelines-start").click()
        frame.locator("#crowd-bar").wait_for()
        child = next(f for f in page.frames if f.url.startswith(f"{server}/study/{study.token}/work/"))
        shown = None
        for _ in range(QUOTA):
            child.wait_for_function(
                """(after) => { const j = document.getElementById('judge');
                     return j.dataset.state === 'working' && j.dataset.armed === 'true' && j.dataset.pairId !== after; }""",
                arg=shown, polling=200)
            shown = child.evaluate("() => document.getElementById('judge').dataset.pairId")
            violations += child.evaluate("() => window.__cspViolations")
            child.locator("body").press("2")
        # The quota met, the page goes to the completion page, whose form posts to MTurk by itself.
        page.frame_locator("#hit").locator("#mturk-received").wait_for(timeout=WAIT_MS)
        snap(page, "mturk-iframe-submitted")
        sent = [(request.url, request.all_headers()) for request in our_requests]
    finally:
        context.close()
        httpd.shutdown()

    assert errors == []
    assert violations == []
    assert len(submitted) == 1
    method, fields = submitted[0]
    assert method == "POST" and fields == {"assignmentId": ["3ASSIGN1"], "quotaMet": ["true"]}
    worker = CrowdWorker.objects.get(study=study)
    assert worker.worker_id == "A1IFRAMEWORKER" and worker.stage == CrowdWorker.Stage.DONE
    assert Label.objects.filter(rater=worker.user).count() == QUOTA
    # Meaningful only if the frame had no session: no request to our server carried the cookie
    # (the arrival set it, the browser kept it out of the cross-site frame), and every API call,
    # the labels among them, was authenticated by the worker token.
    session_cookie = settings.SESSION_COOKIE_NAME
    assert sent
    for url, headers in sent:
        assert f"{session_cookie}=" not in headers.get("cookie", ""), url
    api_calls = [(url, headers) for url, headers in sent if "/api/v1/" in url]
    assert any(url.endswith("/api/v1/labels/") for url, _ in api_calls)
    assert all(headers.get("authorization", "").startswith("StudyWorker ") for _, headers in api_calls)
    # The clips came through the worker token too (a <video> sends no header).
    assert any("/media/" in url and "wt=" in url for url, _ in sent)
