import io

import pytest

from annotation.formats.errors import IssueCollector
from annotation.formats.qrels import QrelRow, read_qrels, write_qrels
from annotation.formats.text_lines import LineSource


def _read(tmp_path, text: str):
    path = tmp_path / "j.qrels"
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    issues = IssueCollector("j.qrels")
    rows = list(read_qrels(LineSource(path, issues), issues))
    return rows, [str(i) for i in issues.issues]


def test_reads_lines_with_numbers_and_unjudged_marks(tmp_path):
    rows, problems = _read(tmp_path, "q1 0 v1 1\n\nq1 0 v2 0\nq2 Q0 v3 2\nq2 0 v4 -1\n")
    assert problems == []
    assert rows == [QrelRow(1, "q1", "v1", 1), QrelRow(3, "q1", "v2", 0), QrelRow(4, "q2", "v3", 2),
                    QrelRow(5, "q2", "v4", -1)]


def test_problems_name_file_line_and_field(tmp_path):
    rows, problems = _read(tmp_path, "q1 0 v1\nq1 0 v2 yes\nq1 0 v3 -2\nq1 0 v4 1\n")
    assert [r.clip_id for r in rows] == ["v4"]
    assert problems == [
        "j.qrels, line 1: expected 4 fields 'query_id 0 doc_id relevance', found 3",
        "j.qrels, line 2, field 'relevance': 'yes' is not a whole number",
        "j.qrels, line 3, field 'relevance': -2 is below -1 (use -1 for pooled but not judged)",
    ]


def test_writer_round_trips_through_the_reader(tmp_path):
    out = io.StringIO()
    assert write_qrels(out, [("q1", "v1", 1), ("q1", "v2", 0)]) == 2
    assert out.getvalue() == "q1 0 v1 1\nq1 0 v2 0\n"
    rows, problems = _read(tmp_path, out.getvalue())
    assert [(r.caption_id, r.clip_id, r.relevance) for r in rows] == [("q1", "v1", 1), ("q1", "v2", 0)]


def test_writer_refuses_ids_that_would_shift_columns():
    with pytest.raises(ValueError, match="caption id 'a b' cannot be written"):
        write_qrels(io.StringIO(), [("a b", "v1", 1)])
