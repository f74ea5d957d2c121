"""leaderboard_frame() on a leaderboard.csv as the platform writes it (issue 35): one row per run and
measure, Judged@K beside each cutoff, a depth cut named in the measure, ids kept as text."""
from __future__ import annotations

import zipfile

import pytest
from conftest import build_archive, release_files

from rejudge_client import open_release

HEADER = ("run,run_id,measure,original,original_low,original_high,corrected,corrected_low,corrected_high,fire,"
          "rank_original,rank_corrected,rank_change,kendall_tau,judged_measure,judged\n")


def _release(tmp_path, csv_text: str):
    files = release_files("demo", 2)
    files["leaderboard.csv"] = csv_text.encode()
    archive, _ = build_archive("demo", 2, files=files)
    zip_path = tmp_path / "demo-v2.zip"
    zip_path.write_bytes(archive)
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(tmp_path)
    return open_release(tmp_path / "demo-v2")


def test_judged_at_k_sits_beside_each_cutoff(tmp_path):
    release = _release(tmp_path, HEADER
                       + "0042,1,C@10,0.5,0.25,0.75,0.75,0.5,1,75.0 (50.0 + 25.0),2,1,1,-1,Judged@10,0.85\n"
                       + "0042,1,AP,0.4,0.2,0.6,0.5,0.3,0.7,50.0 (40.0 + 10.0),2,1,1,-1,,\n"
                       + "weak,2,C@10,0.75,0.5,1,0.5,0.25,0.75,50.0 (75.0 - 25.0),1,2,-1,-1,Judged@10,0.6\n")
    board = release.leaderboard_frame()
    assert board.columns[-2:].tolist() == ["judged_measure", "judged"]
    c10 = board[board["measure"] == "C@10"].set_index("run")
    assert c10.loc["0042", "judged"] == pytest.approx(0.85) and c10.loc["0042", "judged_measure"] == "Judged@10"
    assert c10.loc["weak", "corrected"] == pytest.approx(0.5)
    ap = board[board["measure"] == "AP"].iloc[0]
    assert ap["run"] == "0042" and ap["judged_measure"] != ap["judged_measure"]  # empty: NaN, AP has no cutoff


def test_a_cut_stays_in_the_measure_name(tmp_path):
    release = _release(tmp_path, HEADER + "A,1,C@10 (runs cut at depth 5),0.5,0.5,0.5,0.5,0.5,0.5,"
                                          "50.0 (50.0 + 0.0),1,1,0,,Judged@10 (runs cut at depth 5),1\n")
    board = release.leaderboard_frame()
    assert board["measure"].tolist() == ["C@10 (runs cut at depth 5)"]
    assert board["judged_measure"].tolist() == ["Judged@10 (runs cut at depth 5)"]


def test_each_row_carries_its_runs_provenance_as_text(tmp_path):
    """A release ranking a submitted run (issue 38): where each run came from, who in the release's
    pseudonyms (never a username) and when, kept as text."""
    header = HEADER.rstrip("\n") + ",provenance,provenance_at,provenance_by,submission\n"
    release = _release(tmp_path, header
                       + "A,1,C@10,0.5,0.25,0.75,0.75,0.5,1,75.0 (50.0 + 25.0),2,1,1,-1,Judged@10,1,pooled run,"
                         "2026-12-01T10:00:00Z,,\n"
                       + "model-s,7,C@10,0.75,0.5,1,1,1,1,100.0 (75.0 + 25.0),1,1,0,-1,Judged@10,1,submitted run,"
                         "2026-12-02T11:00:00Z,007,3\n")
    board = release.leaderboard_frame().set_index("run")
    assert board.loc["model-s", "provenance"] == "submitted run" and board.loc["A", "provenance"] == "pooled run"
    assert board.loc["model-s", "provenance_by"] == "007"  # a pseudonym stays text, leading zeros and all
    assert board.loc["model-s", "provenance_at"] == "2026-12-02T11:00:00Z"
    assert board.loc["model-s", "submission"] == 3 and board.loc["model-s", "judged"] == 1.0
