"""Offline commands (evaluate, agreement, simulate_judging) skip Django's system checks.

The URL check imports every view, and with them scipy.stats, crowd-kit and pandas, which made a
TRECVID `evaluate` spend ~3 s of its ~4 s importing what it never uses. The test runs the command
as a user does (manage.py's entry point, in a fresh interpreter) and lists what it imported."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures" / "evaluation"
NEVER_NEEDED = ("api.views", "frontend.views", "crowdkit", "pandas", "sklearn")

SCRIPT = """
import json, sys
from django.core.management import execute_from_command_line
execute_from_command_line(["manage.py", *sys.argv[1:]])
sys.stdout.flush()
print("\\nIMPORTED " + json.dumps(sorted({m.split(".")[0] if not m.startswith(("api.", "frontend."))
                                           else ".".join(m.split(".")[:2]) for m in sys.modules})))
"""


def imported_by(*argv: str) -> set[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=True)
    line = next(l for l in done.stdout.splitlines() if l.startswith("IMPORTED "))
    return set(json.loads(line.removeprefix("IMPORTED ")))


@pytest.mark.parametrize("argv", [
    ("evaluate", str(FIXTURES / "trecvid_run_a.txt"), "--judgments", str(FIXTURES / "trecvid.qrels"),
     "--judgments-format", "sample_eval"),
    ("evaluate", str(FIXTURES / "trec_run_a.txt"), "--judgments", str(FIXTURES / "trec.qrels"),
     "--judgments-format", "qrels"),
], ids=["sample_eval", "trec_eval"])
def test_evaluate_imports_no_view_and_no_aggregation_library(argv):
    imported = imported_by(*argv)
    assert "annotation" in imported  # the command ran
    assert not imported & set(NEVER_NEEDED), sorted(imported & set(NEVER_NEEDED))


def test_the_system_checks_still_run_where_they_matter():
    """`check` is what a deploy runs: it still resolves every URL and so imports the views."""
    assert "api.views" in imported_by("check")
