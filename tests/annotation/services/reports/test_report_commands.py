"""The command line for scripts: `report`, `export_labels`, `import_judgments`."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Artefact, Report
from annotation.models.judgment_sets import ImportedJudgment
from tests.annotation.services.reports.test_report_metrics import example_pool, load_example

pytestmark = pytest.mark.django_db


def _run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_report_prints_tables_and_stores_the_report(tmp_path):
    pool = example_pool(tmp_path)
    text = _run("report", "--pool", str(pool.pk), "--kind", "metrics", "--param", "ks=[1]")
    report = Report.objects.get()
    assert report.params["ks"] == [1]
    assert "A\t75.0 (25.0 + 50.0)" in text and f"stored as report {report.pk}" in text


def test_report_json_and_csv_for_scripts(tmp_path):
    pool = example_pool(tmp_path)
    data = json.loads(_run("report", "--pool", pool.name, "--kind", "agreement", "--param", "n_boot=0", "--json"))
    assert data["params"] == {"n_boot": 0, "seed": 0, "confidence": 0.95, "with_mace": 0}
    assert data["result"]["summary"]["pairs"] == 17 and data["versions"]["numpy"]
    csv_text = _run("report", "--pool", str(pool.pk), "--kind", "metrics", "--csv", "overlap")
    assert csv_text.splitlines()[0] == "run_a,run_b,topk_overlap,rbo"
    assert csv_text.splitlines()[1].startswith("A,B,0.1333")


def test_report_refusals_are_command_errors(tmp_path):
    pool = example_pool(tmp_path)
    with pytest.raises(CommandError, match="'depth' must be between 1 and 1000"):
        _run("report", "--pool", str(pool.pk), "--kind", "metrics", "--param", "depth=0")
    with pytest.raises(CommandError, match="no pool '999'"):
        _run("report", "--pool", "999", "--kind", "metrics")
    with pytest.raises(CommandError, match="--param expects key=value"):
        _run("report", "--pool", str(pool.pk), "--kind", "metrics", "--param", "depth")


def test_export_labels_writes_the_file_and_a_copy(tmp_path):
    pool = example_pool(tmp_path)
    copy = tmp_path / "labels.qrels"
    text = _run("export_labels", "--pool", str(pool.pk), "--format", "qrels", "--out", str(copy))
    artefact = Artefact.objects.get()
    assert f"export {artefact.pk}:" in text and copy.read_text().startswith("q1 0 v1 1\n")
    printed = _run("export_labels", "--pool", str(pool.pk), "--format", "fire_json", "--param", "dataset_tag=MSVD",
                   "--out", "-")
    assert json.loads(printed)["datasets"] == ["MSVD"]


def test_import_judgments_command(tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    path = tmp_path / "j.qrels"
    path.write_text("q1 0 v2 1\n")
    assert "imported judgments 'j'" in _run("import_judgments", str(path), "--dataset", dataset.name)
    assert ImportedJudgment.objects.count() == 1
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 0 v404 1\n")
    with pytest.raises(CommandError, match="bad.qrels, line 1, field 'doc_id': no clip 'v404'"):
        _run("import_judgments", str(bad), "--dataset", dataset.name)
