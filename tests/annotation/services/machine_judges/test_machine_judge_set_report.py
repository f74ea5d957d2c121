"""The machine_judge report of a judge attached to a judgment set, measured against the set's
verdicts: the service, and the `report --judgment-set` command. Hand-worked on world.py's dataset."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Report
from annotation.services.machine_judges.errors import MachineJudgeError
from annotation.services.machine_judges.imports import machine_judge_import
from annotation.services.machine_judges.reports import machine_judge_report_create
from annotation.services.reports.create import ReportError

from .world import SET_MACHINE, machine_file, small_pool, small_set

pytestmark = pytest.mark.django_db


def _set_judge(tmp_path, name="vlm"):
    pool, _ = small_pool()  # its pairs stay open: only the set's verdicts can be the human side
    judgment_set = small_set(pool.dataset)
    judge = machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path, SET_MACHINE, name=f"{name}.csv"),
                                 name=name, judgment_set=judgment_set)
    return judgment_set, judge


def _check_hand_worked(r: dict) -> None:
    # Over the 5 pairs with a human verdict ((q2, v4) is a 'disagreement': no label), rows human:
    #   human not relevant: (q1,v4) -> R, (q2,v5) -> N           -> [1, 1]
    #   human relevant:     (q1,v3) -> R, (q1,v5) -> N, (q2,v6) -> R -> [1, 2]
    #   p_o = 3/5; marginals human (2, 3), machine (2, 3): p_e = (2*2 + 3*3)/25 = 13/25
    #   kappa = (15/25 - 13/25) / (12/25) = 1/6
    assert r["pairs_compared"] == 5 and r["machine_pairs_without_human_label"] == 1
    assert r["kappa"]["confusion"] == [[1, 1], [1, 2]]
    assert r["kappa"]["kappa"] == pytest.approx(1 / 6)
    assert r["kappa"]["observed_agreement"] == pytest.approx(3 / 5)
    assert r["kappa"]["expected_agreement"] == pytest.approx(13 / 25)
    low, high = r["kappa"]["interval"]
    assert low <= 1 / 6 <= high
    # Per query: q1 disagrees on 2 of 3 ((q1,v4), (q1,v5)), q2 on none of 2.
    assert [(q["caption_id"], q["pairs"], q["disagreements"]) for q in r["per_query"]] == [("q1", 3, 2), ("q2", 2, 0)]
    assert r["queries_with_disagreement"] == 1
    # AP at depth 3, originals (q1 v1, q2 v2) relevant in both qrels.
    # Human qrels q1 {v1, v3, v5}, q2 {v2, v6}:
    #   A: q1 [v1 v3 v4] -> (1 + 1)/3 = 2/3; q2 [v5 v2 v6] -> (1/2 + 2/3)/2 = 7/12; mean 5/8
    #   B: q1 [v3 v1 v5] -> (1 + 1 + 1)/3 = 1; q2 [v2 v6 v5] -> 1;                 mean 1
    # Machine qrels q1 {v1, v3, v4}, q2 {v2, v6}:
    #   A: q1 1; q2 7/12; mean 19/24          B: q1 (1 + 1)/3 = 2/3; q2 1; mean 5/6
    # Both rank B above A: tau = 1, tau_AP = 1.
    ranks = r["system_ranking"]
    assert ranks["systems"] == ["A", "B"]
    assert ranks["human_scores"] == pytest.approx([5 / 8, 1.0])
    assert ranks["machine_scores"] == pytest.approx([19 / 24, 5 / 6])
    assert ranks["tau"] == pytest.approx(1.0) and ranks["tau_ap"] == pytest.approx(1.0)
    assert ranks["depth"] == 3 and ranks["n_queries"] == 2


def test_set_judge_report_by_hand(tmp_path):
    judgment_set, judge = _set_judge(tmp_path)
    report = machine_judge_report_create(judge=judge, params={"n_boot": 200, "seed": 3, "depth": 3})
    assert report.kind == "machine_judge" and report.pool_id is None and report.dataset_id == judgment_set.dataset_id
    assert report.params["judgment_set_id"] == judgment_set.pk and report.params["judge"] == judge.pk
    assert report.params["depth"] == 3 and report.params["n_boot"] == 200
    assert report.versions["numpy"]
    assert report.result["human_labels"] == "the judgment set's verdicts"
    assert report.result["judge"]["judgment_set_id"] == judgment_set.pk
    _check_hand_worked(report.result)


def test_set_judge_report_depth_defaults_to_ten_and_params_are_checked(tmp_path):
    _, judge = _set_judge(tmp_path)
    report = machine_judge_report_create(judge=judge, params={"n_boot": 0})
    assert report.params["depth"] == 10
    with pytest.raises(ReportError, match="confidence"):
        machine_judge_report_create(judge=judge, params={"confidence": 1.5})
    with pytest.raises(ReportError, match="unknown parameter"):
        machine_judge_report_create(judge=judge, params={"ks": [1]})


def test_report_command_on_a_judgment_set(tmp_path):
    judgment_set, judge = _set_judge(tmp_path)
    out = StringIO()
    call_command("report", "--judgment-set", str(judgment_set.pk), "--kind", "machine_judge", "--param", "n_boot=100",
                 "--param", "depth=3", "--json", stdout=out, stderr=StringIO())
    stored = json.loads(out.getvalue())
    assert stored["judgment_set"] == judgment_set.pk and stored["pool"] is None
    _check_hand_worked(stored["result"])
    assert Report.objects.get(pk=stored["id"]).params["judge"] == judge.pk


def test_report_command_refuses_what_a_set_cannot_do(tmp_path):
    judgment_set, _ = _set_judge(tmp_path)
    with pytest.raises(CommandError, match="takes --kind machine_judge"):
        call_command("report", "--judgment-set", str(judgment_set.pk), "--kind", "metrics", stdout=StringIO())
    with pytest.raises(CommandError, match="no machine judge with id 999999"):
        call_command("report", "--judgment-set", str(judgment_set.pk), "--kind", "machine_judge",
                     "--param", "judge=999999", stdout=StringIO())
    empty = small_set(judgment_set.dataset, {("q1", "v6"): "relevant"}, name="other")
    with pytest.raises(CommandError, match="has no machine judges"):
        call_command("report", "--judgment-set", str(empty.pk), "--kind", "machine_judge", stdout=StringIO())


def test_a_set_with_two_judges_needs_the_judge_named(tmp_path):
    from annotation.services.machine_judges.lookup import judgment_set_machine_judge

    judgment_set, first = _set_judge(tmp_path)
    second = machine_judge_import(dataset=judgment_set.dataset, path=machine_file(tmp_path, SET_MACHINE, name="b.csv"),
                                  name="second", judgment_set=judgment_set)
    with pytest.raises(MachineJudgeError, match="several machine judges"):
        judgment_set_machine_judge(judgment_set=judgment_set)
    assert judgment_set_machine_judge(judgment_set=judgment_set, judge_id=second.pk) == second
    assert judgment_set_machine_judge(judgment_set=judgment_set, judge_id=first.pk) == first
