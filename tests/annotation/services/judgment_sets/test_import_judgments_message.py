"""import_judgments says what it stored in words ('relevant: 2, not relevant: 1'), never enum names,
whether the set's counts hold ImportedJudgment.Label members or plain strings."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.management.commands.import_judgments import counts_in_words
from annotation.models.judgment_sets import ImportedJudgment
from tests.annotation.services.reports.test_report_metrics import load_example

Label = ImportedJudgment.Label


def test_enum_keys_and_string_keys_read_the_same():
    as_enums = {Label.NOT_RELEVANT: 42769, "records": 58418, Label.RELEVANT: 15649, Label.DISAGREEMENT: 3}
    as_strings = {"records": 58418, "not_relevant": 42769, "relevant": 15649, "disagreement": 3}
    expected = "relevant: 15649, not relevant: 42769, disagreement: 3, records: 58418"
    assert counts_in_words(as_enums) == counts_in_words(as_strings) == expected
    assert "Label" not in counts_in_words(as_enums)


def test_lists_and_empty_counts():
    assert counts_in_words({"file_datasets": ["MSRVTT", "MSVD"], "relevant": 1}) == \
        "relevant: 1, file datasets: MSRVTT / MSVD"
    assert counts_in_words({"file_datasets": []}) == "file datasets: none"
    assert counts_in_words({}) == ""


@pytest.mark.django_db
def test_the_command_prints_counts_in_words(tmp_path):
    load_example(tmp_path / "files")
    qrels = tmp_path / "published.qrels"
    qrels.write_text("q1 0 v2 1\nq1 0 v1 1\nq1 0 v3 0\n")
    out = io.StringIO()
    call_command("import_judgments", str(qrels), "--dataset", "example", stdout=out)
    message = out.getvalue()
    assert "relevant: 2, not relevant: 1" in message
    assert "Label" not in message and "not_relevant" not in message
    out = io.StringIO()
    call_command("import_judgments", str(qrels), "--dataset", "example", stdout=out)
    assert "nothing changed" in out.getvalue() and "relevant: 2, not relevant: 1" in out.getvalue()
