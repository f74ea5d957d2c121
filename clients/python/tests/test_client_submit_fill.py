"""``rejudge-client submit`` prints how the holes were filled, against the platform itself (Django's
live server, real HTTP): the release of the hand-worked example with a machine judge imported for
its pool (tests/annotation/services/submissions/test_fill_submission.py: the judge has a verdict on
one hole of run S, (q2, v4), and disagrees with the release on one pair of 16, kappa 27/31)."""
from __future__ import annotations

import pytest

from rejudge_client.cli import main

from test_client_submit import platform  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db(transaction=True)


def _judge(platform, tmp_path):  # noqa: F811
    from annotation.models import Pool
    from annotation.services.machine_judges.imports import machine_judge_import
    from tests.annotation.services.reports.test_report_metrics import VERDICTS

    pool = Pool.objects.get(name="example pool", dataset=platform["release"].dataset)
    verdicts = {k: v == "relevant" for k, v in VERDICTS.items() if v != "disagreement"} | {
        ("q3", "v3"): False, ("q2", "v4"): True}
    path = tmp_path / "gpt.csv"
    path.write_text("query,item,label\n" + "".join(f"{q},{c},{'relevant' if v else 'not_relevant'}\n"
                                                   for (q, c), v in sorted(verdicts.items())))
    machine_judge_import(dataset=pool.dataset, path=path, name="gpt", pool=pool)


def test_submit_prints_the_machine_fill_beside_the_judge_s_agreement(platform, tmp_path, capsys):  # noqa: F811
    args = ["submit", str(platform["release"].pk), str(platform["run"]), "--name", "model-s", "--url",
            platform["url"], "--token", platform["researcher"]]
    assert main(args) == 0
    assert "holes not filled: no machine judge is registered" in capsys.readouterr().out

    _judge(platform, tmp_path)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "holes filled by machine judge 'gpt' (an imported file: the verdicts it has): 1 of 4 holes" in out
    # C@1 with (q2, v4) relevant: q2 hits at rank 1, q1 and q3 start with a hole -> 1/3.
    filled = [line.split()[0] for line in out.splitlines() if line.endswith("(machine-filled)")]
    assert filled == ["C@1", "C@5", "C@10", "AP", "nDCG@10"]  # in the order the scores are printed
    assert "C@1 (runs cut at depth 10) 0.333  (machine-filled)" in out
    assert "Cohen's kappa 0.871" in out and "over 16 pairs both judged" in out
    assert "taken as they are" in out and "not accepted, so nobody judged them" in out
