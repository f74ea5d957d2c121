"""`agreement --dataset D --judgment-set NAME`: a stored rater_labels set gives the numbers the file
gives, read with the options it was imported with, and --store keeps them as a report."""
from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Report
from annotation.services.judgment_sets.imports import judgments_import

from .helpers import dataset_from_ids

pytestmark = pytest.mark.django_db
EXCERPT = Path(__file__).resolve().parents[3] / "fixtures" / "tvr_ranking_excerpt.csv"
COLUMNS = "unit=pair_id,rater=worker,value=relevance"


def _run(*args) -> dict:
    out = StringIO()
    call_command("agreement", *args, "--json", "--n-boot", "20", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_a_stored_set_agrees_with_its_file_under_the_stored_repeat_rule(tmp_path):
    dataset = dataset_from_ids(tmp_path, queries=["q"], items=["v"], name="tvr")
    judgments_import(dataset=dataset, path=EXCERPT, fmt="rater_labels", name="raw",
                     options={"columns": COLUMNS, "repeats": "first"})
    from_file = _run("--judgments", str(EXCERPT), "--judgments-format", "rater_labels", "--columns", COLUMNS,
                     "--repeats", "first", "--level", "ordinal")
    stored = _run("--dataset", "tvr", "--judgment-set", "raw", "--level", "ordinal")
    assert stored["repeats"] == "first"
    for key in ("alpha", "alpha_ci", "percent_agreement", "units", "raters", "repeated_cells",
                "repeated_cells_identical", "labels_set_aside"):
        assert stored[key] == from_file[key], key
    # A rule given on the command line wins over the stored one.
    last = _run("--dataset", "tvr", "--judgment-set", "raw", "--level", "ordinal", "--repeats", "last")
    assert last["repeats"] == "last"
    assert last["labels_set_aside"] == stored["labels_set_aside"]  # the same cells, the other label of each
    if stored["repeated_cells"] > stored["repeated_cells_identical"]:
        assert last["alpha"] != stored["alpha"]


def test_store_keeps_a_report_and_bad_requests_say_what_to_do(tmp_path):
    dataset = dataset_from_ids(tmp_path, queries=["q"], items=["v"], name="tvr")
    judgments_import(dataset=dataset, path=EXCERPT, fmt="rater_labels", name="raw", options={"columns": COLUMNS})
    _run("--dataset", "tvr", "--judgment-set", "raw", "--store")
    report = Report.objects.get(kind="judgment_set_agreement")
    assert report.params["repeats"] == "last" and report.result["labels"] > 0
    with pytest.raises(CommandError, match="no judgment set 'nope' in 'tvr' \\(sets: raw\\)"):
        _run("--dataset", "tvr", "--judgment-set", "nope")
    with pytest.raises(CommandError, match="not both"):
        _run("--dataset", "tvr", "--judgment-set", "raw", "--judgments", str(EXCERPT))
    with pytest.raises(CommandError, match="read as it was imported"):
        _run("--dataset", "tvr", "--judgment-set", "raw", "--columns", COLUMNS)
    with pytest.raises(CommandError, match="--store keeps the result of a stored set"):
        _run("--judgments", str(EXCERPT), "--judgments-format", "rater_labels", "--columns", COLUMNS, "--store")
