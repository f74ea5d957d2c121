"""The one-pass readers `evaluate` scores with (qrels_dict, trec_scores, sample_eval_qrels_dict)
give exactly what the line readers give on a well-formed file, and None on any file the line
readers would refuse or flag, so those name the problem (file, line, field) as before."""
from pathlib import Path

import pytest

from annotation.formats.errors import IssueCollector
from annotation.formats.qrels import qrels_dict, read_qrels
from annotation.formats.runs import read_trec, trec_scores
from annotation.formats.sample_eval_qrels import load_sample_eval_qrels, sample_eval_qrels_dict
from annotation.formats.text_lines import LineSource

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "evaluation"


def slow_qrels(path):
    issues = IssueCollector(path.name)
    out = {}
    for row in read_qrels(LineSource(path, issues), issues):
        out.setdefault(row.caption_id, {})[row.clip_id] = row.relevance
    return out, issues


def slow_run(path):
    issues = IssueCollector(path.name)
    out, tag = {}, ""
    for row in read_trec(LineSource(path, issues), issues):
        tag = tag or row.tag
        out.setdefault(row.caption_id, {})[row.clip_id] = row.score
    return (tag, out), issues


def slow_sample_eval(path):
    issues = IssueCollector(path.name)
    return load_sample_eval_qrels(LineSource(path, issues), issues), issues


def write(tmp_path, name, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", ["trec.qrels"])
def test_qrels_equal_the_line_reader(name, tmp_path):
    fast = qrels_dict(FIXTURES / name)
    assert fast == slow_qrels(FIXTURES / name)[0] and fast
    # A BOM, CRLF line ends, tabs and blank lines read as the line reader reads them.
    odd = write(tmp_path, "odd.qrels", b"\xef\xbb\xbfq1 0 d1 1\r\n\r\n  \nq1\t0\td2\t-1\r\nq2 0 d1 2")
    assert qrels_dict(odd) == slow_qrels(odd)[0] == {"q1": {"d1": 1, "d2": -1}, "q2": {"d1": 2}}


@pytest.mark.parametrize("data", [
    b"q1 0 d1 1\nq1 0 d1 0\n",  # judged twice
    b"q1 0 d1 yes\n",
    b"q1 0 d1 -2\n",
    b"q1 0 d1\n",
    b"q1 0 d\xff 1\n",  # not UTF-8
    b"",
])
def test_qrels_the_line_reader_flags_go_back_to_it(data, tmp_path):
    path = write(tmp_path, "bad.qrels", data)
    assert qrels_dict(path) is None


def test_runs_equal_the_line_reader(tmp_path):
    for name in ("trec_run_a.txt", "trec_run_b.txt", "trecvid_run_a.txt"):
        fast = trec_scores(FIXTURES / name)
        assert fast == slow_run(FIXTURES / name)[0] and fast[1]
    odd = write(tmp_path, "odd.txt", b"q1 Q0 d1 1 2.5 tagA\r\n\nq1 Q0 d2 2 1e-3 tagB\nq2 Q0 d1 1 -4 tagA")
    assert trec_scores(odd) == slow_run(odd)[0] == ("tagA", {"q1": {"d1": 2.5, "d2": 0.001}, "q2": {"d1": -4.0}})


@pytest.mark.parametrize("data", [
    b"q1 Q0 d1 1 2 runA\nq1 Q0 d1 2 1 runA\n",  # listed twice
    b"q1 Q0 d1 1 high runA\n",
    b"q1 Q0 d1 1 nan runA\n",
    b"q1 Q0 d1 0 1 runA\n",  # rank below 1
    b"q1 Q0 d1 1 2 runA 0 5\n",  # a moment line
    b"q1 Q0 d1 1 2 " + b"t" * 201 + b"\n",  # a tag longer than a run name may be
    b"q1 Q0 d1 1 2 ru\x00n\n",
])
def test_runs_the_line_reader_flags_go_back_to_it(data, tmp_path):
    path = write(tmp_path, "bad.txt", data)
    assert trec_scores(path) is None


def test_sample_eval_equal_the_line_reader(tmp_path):
    fast = sample_eval_qrels_dict(FIXTURES / "trecvid.qrels")
    assert fast == slow_sample_eval(FIXTURES / "trecvid.qrels")[0] and fast
    odd = write(tmp_path, "odd.qrels", b"\xef\xbb\xbf9 0 s1 1 1\r\n\n9\t0\ts2\t2\t-1\n10 0 s1 A 3")
    assert sample_eval_qrels_dict(odd) == slow_sample_eval(odd)[0] == {
        "9": {"s1": ("1", 1), "s2": ("2", -1)}, "10": {"s1": ("A", 3)}}


@pytest.mark.parametrize("data", [
    b"9 0 s1 1 1\n9 0 s1 2 0\n",
    b"9 0 s1 1 maybe\n",
    b"9 0 s1 1 -2\n",
    b"9 0 s1 1\n",
    b"9 0 " + b"s" * 201 + b" 1 1\n",
    b"9 0 s\xc3 1 1\n",
])
def test_sample_eval_the_line_reader_flags_go_back_to_it(data, tmp_path):
    path = write(tmp_path, "bad.qrels", data)
    assert sample_eval_qrels_dict(path) is None
    _, issues = slow_sample_eval(path)
    assert issues  # and the line reader names it
