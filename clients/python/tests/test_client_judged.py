"""The client's evaluate gives every measure cut at K the run's Judged@K and flags it below the
threshold, as the platform's evaluate does (issue 38).

On the release of conftest and the run of test_client_local, in trec_eval's order: q1 ranks c2
(judged), c9 (no verdict; tied with c1 at 0.8, first by doc id descending), c1 (judged), c3
(judged); q2 ranks c4 (judged), c7 (no verdict). By hand: Judged@1 = (1 + 1) / 2 = 1;
Judged@2 = (1/2 + 1/2) / 2 = 0.5 (the other tie order would give (1 + 1/2) / 2); Judged@5 =
Judged@10 = (3/4 + 1/2) / 2 = 0.625 (a list shorter than K is divided by its length).
"""
import json

import ir_measures
import pytest
from test_client_local import RUN, release, run_file  # noqa: F401 (fixtures)

from rejudge_client import JUDGED_THRESHOLD, RejudgeError, evaluate
from rejudge_client.cli import main

BY_HAND = {1: 1.0, 2: 0.5, 5: 0.625, 10: 0.625}


def test_judged_at_k_by_hand_and_against_ir_measures(release, run_file):  # noqa: F811
    result = evaluate(release, run_file, measures=["C@1", "P@2", "Success@5", "nDCG@10", "AP"])
    assert {name: j["judged"] for name, j in result.judged.items()} == pytest.approx(
        {"C@1": BY_HAND[1], "P@2": BY_HAND[2], "Success@5": BY_HAND[5], "nDCG@10": BY_HAND[10]})
    assert result.judged["P@2"]["judged_measure"] == "Judged@2" and "AP" not in result.judged
    # ir_measures' own Judged@k on the run in trec_eval's order (the tie written out as it ranks).
    qrels = {q: d for q, d in release.qrels().items() if q in ("q1", "q2")}
    run = {"q1": {"c2": 4.0, "c9": 3.0, "c1": 2.0, "c3": 1.0}, "q2": {"c4": 2.0, "c7": 1.0}}
    independent = ir_measures.calc_aggregate([ir_measures.Judged @ k for k in BY_HAND], qrels, run)
    assert {m.params["cutoff"]: v for m, v in independent.items()} == pytest.approx(BY_HAND)


def test_the_flag_names_the_threshold_and_is_in_the_table_and_the_json(release, run_file):  # noqa: F811
    result = evaluate(release, run_file)
    assert result.judged_threshold == JUDGED_THRESHOLD == 0.9
    assert result.judged["Success@1"]["comparable"] is True and result.judged["Success@1"]["note"] is None
    assert result.not_comparable == {
        "Success@5": "not comparable with the leaderboard (Judged@5 < 0.9)",
        "Success@10": "not comparable with the leaderboard (Judged@10 < 0.9)",
        "nDCG@10": "not comparable with the leaderboard (Judged@10 < 0.9)"}
    table = result.table()
    assert "Success@10  1.0000  Judged@10 0.6250  not comparable with the leaderboard (Judged@10 < 0.9)" in table
    assert "Success@1   0.5000  Judged@1 1.0000\n" in table
    doc = result.as_dict()
    assert doc["judged_threshold"] == 0.9 and doc["judged"]["nDCG@10"]["comparable"] is False


@pytest.mark.parametrize("threshold, flagged", [(0.625, False), (0.6249, False), (0.626, True), (0.0, False),
                                                (1.0, True)])
def test_the_flag_at_and_around_the_threshold(release, run_file, threshold, flagged):  # noqa: F811
    result = evaluate(release, run_file, measures=["P@5"], judged_threshold=threshold)
    assert result.judged["P@5"]["comparable"] is not flagged
    assert bool(result.not_comparable) is flagged


@pytest.mark.parametrize("bad", [-0.1, 1.1, "0.9", True])
def test_a_threshold_out_of_bounds_is_refused(release, run_file, bad):  # noqa: F811
    with pytest.raises(RejudgeError, match="judged_threshold must be a number between 0 and 1"):
        evaluate(release, run_file, judged_threshold=bad)


def test_the_command_line_takes_the_threshold(release, run_file, capsys):  # noqa: F811
    assert main(["evaluate", str(run_file), "--release", str(release.path), "--measures", "C@5"]) == 0
    assert "C@5  1.0000  Judged@5 0.6250  not comparable with the leaderboard (Judged@5 < 0.9)" in capsys.readouterr().out
    assert main(["evaluate", str(run_file), "--release", str(release.path), "--measures", "C@5",
                 "--judged-threshold", "0.5", "--json"]) == 0
    [doc] = json.loads(capsys.readouterr().out)
    assert doc["judged"]["C@5"] == {"judged_measure": "Judged@5", "judged": 0.625, "comparable": True, "note": None}
    assert main(["evaluate", str(run_file), "--release", str(release.path), "--judged-threshold", "2"]) == 1
    assert "judged_threshold must be a number between 0 and 1" in capsys.readouterr().err


def test_leaderboard_frame_reads_the_flag_as_text(tmp_path):
    from test_client_leaderboard_frame import _release

    header = ("run,run_id,measure,original,original_low,original_high,corrected,corrected_low,corrected_high,fire,"
              "rank_original,rank_corrected,rank_change,kendall_tau,judged_flag,judged_measure,judged\n")
    flag = "not comparable with the leaderboard (Judged@10 < 0.9)"
    release = _release(tmp_path, header
                       + f"0042,1,C@10,0.5,0.25,0.75,0.75,0.5,1,75.0 (50.0 + 25.0),2,1,1,-1,{flag},Judged@10,0.85\n"
                       + "weak,2,C@10,0.75,0.5,1,0.5,0.25,0.75,50.0 (75.0 - 25.0),1,2,-1,-1,,Judged@10,1.0\n")
    board = release.leaderboard_frame().set_index("run")
    assert board.loc["0042", "judged_flag"] == flag and board.loc["0042", "judged"] == pytest.approx(0.85)
    assert board.loc["weak", "judged_flag"] != board.loc["weak", "judged_flag"]  # empty: NaN, comparable
