"""Incremental pooling against published labels: pairs that imported judgments cover are resolved
from them when a pool is built or a run is added, and only the unjudged pairs are queued."""
from __future__ import annotations

import pytest

from annotation.models import PooledPair
from annotation.services.judgment_sets.imports import judgments_import
from annotation.selectors.pools import pool_pairs_left
from annotation.services.pools.build import pool_add_run, pool_create
from annotation.services.accounts.raters import memberships_grant
from tests.annotation.services.reports.test_report_metrics import load_example
from tests.factories import label_pair, make_user

pytestmark = pytest.mark.django_db


def _states(pool):
    return {(p.caption.external_id, p.clip.external_id): (p.state, p.resolved_label, p.available, p.vote_count)
            for p in PooledPair.objects.filter(pool=pool, role="pool").select_related("caption", "clip")}


def _publish(tmp_path, dataset, lines: str):
    path = tmp_path / "published.qrels"
    path.write_text(lines)
    return judgments_import(dataset=dataset, path=path)


def test_a_new_run_only_queues_its_unjudged_pairs(tmp_path):
    dataset, (run_a, run_b) = load_example(tmp_path / "files")
    # The published labels judged exactly run A's top-3 (FIRE's situation); q4's pairs stay unjudged.
    _publish(tmp_path, dataset, "q1 0 v2 1\nq1 0 v1 1\nq1 0 v3 0\nq2 0 v2 1\nq2 0 v4 0\nq2 0 v6 0\n"
                                "q3 0 v4 1\nq3 0 v3 0\nq3 0 v6 0\n")
    pool = pool_create(dataset=dataset, name="incremental", runs=[run_a], depth=3, redundancy=1.0)
    states = _states(pool)
    assert states[("q1", "v2")] == ("resolved", "relevant", False, 0)
    assert states[("q3", "v3")] == ("resolved", "not_relevant", False, 0)
    assert {k for k, v in states.items() if v[0] == "open"} == {("q4", "v5"), ("q4", "v6"), ("q4", "v1")}
    assert pool_pairs_left(pool=pool) == 3
    # Imported verdicts need no second label, whatever the redundancy draw said.
    assert set(PooledPair.objects.filter(pool=pool, role="pool", state="resolved")
               .values_list("required_labels", flat=True)) == {1}

    added = pool_add_run(pool=pool, run=run_b)
    # B brings q1 v5, q1 v6, q2 v1, q2 v3, q3 v5 (new and unjudged) into the queue; the rest were judged.
    assert added == 5
    now_open = {k for k, v in _states(pool).items() if v[0] == "open"}
    assert now_open == {("q4", "v5"), ("q4", "v6"), ("q4", "v1"), ("q1", "v5"), ("q1", "v6"), ("q2", "v1"),
                        ("q2", "v3"), ("q3", "v5")}


def test_published_disagreements_are_not_queued_again(tmp_path):
    dataset, (run_a, _) = load_example(tmp_path / "files")
    (tmp_path / "fire.json").write_text(
        '{"annotations": [], "disagreements": [{"query": "a dog runs", "video_id": "v6"}]}')
    judgments_import(dataset=dataset, path=tmp_path / "fire.json")
    pool = pool_create(dataset=dataset, name="p", runs=[run_a], depth=3)
    assert _states(pool)[("q3", "v6")] == ("disagreement", "", False, 0)


def test_pairs_already_labelled_keep_their_labels_when_judgments_arrive_later(tmp_path):
    dataset, (run_a, run_b) = load_example(tmp_path / "files")
    pool = pool_create(dataset=dataset, name="p", runs=[run_a], depth=3, redundancy=0.0)
    rater = make_user("rater")
    memberships_grant(pool=pool, users=[rater])
    labelled = PooledPair.objects.get(pool=pool, caption__external_id="q1", clip__external_id="v2")
    label_pair(rater, labelled, client_id="c1", value="not_relevant")
    _publish(tmp_path, dataset, "q1 0 v2 1\nq1 0 v3 1\n")
    pool_add_run(pool=pool, run=run_b)
    states = _states(pool)
    # The rater's verdict stands; the untouched pair takes the published one.
    assert states[("q1", "v2")] == ("resolved", "not_relevant", False, 1)
    assert states[("q1", "v3")] == ("resolved", "relevant", False, 0)


def test_judgments_of_another_dataset_are_ignored(tmp_path):
    dataset, (run_a, _) = load_example(tmp_path / "one", name="one")
    other, _ = load_example(tmp_path / "two", name="two")
    _publish(tmp_path, other, "q1 0 v2 1\n")
    pool = pool_create(dataset=dataset, name="p", runs=[run_a], depth=3)
    assert _states(pool)[("q1", "v2")][0] == "open"
