"""Every page of the platform, saved as PNG at 1440x900, 1280x720 and 390x844 in the light and
the dark colour scheme, for a person to look at.

    .venv/bin/python bench/screenshots.py OUT_FOLDER

It runs tests/browser/test_a11y_layout.py::test_screenshots_of_every_page (the demo plus a report
of every kind, served by a live test server, in the system Chromium) with the folder in
REJUDGE_SCREENSHOTS_DIR; it needs PostgreSQL and Redis as the tests do."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import socket
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the PNG files (made if missing)")
    args = parser.parse_args()
    env = {**os.environ, "REJUDGE_SCREENSHOTS_DIR": str(args.out.resolve())}
    # A test database and object-store port of this run's own (the tests' defaults are shared).
    env.setdefault("REJUDGE_TEST_DATABASE_NAME", f"test_rejudge_screenshots_{os.getpid()}")
    with socket.socket() as probe:  # not _setup.free_port: importing _setup would change the tests' env
        probe.bind(("127.0.0.1", 0))
        env.setdefault("REJUDGE_TEST_S3_PORT", str(probe.getsockname()[1]))
    done = subprocess.run(["bash", "scripts/test.sh", "tests/browser/test_a11y_layout.py::test_screenshots_of_every_page",
                           "-q", "-s", "-p", "no:randomly"], cwd=REPO, env=env)
    shots = sorted(args.out.glob("*.png"))
    print(f"{len(shots)} screenshots in {args.out}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
