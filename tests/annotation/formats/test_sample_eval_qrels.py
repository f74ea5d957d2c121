from pathlib import Path

import pytest

from annotation.formats.errors import ImportRejected, IssueCollector
from annotation.formats.sample_eval_qrels import load_sample_eval_qrels, stratum_table
from annotation.formats.text_lines import LineSource
from annotation.services.evaluation.judgments import read_sample_eval

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "evaluation"


def test_strata_counts_and_inclusion_probabilities():
    judgments = read_sample_eval(FIXTURES / "trecvid.qrels")
    rows = {(r.topic, r.stratum): (r.pooled, r.judged, r.relevant, r.inclusion_probability)
            for r in judgments.strata}
    assert rows == {
        ("9", "1"): (3, 3, 2, 1.0),
        ("9", "2"): (4, 2, 1, 0.5),
        ("11", "1"): (2, 2, 1, 1.0),
        ("10", "1"): (2, 2, 2, 1.0),
        ("10", "2"): (1000, 1, 1, 0.001),
    }
    assert judgments.qrels["9"]["s2b"] == ("2", -1)


def test_stratum_ids_are_kept_as_written(tmp_path):
    issues = IssueCollector("f")
    path = tmp_path / "strata.qrels"
    path.write_text("1661 0 shot1_1 Stratum-A 1\n1661 0 shot1_2 01 0\n")
    qrels = load_sample_eval_qrels(LineSource(path, issues), issues)
    assert [r.stratum for r in stratum_table(qrels)] == ["Stratum-A", "01"]


@pytest.mark.parametrize("text, line, field, message", [
    ("1 0 s1 1\n", 1, None, "expected 5 fields 'topic 0 shot stratum rel', found 4 (a 4-column TREC qrels"),
    ("1 0 s1 1 1\n1 0 s2 1 yes\n", 2, "rel", "'yes' is not a whole number"),
    ("1 0 s1 1 -2\n", 1, "rel", "-2 is below -1"),
    ("1 0 s1 1 1\n1 0 s2 1 0\n1 0 s1 2 0\n", 3, "shot", "shot 's1' of topic '1' is already listed on line 1"),
    ("", None, None, "the file is empty"),
])
def test_bad_lines_are_refused_with_line_and_field(tmp_path, text, line, field, message):
    path = tmp_path / "bad.qrels"
    path.write_text(text)
    with pytest.raises(ImportRejected) as caught:
        read_sample_eval(path)
    issue = caught.value.issues[0]
    assert (issue.file, issue.line, issue.field) == ("bad.qrels", line, field)
    assert message in issue.message


def test_every_bad_line_is_listed(tmp_path):
    issues = IssueCollector("f")
    path = tmp_path / "bad.qrels"
    path.write_text("1 0 a 1 x\n1 0 b 1 1\n1 0 c 1\n")
    load_sample_eval_qrels(LineSource(path, issues), issues)
    assert [(i.line, i.field) for i in issues.issues] == [(1, "rel"), (3, None)]
