import json
import math
import subprocess
import sys
import zipfile

import pytest
from conftest import build_archive

from rejudge_client import (CONVENTIONS, MissingExtra, RejudgeError, ReleaseFormatError, RunFileError, evaluate,
                            open_release)

# q1: c2 (0.9, judged not relevant), then c1 and c9 tied at 0.8 (trec_eval: doc id descending, so
# c9 then c1), then c3: relevant at ranks 3 and 4 of R = 2. q2: c4 first. q3 is judged but not in
# the run (skipped); q4 is in the run but not judged (ignored).
RUN = """q1 Q0 c2 1 0.9 good
q1 Q0 c1 2 0.8 good
q1 Q0 c9 3 0.8 good
q1 Q0 c3 4 0.1 good
q2 Q0 c4 1 0.9 good
q2 Q0 c7 2 0.8 good
q4 Q0 c1 1 0.5 good
"""
NDCG10_Q1 = (1 / math.log2(4) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))


@pytest.fixture
def release(tmp_path):
    archive, _ = build_archive("demo", 2)
    zip_path = tmp_path / "demo-v2.zip"
    zip_path.write_bytes(archive)
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(tmp_path)
    return open_release(tmp_path / "demo-v2")


@pytest.fixture
def run_file(tmp_path):
    path = tmp_path / "good.trec"
    path.write_text(RUN)
    return path


def test_qrels_as_ir_measures_and_pytrec_eval_take_them(release):
    assert release.slug == "demo@v2"
    assert release.qrels() == {"q1": {"c1": 1, "c2": 0, "c3": 1}, "q2": {"c4": 1}, "q3": {"c5": 1}}
    frame = release.qrels_frame()
    assert list(frame.columns) == ["query_id", "iteration", "doc_id", "relevance"]
    assert frame["relevance"].sum() == 4 and len(frame) == 5


def test_frames_keep_ids_as_text_and_documents_read_as_json(release):
    labels = release.labels_frame()
    assert labels["clip_id"].tolist() == ["0042", "c2"]  # not the number 42
    assert labels["label"].tolist() == [1, 0]
    board = release.leaderboard_frame()
    assert board.set_index("run").loc["good", "corrected_C@1"] == 0.75
    assert release.changes()["changed"][0]["reason"] == "adjudication"
    assert release.agreement() == {"krippendorff_alpha": 0.8}
    assert len(release.verify()) == 13


def test_a_missing_extra_names_the_package_to_install(release, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # what an environment without pandas raises
    with pytest.raises(MissingExtra, match=r"qrels_frame\(\) needs pandas.*pip install 'rejudge-client\[analysis\]'"):
        release.qrels_frame()


def test_evaluate_gives_the_hand_worked_trec_eval_numbers(release, run_file):
    result = evaluate(release, run_file)

    assert result.queries == ["q1", "q2"]
    assert result.unanswered == ["q3"] and result.without_judgments == ["q4"]
    assert result.measures == pytest.approx({
        "Success@1": (0 + 1) / 2, "Success@5": 1.0, "Success@10": 1.0,
        "AP": ((1 / 3 + 2 / 4) / 2 + 1) / 2,  # ties broken the other way would give ((1/2 + 2/4)/2 + 1)/2
        "nDCG@10": (NDCG10_Q1 + 1) / 2}, abs=1e-12)
    assert result.per_query["q1"]["AP"] == pytest.approx(5 / 12)
    assert "document id descending" in result.conventions and CONVENTIONS == result.conventions
    # C@K is a name for Success@K; a qrels dict or a folder path does as well as the release
    again = evaluate(release.qrels(), run_file, measures=["C@1", "P@2"])
    assert again.measures == pytest.approx({"C@1": 0.5, "P@2": (0 + 0.5) / 2})
    assert evaluate(release.path, run_file, measures=["AP"]).measures["AP"] == result.measures["AP"]


@pytest.mark.parametrize("line, message", [
    ("q1 Q0 c1 1 high good", r"good.trec, line 8, field 'score': not a number: 'high'"),
    ("q1 Q0 c1 1 0.5", r"good.trec, line 8: expected 6 fields"),
    ("q1 Q0 c3 9 0.05 good", r"good.trec, line 8, field 'doc_id': 'c3' is already listed for query 'q1' on line 4"),
])
def test_a_bad_run_line_is_named(release, run_file, line, message):
    run_file.write_text(RUN + line + "\n")
    with pytest.raises(RunFileError, match=message):
        evaluate(release, run_file)


def test_bad_qrels_and_unknown_measures_are_named(release, run_file):
    with pytest.raises(RejudgeError, match="unknown measure 'Quality@3'"):
        evaluate(release, run_file, measures=["Quality@3"])
    (release.path / "qrels.txt").write_text("q1 0 c1 1\nq1 0 c2 yes\n")
    with pytest.raises(ReleaseFormatError, match=r"qrels.txt, line 2, field 'relevance': expected an integer"):
        release.qrels()
    (release.path / "release.json").write_text(json.dumps({"format": "something/2"}))
    with pytest.raises(ReleaseFormatError, match=r"release.json, field 'format'"):
        open_release(release.path)


def test_importing_the_client_loads_neither_django_nor_the_analysis_extras():
    code = ("import sys, rejudge_client; "
            "print(sorted(m for m in ('django', 'pandas', 'ir_measures') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip() == "[]"
