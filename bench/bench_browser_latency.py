"""Judging page: time from an answer's key press to the next clip on screen, measured in the browser.

    .venv/bin/python bench/bench_browser_latency.py [--submits 50] [--think-ms 600] [--database-url URL]

Builds a throw-away test database from the models (PostgreSQL by default, the `rejudge_bench_<pid>`
server), a pool of real H.264 clips and a rater, serves the app from a threaded local server (the
app's own Range-aware media view, as in production), and drives Debian's Chromium headless
through Playwright: it answers `--submits` pairs from the keyboard, pausing `--think-ms` on each
(a rater looks at a clip before answering, which is when the next one preloads). The page records,
for each answer, the time from the key press to the first animation frame after the next clip's
frame is ready (`window.rejudgeTimings`). Goal (issue 4): under 200 ms on a local server.
"""
from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

from _setup import bench_database_url

REPO = Path(__file__).resolve().parent.parent


NEXT_PAIR_SHOWN = """(after) => { const j = document.getElementById('judge');
  return j.dataset.state === 'working' && j.dataset.armed === 'true' && j.dataset.pairId !== after; }"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def start_server(port: int = 0):
    """A threaded local server (on `port`, 0: a free one). Django's live server would answer /media/
    itself, without Range support; unwrapping its media handler sends /media/ through the app's
    view, as in production."""
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.test.testcases import LiveServerThread

    thread = LiveServerThread("127.0.0.1", static_handler=lambda media: StaticFilesHandler(media.application), port=port)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    return thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submits", type=int, default=50)
    parser.add_argument("--think-ms", type=int, default=600, help="time spent on each pair before answering")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--port", type=int, default=None, help="the local server's port (default: a free one)")
    args = parser.parse_args()

    os.environ["DATABASE_URL"] = bench_database_url(args.database_url)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))  # DEBUG off needs one; plain http below
    os.environ.setdefault("REJUDGE_HTTPS", "0")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs an event loop here
    sys.path.insert(0, str(REPO))
    warnings.filterwarnings("ignore", message="No directory at")  # static files come from the apps here
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_databases, setup_test_environment, teardown_databases

    media = tempfile.TemporaryDirectory()
    settings.MEDIA_ROOT = Path(media.name)
    settings.DATABASES["default"]["TEST"]["MIGRATE"] = False  # tables straight from the models
    setup_test_environment()
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        run(args, connection)
    finally:
        connection.close()
        teardown_databases(databases, verbosity=0)
        media.cleanup()


def run(args, connection) -> None:
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import launch_chromium, log_in
    from tests.browser.scenarios import judging_setup

    setup = judging_setup(pairs=args.submits + 10, training=0)
    server = start_server(args.port or 0)
    base = f"http://127.0.0.1:{server.port}"
    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}; server {base}; "
          f"{args.submits} answers, {args.think_ms} ms on each pair")
    try:
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            log_in(page, base, setup.rater.username, setup.password)
            page.goto(f"{base}/judge/{setup.pool.pk}/")
            shown = None
            for _ in range(args.submits):
                page.wait_for_function(NEXT_PAIR_SHOWN, arg=shown, timeout=30000)
                shown = page.get_attribute("#judge", "data-pair-id")
                page.wait_for_timeout(args.think_ms)
                page.keyboard.press("1")
            page.wait_for_function(f"() => window.rejudgeTimings.length >= {args.submits}", timeout=30000)
            timings = page.evaluate("window.rejudgeTimings")
            page.wait_for_selector("#save-status[data-status=saved]", timeout=30000)
            browser.close()
    finally:
        server.terminate()

    ms = [t["ms"] for t in timings]
    preloaded = sum(1 for t in timings if t["preloaded"])
    print(f"submit -> next clip showing, {len(ms)} answers ({preloaded} from the preloaded pair):")
    print(f"  p50 {statistics.median(ms):.0f} ms   p95 {percentile(ms, 0.95):.0f} ms   max {max(ms):.0f} ms   "
          f"min {min(ms):.0f} ms")
    print(f"  goal: p95 under 200 ms -> {'met' if percentile(ms, 0.95) < 200 else 'NOT met'}")


if __name__ == "__main__":
    main()
