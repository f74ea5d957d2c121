"""A release's pool bias (issue 38): leaderboard.json's `pool_bias`, the datasheet's section and the
reason a release without pool provenance gives.

Checked on the hand-worked example (tests/annotation/services/reports/test_report_metrics.py) by hand,
and on Hypothesis-drawn pools against pytrec_eval and ir_measures on the archive's own qrels.txt minus
each run's own pairs, which the test takes from labels.csv's `proposed_by` column (the runs that
proposed each pair), never from the platform's provenance code."""
from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path
from unittest.mock import patch

import ir_measures
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir_measures import Judged

from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.releases.create import release_create
from annotation.services.reports.kinds import corrected_leaderboard
from annotation.services.reports.kinds.corrected_leaderboard import QUERY_BLOCK
from annotation.services.releases.pool_bias import NO_POOL
from tests.annotation.services.releases.test_leaderboard_property import (TREC_NAMES, _archive, _build, _qrels,
                                                                          _trec_eval_means, pools)
from tests.annotation.services.releases.test_release_moments import qvh_pool  # noqa: F401 (a fixture)
from tests.annotation.services.reports.test_report_metrics import example_pool, load_example
from tests.factories import unique

pytestmark = pytest.mark.django_db


def test_the_example_release_by_hand(tmp_path):
    """Run A alone proposed q1 v2 (relevant), q1 v3, q2 v6, q3 v6 and q4 v5, v6, v1 (not relevant): seven; run B
    alone q1 v5 and q2 v1 (relevant), q1 v6, q2 v3 and q3 v5. Originals q1 v1, q2 v2, q3 v3 stay;
    q2 v4 (no majority) is not in qrels.txt."""
    pool = example_pool(tmp_path)
    release = release_create(pools=[pool], name="example-bias", allow_unresolved=True)
    files = _archive(release)
    bias = json.loads(files["leaderboard.json"])["pool_bias"]
    assert release.leaderboard["pool_bias"] == bias and "pool_bias_left_out" not in release.counts
    assert bias["measures"] == list(TREC_NAMES) and bias["judged_measures"] == ["Judged@1", "Judged@5", "Judged@10"]
    rows = {row["run"]: row for row in bias["runs"]}
    assert (rows["A"]["pairs_removed"], rows["A"]["relevant_removed"]) == (7, 1)
    assert (rows["B"]["pairs_removed"], rows["B"]["relevant_removed"]) == (5, 2)
    # A over q1..q4: C@1 with = q1 v2, q2 v2, q3 v4 relevant = 3/4; without q1 v2, q1 fails: 2/4.
    assert rows["A"]["with"]["C@1"] == pytest.approx(3 / 4) and rows["A"]["without"]["C@1"] == pytest.approx(2 / 4)
    assert rows["A"]["difference"]["C@1"] == pytest.approx(1 / 4)
    # B over q1..q3 (q1's tied scores: trec_eval's order v6 v5 v1): with = q2 v1, q3 v3 = 2/3; without q2 v1: 1/3.
    assert rows["B"]["with"]["C@1"] == pytest.approx(2 / 3) and rows["B"]["without"]["C@1"] == pytest.approx(1 / 3)
    # A's Judged@10 left out: q1 v1 of three, q2 v2 of three, q3 v4 and v3 of three, q4 none: 1/3.
    assert rows["A"]["judged_without"]["Judged@10"] == pytest.approx((1 / 3 + 1 / 3 + 2 / 3 + 0) / 4)
    # "With" is the leaderboard's corrected value.
    board = {row["run"]: row for row in release.leaderboard["runs"]}
    for name, row in rows.items():
        assert row["with"] == {m: board[name]["corrected"][m]["value"] for m in TREC_NAMES}
        assert row["judged_with"] == board[name]["judged"]
    readme = files["README.md"].decode()
    assert "## Pool bias (leave one run out)" in readme
    assert "| A | 7 (1) | 75.0 / 50.0 (+25.0) |" in readme
    assert "| B | 5 (2) | 66.7 / 33.3 (+33.3) |" in readme


def test_a_release_of_judgment_sets_alone_says_why_it_has_no_pool_bias(tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    path = tmp_path / "published.qrels"
    path.write_text("q1 0 v2 1\nq1 0 v3 0\n")
    judgment_set = judgments_import(dataset=dataset, path=path).judgment_set
    release = release_create(judgment_sets=[judgment_set], name="published-bias")
    assert release.counts["pool_bias_left_out"] == NO_POOL
    readme = _archive(release)["README.md"].decode()
    assert "## Pool bias (leave one run out)" in readme and NO_POOL in readme


def _own_pairs(labels_csv: str, qrels: dict, originals: dict) -> dict[str, set]:
    """Run -> the pairs of qrels.txt only that run proposed (labels.csv's `proposed_by`: run@rank;...),
    a caption's original clip aside."""
    proposed: dict[tuple[str, str], set[str]] = {}
    for row in csv.DictReader(io.StringIO(labels_csv)):
        runs = {entry.rsplit("@", 1)[0] for entry in row["proposed_by"].split(";") if entry}
        proposed.setdefault((row["caption_id"], row["clip_id"]), set()).update(runs)
    own: dict[str, set] = {}
    for q, judged in qrels.items():
        for c in judged:
            runs = proposed.get((q, c), set())
            if len(runs) == 1 and originals.get(q) != c:
                own.setdefault(next(iter(runs)), set()).add((q, c))
    return own


def _judged(qrels: dict, run: dict, queries: list[str], k: int) -> float:
    """ir_measures' Judged@k per query in trec_eval's order (score, then id, descending), averaged
    over ``queries`` (a query with no judgment left: 0)."""
    ordered = {q: sorted(run[q], key=lambda doc: (run[q][doc], doc), reverse=True) for q in queries}
    te_run = {q: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for q, docs in ordered.items()}
    per = {m.query_id: m.value for m in ir_measures.iter_calc([Judged @ k], {q: qrels[q] for q in queries
                                                                             if q in qrels}, te_run)}
    return sum(per.get(q, 0.0) for q in queries) / len(queries)


@settings(max_examples=20, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pools(), st.sampled_from([1, 2, 3, QUERY_BLOCK]))
def test_pool_bias_equals_trec_eval_on_qrels_minus_each_runs_own_pairs(drawn, block):
    """`block`: captions the leaderboard reads at a time (1 to 3: the values of blocks joined must be
    the whole's)."""
    clips, captions, depth, runs, verdicts = drawn
    with tempfile.TemporaryDirectory() as folder:
        pool = _build(Path(folder), clips, captions, depth, runs, verdicts)
    with patch.object(corrected_leaderboard, "QUERY_BLOCK", block):
        release = release_create(pools=[pool], name=unique("bias-release"), allow_unresolved=True)
    files = _archive(release)
    bias = json.loads(files["leaderboard.json"])["pool_bias"]
    qrels = _qrels(files["qrels.txt"].decode())
    own = _own_pairs(files["labels.csv"].decode(), qrels, captions)
    rows = {row["run"]: row for row in bias["runs"]}
    assert set(rows) == set(runs)
    for name, run in runs.items():
        full = {q: dict(ranked) for q, ranked in run.items()}
        queries = sorted(q for q in full if q in qrels)
        row = rows[name]
        assert row["pairs_removed"] == len(own.get(name, ()))
        assert row["relevant_removed"] == sum(qrels[q][c] for q, c in own.get(name, ()))
        if not queries:
            assert all(v is None for v in row["without"].values())
            continue
        loo = {q: {c: g for c, g in judged.items() if (q, c) not in own.get(name, ())} for q, judged in qrels.items()}
        with_all, without = _trec_eval_means(qrels, full, queries), _trec_eval_means(loo, full, queries)
        for measure, trec_name in TREC_NAMES.items():
            assert row["with"][measure] == pytest.approx(with_all[trec_name], abs=1e-12), measure
            assert row["without"][measure] == pytest.approx(without[trec_name], abs=1e-12), measure
            assert row["difference"][measure] == pytest.approx(with_all[trec_name] - without[trec_name], abs=1e-12)
        for k in (1, 5, 10):
            assert row["judged_without"][f"Judged@{k}"] == pytest.approx(_judged(loo, full, queries, k), abs=1e-12)


def test_a_sampled_pools_release_says_why_it_has_no_pool_bias(tmp_path):
    """Its corrected values are the design's estimates: removing one run's pairs from a sample is not
    leaving the run out of a complete pool."""
    from annotation.models import PooledPair
    from annotation.services.releases.pool_bias import SAMPLED_POOL
    from tests.annotation.services.reports.test_report_corrected_leaderboard import _pool as leaderboard_pool

    pool = leaderboard_pool(tmp_path)
    PooledPair.objects.filter(pool=pool, role="pool", caption__external_id="q2", clip__external_id="z").update(
        inclusion_probability=0.5)
    pool.judging_strategy = "sampled"
    pool.save(update_fields=["judging_strategy"])
    release = release_create(allow_unresolved=True, pools=[pool], name="sampled-bias")
    assert release.counts["pool_bias_left_out"] == SAMPLED_POOL and "pool_bias" not in release.leaderboard
    assert SAMPLED_POOL in _archive(release)["README.md"].decode()


def test_a_moment_pools_release_says_why_it_has_no_pool_bias(qvh_pool):  # noqa: F811
    from annotation.services.releases.pool_bias import MOMENT_POOL

    release = release_create(allow_unresolved=True, pools=[qvh_pool], name="qvh-bias")
    assert release.counts["pool_bias_left_out"] == MOMENT_POOL and "pool_bias" not in release.leaderboard


def test_a_pair_another_source_judged_is_not_a_runs_own(tmp_path):
    """Pool of depth 1 with nothing judged beside a judgment set: q1 v2 is run A's rank 1 and no other
    run's, but the set judged it, so leaving A out of the pool keeps it (it is not A's to give)."""
    from annotation.services.pools.build import pool_create
    from tests.annotation.services.releases.test_release_from_judgment_sets import PUBLISHED

    dataset, runs = load_example(tmp_path / "files")
    path = tmp_path / "published.qrels"
    path.write_text(PUBLISHED)
    judgment_set = judgments_import(dataset=dataset, path=path).judgment_set
    pool = pool_create(dataset=dataset, name="top one", runs=runs, depth=1, redundancy=0.0)
    release = release_create(pools=[pool], judgment_sets=[judgment_set], name="pool-and-set-bias",
                             allow_unresolved=True)
    rows = {row["run"]: row for row in release.leaderboard["pool_bias"]["runs"]}
    assert _qrels(_archive(release)["qrels.txt"].decode())["q1"]["v2"] == 1
    assert all(row["pairs_removed"] == 0 and row["with"] == row["without"] for row in rows.values())
