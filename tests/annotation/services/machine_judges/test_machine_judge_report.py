"""The machine_judge report on the hand-worked pool of world.py, and proof that machine verdicts
never count as human labels: queue, resolution, agreement, exports, rater quality control."""
from __future__ import annotations

import pytest

from annotation.models import PooledPair
from annotation.selectors.crowd_quality import pool_rater_quality
from annotation.services.exports.labels import export_create
from annotation.services.machine_judges.imports import machine_judge_import
from annotation.services.queue.leases import lease_next
from annotation.services.accounts.raters import memberships_grant
from annotation.services.reports.create import ReportError, report_create
from tests.factories import label_pair, make_user

from .world import HUMAN, machine_file, pair_of, resolve_by_hand, small_pool

pytestmark = pytest.mark.django_db


def test_report_by_hand(tmp_path):
    pool, _ = small_pool()
    resolve_by_hand(pool)
    judge = machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path), name="gpt", pool=pool)
    r = report_create(pool=pool, kind="machine_judge", params={"n_boot": 200, "seed": 2}).result
    assert r["judge"]["id"] == judge.pk and r["judge"]["kind"] == "machine"
    # Over the 5 pairs people resolved (the originals are open), rows human, columns machine:
    #   human not relevant: (q1,v4) -> R, (q1,v5) -> N, (q2,v5) -> R ; human relevant: both R
    #   [[1, 2], [0, 2]]: p_o = 3/5, p_e = (3*1 + 2*4)/25 = 11/25, kappa = (0.6 - 0.44)/0.56 = 2/7
    assert r["pairs_compared"] == 5
    assert r["kappa"]["confusion"] == [[1, 2], [0, 2]]
    assert r["kappa"]["kappa"] == pytest.approx(2 / 7)
    assert r["kappa"]["interval_method"] == "bootstrap percentile over pairs"
    low, high = r["kappa"]["interval"]
    assert low <= 2 / 7 <= high
    # Per query: q2 disagrees on 1 of 2 pairs, q1 on 1 of 3: q2 first.
    assert [(q["caption_id"], q["pairs"], q["disagreements"]) for q in r["per_query"]] == [("q2", 2, 1), ("q1", 3, 1)]
    # AP at depth 3 (originals always relevant). Human qrels q1 {v1, v3}, q2 {v2, v6}:
    #   A: q1 [v1 v3 v4] -> (1 + 1)/2 = 1; q2 [v5 v2 v6] -> (1/2 + 2/3)/2 = 7/12; mean 19/24
    #   B: q1 [v3 v1 v5] -> 1;             q2 [v2 v6 v5] -> 1;                    mean 1
    # Machine qrels q1 {v1, v3, v4}, q2 {v2, v5, v6}:
    #   A: q1 3/3 = 1; q2 3/3 = 1; mean 1      B: q1 (1 + 1)/3 = 2/3; q2 1; mean 5/6
    # People rank B above A, the machine A above B: tau = -1, tau_AP = 2/1 * (0/1) - 1 = -1.
    ranks = r["system_ranking"]
    assert ranks["systems"] == ["A", "B"]
    assert ranks["human_scores"] == pytest.approx([19 / 24, 1.0])
    assert ranks["machine_scores"] == pytest.approx([1.0, 5 / 6])
    assert ranks["tau"] == pytest.approx(-1.0) and ranks["tau_ap"] == pytest.approx(-1.0)
    assert ranks["n_queries"] == 2 and ranks["depth"] == 3
    assert "map" in ranks["measure"]
    assert r["machine_pairs_without_human_label"] == 0
    # Calibration: the file scores 0.9 for "relevant" and 0.2 for "not relevant", so the machine's
    # probability is 0.9 on (q1,v3) (q1,v4) (q2,v5) (q2,v6), of which people found 2 relevant, and
    # 0.2 on (q1,v5), not relevant. Bins of 0.1: [0.2, 0.3) holds 1 pair (|0.2 - 0| = 0.2), [0.9, 1]
    # 4 pairs (|0.9 - 0.5| = 0.4): ECE = (1 * 0.2 + 4 * 0.4) / 5 = 0.36.
    cal = r["calibration"]
    assert (cal["n"], cal["n_bins"], cal["with_score"], cal["by_query_type"]) == (5, 10, 5, None)
    assert cal["ece"] == pytest.approx(0.36)
    filled = [(b["low"], b["count"], b["mean_probability"], b["observed_relevant"]) for b in cal["bins"] if b["count"]]
    assert filled == [(0.2, 1, pytest.approx(0.2), 0.0), (0.9, 4, pytest.approx(0.9), 0.5)]


def test_report_needs_a_judge_of_the_pool(tmp_path):
    pool, _ = small_pool()
    with pytest.raises(ReportError, match="no machine judges"):
        report_create(pool=pool, kind="machine_judge", params={"n_boot": 0})
    machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path), name="one", pool=pool)
    machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path), name="two", pool=pool)
    with pytest.raises(ReportError, match="several machine judges"):
        report_create(pool=pool, kind="machine_judge", params={"n_boot": 0})
    with pytest.raises(ReportError, match="no machine judge with id 999999"):
        report_create(pool=pool, kind="machine_judge", params={"n_boot": 0, "judge": 999999})


def _all_not_relevant(pool):
    return {(p.caption.external_id, p.clip.external_id): "not_relevant"
            for p in PooledPair.objects.filter(pool=pool, role="pool").select_related("caption", "clip")}


def test_machine_verdicts_are_no_work_done_for_the_queue_or_resolution(tmp_path):
    pool, _ = small_pool()
    rater, other = make_user("rater"), make_user("rater")
    memberships_grant(pool=pool, users=[rater, other])
    machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path, _all_not_relevant(pool)), name="m", pool=pool)
    # Queue: every pair is still open, with no vote, and is handed to a person.
    assert set(PooledPair.objects.filter(pool=pool, role="pool").values_list("state", "vote_count")) == {("open", 0)}
    assignment = lease_next(pool=pool, rater=rater)
    assert assignment.lease is not None and assignment.lease.pair.pool_id == pool.pk
    # Resolution: a person's 'relevant' decides the pair the machine called not relevant.
    pair = pair_of(pool, "q1", "v3")
    label_pair(other, pair, "relevant")
    pair.refresh_from_db()
    assert (pair.state, pair.resolved_label, pair.vote_count) == ("resolved", "relevant", 1)
    assert PooledPair.objects.get(pk=pair_of(pool, "q1", "v4").pk).state == "open"


def _human_world(pool):
    raters = [make_user("rater") for _ in range(2)]
    memberships_grant(pool=pool, users=raters)
    for i, ((query, item), label) in enumerate(HUMAN.items()):
        label_pair(raters[i % 2], pair_of(pool, query, item), label, seconds=4.0 + i)
    return raters


def test_machine_verdicts_change_no_agreement_export_or_quality_figure(tmp_path, settings):
    settings.EXPORT_ROOT = str(tmp_path / "exports")
    pool, _ = small_pool()
    _human_world(pool)

    def snapshot():
        agreement = report_create(pool=pool, kind="agreement", params={"n_boot": 50, "seed": 1}).result
        files = {fmt: export_create(pool=pool, fmt=fmt).sha256 for fmt in ("csv", "jsonl", "qrels", "fire_json")}
        quality = pool_rater_quality(pool=pool)
        rows = [{k: v for k, v in row.items() if k != "rule_action"} for row in quality["raters"]]
        return agreement, files, rows

    before = snapshot()
    opposite = {k: ("not_relevant" if v == "relevant" else "relevant") for k, v in HUMAN.items()}
    machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path, opposite), name="contrary", pool=pool)
    after = snapshot()
    assert after[0] == before[0]  # agreement report, aggregation section included
    assert after[1]["csv"] == before[1]["csv"] and after[1]["jsonl"] == before[1]["jsonl"]
    assert after[1]["qrels"] == before[1]["qrels"]
    assert len(after[2]) == len(before[2]) == 2 and after[2] == before[2]  # no machine 'rater' row
