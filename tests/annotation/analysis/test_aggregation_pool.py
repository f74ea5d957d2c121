"""Aggregation of a pool's stored votes (services/aggregation) and its section of the agreement
report: the TVR-Ranking excerpt stored as Label rows, against crowd-kit called directly."""
from __future__ import annotations

import pandas as pd
import pytest
from crowdkit.aggregation import MACE, DawidSkene

from annotation.models import Label, PooledPair
from annotation.services.aggregation.pool_labels import AggregationError, pool_aggregated_labels, pool_aggregation
from annotation.services.accounts.raters import memberships_grant
from annotation.services.reports.create import report_create
from tests.annotation.services.reports.test_report_agreement import _pool_of_pairs, _tvr_rows
from tests.factories import make_user, unique

pytestmark = pytest.mark.django_db


def _tvr_pool():
    rows = _tvr_rows()  # (pair, worker, relevance >= 2), one label per (pair, worker)
    pool, pairs = _pool_of_pairs(13, 10)
    users = {w: make_user("rater") for w in sorted({w for _, w, _ in rows})}
    memberships_grant(pool=pool, users=list(users.values()))
    sequence: dict[int, int] = {}
    labels = []
    for pair, worker, value in rows:
        sequence[pair] = sequence.get(pair, 0) + 1
        labels.append(Label(pair=pairs[pair], rater=users[worker], value="relevant" if value else "not_relevant",
                            client_id=unique("c"), counted=True, sequence=sequence[pair]))
    Label.objects.bulk_create(labels)
    frame = pd.DataFrame([(pairs[p].pk, users[w].pk, v) for p, w, v in rows], columns=["task", "worker", "label"])
    return pool, pairs, frame


@pytest.mark.parametrize("model", ["dawid_skene", "mace"])
def test_pool_aggregation_equals_crowd_kit_on_the_same_votes(model):
    pool, pairs, frame = _tvr_pool()
    direct = (DawidSkene(n_iter=100, tol=1e-5) if model == "dawid_skene" else MACE(random_state=0)).fit(frame)
    ours = pool_aggregation(pool=pool, model=model)
    assert ours.label_of() == {int(k): int(v) for k, v in direct.labels_.items()}


def test_aggregated_labels_only_for_pairs_decided_by_votes():
    pool, pairs, frame = _tvr_pool()
    # Mark states as a finished campaign would: every pair decided by votes except one an admin
    # decided against the votes, and one still open.
    PooledPair.objects.filter(pool=pool).update(state="resolved", resolved_label="relevant", vote_count=2)
    PooledPair.objects.filter(pk=pairs[0].pk).update(resolved_by_admin=True)
    PooledPair.objects.filter(pk=pairs[1].pk).update(state="open", resolved_label="")
    direct = DawidSkene(n_iter=100, tol=1e-5).fit(frame).labels_
    labels = pool_aggregated_labels(pool=pool, model="dawid_skene")
    assert pairs[0].pk not in labels and pairs[1].pk not in labels
    assert len(labels) == 128
    word = {1: "relevant", 0: "not_relevant"}
    assert all(labels[p.pk] == word[int(direct[p.pk])] for p in pairs[2:])
    majority = pool_aggregated_labels(pool=pool, model="majority")
    assert set(majority) == set(labels) and set(majority.values()) == {"relevant"}
    with pytest.raises(AggregationError, match="unknown aggregation 'glad'"):
        pool_aggregated_labels(pool=pool, model="glad")


def test_agreement_report_lists_where_models_and_majority_differ():
    pool, pairs, frame = _tvr_pool()
    section = report_create(pool=pool, kind="agreement", params={"n_boot": 10, "with_mace": 1}).result["aggregation"]
    direct = DawidSkene(n_iter=100, tol=1e-5).fit(frame).labels_
    shares = frame.groupby("task")["label"].mean()
    # Strict majority: share above 1/2 relevant, below not relevant, exactly 1/2 a tie.
    majority = {t: (1 if s > 0.5 else 0 if s < 0.5 else None) for t, s in shares.items()}
    expected = sorted(t for t in shares.index if majority[t] != int(direct[t]))
    ds = section["models"]["dawid_skene"]
    assert ds["pairs"] == 130
    assert [d["pair_id"] for d in ds["differences"]] == expected
    assert ds["different"] == len(expected) > 0
    assert ds["same_as_majority"] == 130 - len(expected)
    assert ds["majority_ties"] == sum(v is None for v in majority.values())
    first = ds["differences"][0]
    assert first["majority"] == {1: "relevant", 0: "not_relevant", None: None}[majority[first["pair_id"]]]
    assert first["model"] == {1: "relevant", 0: "not_relevant"}[int(direct[first["pair_id"]])]
    # Confusion matrices name raters by pseudonym and add up to their labels.
    per_rater = {row["rater"]: row for row in ds["rater_confusion"]}
    assert len(per_rater) == frame.worker.nunique() and None not in per_rater
    assert sum(sum(map(sum, row["counts"])) for row in ds["rater_confusion"]) == len(frame)
    assert section["models"]["mace"]["pairs"] == 130
    # Without asking, the section has Dawid-Skene only (MACE costs seconds even on small pools).
    plain = report_create(pool=pool, kind="agreement", params={"n_boot": 10}).result["aggregation"]
    assert list(plain["models"]) == ["dawid_skene"]
