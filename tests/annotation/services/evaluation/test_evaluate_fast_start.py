"""`manage.py evaluate --judgments FILE` runs before django.setup() (annotation.management.commands.
_offline.run_without_setup): the same output as through Django, errors printed and exit codes as
Django prints them, and none of the settings, Celery, the models or the admin imported."""
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.management.commands._offline import run_without_setup

REPO = Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "fixtures" / "evaluation"
ARGS = [str(FIXTURES / "trecvid_run_a.txt"), str(FIXTURES / "trecvid_run_b.txt"), "--judgments",
        str(FIXTURES / "trecvid.qrels"), "--judgments-format", "sample_eval", "--output", "sample_eval"]


def manage(*args, importtime=False):
    python = [sys.executable, *(["-X", "importtime"] if importtime else []), str(REPO / "manage.py")]
    return subprocess.run([*python, "evaluate", *args], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings"))


def test_file_only_evaluate_prints_what_django_prints_without_setting_django_up():
    through_django = StringIO()
    call_command("evaluate", *ARGS, stdout=through_django)
    done = manage(*ARGS, importtime=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == through_django.getvalue()
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "annotation.services.evaluation" in imported  # the listing is there, so its absences mean something
    for heavy in ("config.settings", "celery", "annotation.models", "django.contrib.admin", "rest_framework", "scipy"):
        assert heavy not in imported


def test_file_only_errors_print_as_django_prints_them(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("9 Q0 s1a 1 2 runA\n9 Q0 s1a 2 1 runA\n")
    done = manage(str(bad), *ARGS[2:])
    assert done.returncode == 1
    assert done.stderr.startswith("CommandError: import refused, nothing was written:")
    assert "bad.txt, line 2, field 'doc_id': document 's1a' is already listed for query '9' on line 1" in done.stderr
    usage = manage(*ARGS[:-1], "bogus")
    assert usage.returncode == 2 and "invalid choice: 'bogus'" in usage.stderr


@pytest.mark.parametrize("extra", [["--dataset", "d", "--judgment-set", "x"], ["--run", "r"], ["--store"],
                                   ["--with-originals"]])
def test_anything_stored_goes_through_django(extra):
    # run_without_setup declines before running anything; Django's entry point then names the problem.
    argv = ["manage.py", "evaluate", *ARGS, *extra]
    if "--dataset" in extra:
        argv.remove("--judgments")
        argv.remove(ARGS[3])
    assert run_without_setup(argv) is False
    assert run_without_setup(["manage.py", "agreement", "x"]) is False
