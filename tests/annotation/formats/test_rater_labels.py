"""The raw multi-rater label reader: default columns, --columns mapping, JSONL, and refusals that
name the file, the line and the field."""
import pytest

from annotation.formats.errors import ImportRejected, IssueCollector
from annotation.formats.rater_labels import RaterLabel, parse_columns, read_rater_labels


def _read(tmp_path, text, name="labels.csv", columns=None, raw=False):
    path = tmp_path / name
    path.write_bytes(text if raw else text.encode("utf-8"))
    issues = IssueCollector(name)
    rows = list(read_rater_labels(path, issues, columns=parse_columns(columns)))
    return rows, issues


def _texts(issues):
    return [str(i) for i in issues.issues]


def test_default_columns_make_the_query_item_pair_the_unit(tmp_path):
    rows, issues = _read(tmp_path, "query,item,rater,value\nq1,v1,ann,3\nq1,v2,bob,0.5\n")
    assert not issues
    assert rows == [RaterLabel(2, ("q1", "v1"), "ann", 3.0, None), RaterLabel(3, ("q1", "v2"), "bob", 0.5, None)]


def test_columns_mapping_reads_tvr_ranking_layout_with_crlf_lines(tmp_path, fixtures_dir):
    # The excerpt keeps the upstream CRLF line endings and has no query/item columns.
    path = fixtures_dir / "tvr_ranking_excerpt.csv"
    issues = IssueCollector(path.name)
    rows = list(read_rater_labels(path, issues, columns=parse_columns("unit=pair_id,rater=worker,value=relevance")))
    assert not issues
    assert len(rows) == 298
    assert rows[0] == RaterLabel(2, "0", "4", 4.0, None)
    assert rows[-1].line == 299


def test_labels_and_iso_times_in_jsonl(tmp_path):
    text = ('{"query": "q1", "item": 7, "rater": "r1", "value": "relevant", "time": "2024-05-01T10:00:00Z"}\n'
            '\n'
            '{"query": "q1", "item": 7, "rater": "r1", "value": "not relevant", "time": "2024-05-01T10:00:01+00:00"}\n')
    rows, issues = _read(tmp_path, text, name="labels.jsonl")
    assert not issues
    assert [(r.line, r.unit, r.value) for r in rows] == [(1, ("q1", "7"), "relevant"), (3, ("q1", "7"), "not relevant")]
    assert rows[1].time - rows[0].time == 1.0


def test_jsonl_is_recognised_by_its_first_character(tmp_path):
    rows, issues = _read(tmp_path, '{"unit": "p1", "rater": "a", "value": 1}\n', name="labels.txt")
    assert not issues and rows[0].unit == "p1"


def test_refusals_name_file_line_and_field(tmp_path):
    text = ("pair_id,worker,relevance,time\n"
            "1,w1,3,10\n"
            "1,,2,11\n"            # missing rater
            "2,w2,high,12\n"      # a label among numbers
            "2,w3,nan,13\n"       # not finite
            "3,w1,2\n"            # too few fields
            "3,w2,2,yesterday\n"  # not a time
            "4,w2,2,2024-01-01\n")  # a date-time among numeric times
    rows, issues = _read(tmp_path, text, columns="unit=pair_id,rater=worker,value=relevance")
    assert len(rows) == 1
    assert _texts(issues) == [
        "labels.csv, line 3, field 'worker': missing rater id",
        "labels.csv, line 4, field 'relevance': 'high' is not a number like the file's first value (line 2); "
        "values are all numbers or all labels",
        "labels.csv, line 5, field 'relevance': 'nan' is not a finite number (NaN and infinity are refused)",
        "labels.csv, line 6: expected 4 fields as in the header, found 3",
        "labels.csv, line 7, field 'time': 'yesterday' is neither a number nor an ISO 8601 date-time",
        "labels.csv, line 8, field 'time': '2024-01-01' is a date-time without a time zone, but the file's first "
        "time (line 2) is a number",
    ]


def test_header_without_the_needed_columns_is_refused_once(tmp_path):
    rows, issues = _read(tmp_path, "pair_id,worker,relevance\n1,w1,3\n")
    assert rows == []
    assert _texts(issues) == [
        "labels.csv, line 1: no column of the header for query and item (or unit), rater, value: expected "
        "query,item,rater,value[,time], or map them with --columns, e.g. unit=pair_id,rater=worker,value=relevance"]


def test_a_mapping_to_a_missing_column_names_it(tmp_path):
    rows, issues = _read(tmp_path, "pair_id,worker,relevance\n1,w1,3\n", columns="unit=pair,rater=worker,value=relevance")
    assert rows == []
    assert _texts(issues)[0].startswith("labels.csv, line 1, field 'pair': --columns maps unit to 'pair', which is "
                                        "not a column of the header")


def test_jsonl_refusals(tmp_path):
    text = ('{"unit": "p1", "rater": "a", "value": 1}\n'
            '{"unit": "p1", "rater": "b", "value": [1]}\n'
            '["p2", "a", 1]\n'
            '{"unit": "p2", "rater": "a", "value": 1\n'
            '{"unit": true, "rater": "a", "value": 1}\n')
    rows, issues = _read(tmp_path, text, name="labels.jsonl")
    assert len(rows) == 1
    assert _texts(issues) == [
        "labels.jsonl, line 2, field 'value': expected a number or a label, not '[1]'",
        "labels.jsonl, line 3: expected a JSON object, one label a line",
        "labels.jsonl, line 4: malformed JSON: Expecting ',' delimiter at column 40",
        "labels.jsonl, line 5, field 'unit': the unit id must be a string or a whole number, not 'true'",
    ]


def test_bytes_that_are_not_utf8_and_empty_files(tmp_path):
    rows, issues = _read(tmp_path, b"query,item,rater,value\nq1,v1,a,1\nq1,v\xff1,b,1\n", raw=True)
    assert len(rows) == 1
    assert _texts(issues) == ["labels.csv, line 3: not valid UTF-8 (byte 0xff at column 5)"]
    rows, issues = _read(tmp_path, "\n\n", name="empty.csv")
    assert rows == [] and _texts(issues) == ["empty.csv: the file is empty"]


def test_issues_raise_as_one_refusal_in_file_order(tmp_path):
    _, issues = _read(tmp_path, "unit,rater,value\n1,a,\n2,,1\n")
    with pytest.raises(ImportRejected) as exc:
        issues.raise_if_any()
    assert [i.line for i in exc.value.issues] == [2, 3]
    assert [i.field for i in exc.value.issues] == ["value", "rater"]


def test_parse_columns():
    assert parse_columns("unit=pair_id, rater=worker,value=relevance") == {
        "unit": "pair_id", "rater": "worker", "value": "relevance"}
    assert parse_columns("query=topic") == {"query": "topic", "item": "item"}
    assert parse_columns("") == {}
    for bad, message in (("unit", "name=column"), ("shot=x", "unknown name 'shot'"),
                         ("rater=a,rater=b", "mapped twice"), ("unit=a,query=b", "not both")):
        with pytest.raises(ValueError, match=message):
            parse_columns(bad)
