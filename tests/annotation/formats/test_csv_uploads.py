"""Small CSV uploads: rows keep their line numbers; unreadable files and bad headers are refused
with the file, the line and what is missing."""
import pytest

from annotation.formats.csv_uploads import csv_rows
from annotation.formats.errors import ImportRejected, IssueCollector


def test_rows_keep_their_line_numbers_and_lose_stray_spaces():
    content = '\ufeffcaption , clip,answer\nq1, v1 ,relevant\n\n"q 2","v2",not_relevant\n'.encode()
    rows = csv_rows(content, IssueCollector("k.csv"), required=("caption", "clip", "answer"))
    assert rows == [(2, {"caption": "q1", "clip": "v1", "answer": "relevant"}),
                    (4, {"caption": "q 2", "clip": "v2", "answer": "not_relevant"})]


def test_a_quoted_value_over_two_lines_is_numbered_by_the_line_it_ends_on():
    content = b'caption,clip,answer\nq1,v1,relevant\n"two\nlines",v2,relevant\nq3,v3,relevant\n'
    rows = csv_rows(content, IssueCollector("k.csv"), required=("caption",))
    assert [line for line, _ in rows] == [2, 4, 5]


def test_a_missing_column_is_named_on_line_1():
    with pytest.raises(ImportRejected) as refused:
        csv_rows(b"caption,answer\nq1,relevant\n", IssueCollector("k.csv"), required=("caption", "clip", "answer"),
                 optional=("role",))
    (issue,) = refused.value.issues
    assert (issue.file, issue.line) == ("k.csv", 1)
    assert "missing 'clip'" in issue.message and "optionally 'role'" in issue.message


def test_bytes_that_are_not_utf8_are_named_with_their_line():
    with pytest.raises(ImportRejected) as refused:
        csv_rows(b"caption,clip,answer\nq1,v1,relevant\nq2,v\xff,relevant\n", IssueCollector("k.csv"), required=("caption",))
    (issue,) = refused.value.issues
    assert issue.line == 3 and "not valid UTF-8 (byte 0xff)" in issue.message
