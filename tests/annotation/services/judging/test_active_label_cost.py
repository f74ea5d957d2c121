"""What a label on an "active" pool costs (issue 40): the machine's verdicts on the label's query
are read in one statement (two ORM queries before), and give the same probabilities as the batch
read the recomputation uses, which are worked out by hand here (test_queue_active's VERDICTS)."""
from __future__ import annotations

import numpy as np
import pytest
from django.db import connection, reset_queries
from django.test.utils import CaptureQueriesContext

from annotation.models import Caption, MachineJudgment
from annotation.services.judging import judging_settings_update
from annotation.services.judging.active import query_confidences, snapshots_confidences
from annotation.services.judging.order import query_snapshot
from tests.annotation.services.judging.test_queue_active import PROBABILITY, machine_judge
from tests.annotation.services.judging.test_queue_strategies import name, setup
from tests.factories import label_statements

pytestmark = pytest.mark.django_db


def test_one_query_s_verdicts_read_in_one_statement_are_the_hand_worked_probabilities():
    pool, _ = setup({})
    judge = machine_judge(pool)
    q1 = Caption.objects.get(dataset=pool.dataset, external_id="q1")
    snap = query_snapshot(pool.pk, q1.pk)
    clips = [name(p)[1] for p in snap.pair_ids.tolist()]
    assert sorted(clips) == ["v1", "v2", "v3", "v4", "v5", "v6"]
    reset_queries()
    with CaptureQueriesContext(connection) as captured:
        got = query_confidences(judge.pk, q1.pk, snap)
    sent = [q["sql"] for q in captured.captured_queries if not q["sql"].startswith(("PREPARE", "SAVEPOINT", "RELEASE"))]
    assert len(sent) == (1 if connection.vendor == "postgresql" else 2), sent
    expected = np.array([PROBABILITY[c] for c in clips])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))  # v5: no verdict
    np.testing.assert_allclose(got[~np.isnan(got)], expected[~np.isnan(expected)], rtol=0, atol=1e-12)
    # the same as the batch read, to the bit
    batch = snapshots_confidences(judge.pk, {q1.pk: snap})[q1.pk]
    assert got.tobytes() == batch.tobytes()


def test_another_judge_s_or_caption_s_verdicts_are_not_read():
    pool, _ = setup({})
    judge = machine_judge(pool)
    other = machine_judge(pool, name="other")
    MachineJudgment.objects.filter(judge=other).update(label="not_relevant", score=1.0)
    q1 = Caption.objects.get(dataset=pool.dataset, external_id="q1")
    q2 = Caption.objects.exclude(pk=q1.pk).filter(dataset=pool.dataset).first()
    snap = query_snapshot(pool.pk, q1.pk)
    clips = [name(p)[1] for p in snap.pair_ids.tolist()]
    got = query_confidences(judge.pk, q1.pk, snap)
    assert got[clips.index("v1")] == pytest.approx(0.99) and got[clips.index("v4")] == pytest.approx(0.6)
    # q2 has no verdicts: read under q2's caption, q1's pairs have none
    assert np.isnan(query_confidences(judge.pk, q2.pk, snap)).all()
    assert np.isnan(query_confidences(None, q1.pk, snap)).all()


def test_a_judged_label_on_an_active_pool_stays_within_its_statement_budget():
    """Within a bandit label's budget of 8 on PostgreSQL (authentication, the query row locked, the
    locked pair, earlier labels with the lease ended, the label with the pair, the query's pairs, its
    counts, the new order when it changed), the machine's verdicts on the query's pairs included:
    9 when they took two ORM queries (the pairs' clips, then the verdicts)."""
    from annotation.models import PooledPair

    pool, (rater,) = setup({})
    machine_judge(pool)
    # Every pair in the sample (rate 1): a smaller rate draws by a hash of the caption's id, which
    # differs from run to run (the database's sequences), and could leave fewer than 3 pairs.
    judging_settings_update(pool=pool, changes={"strategy": "active", "machine_judge": "vlm", "sample_rate": 1.0})
    counts = [sum(1 for sql in sent if not sql.startswith("PREPARE "))
              for sent in label_statements(rater, pool, 3, "a")]
    assert PooledPair.objects.filter(pool=pool, state="resolved").count() == 3  # each label judged its pair
    # SQLite ends the lease and reads the earlier labels in two statements, and writes the label and
    # its pair in two (one each on PostgreSQL), and reads the verdicts in two ORM queries (the
    # prepared statement binds arrays, PostgreSQL's alone: services/judging/active.py): 11.
    assert max(counts) <= (8 if connection.vendor == "postgresql" else 11), counts
