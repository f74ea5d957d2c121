"""The agreement report: a hand-worked pool pushed through label_submit, and an excerpt of real
multi-rater labels (TVR-Ranking) stored as Label rows and checked against nltk."""
from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path

import pytest
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import binary_distance

from annotation.models import Label, PooledPair, PoolMembership, Prediction, RaterProfile, Run
from annotation.services.pools.build import known_pairs_add, pool_create
from annotation.services.accounts.raters import memberships_grant
from annotation.services.reports.create import report_create
from tests.factories import label_pair, make_dataset, make_user, unique

pytestmark = pytest.mark.django_db
FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "tvr_ranking_excerpt.csv"


def _pool_of_pairs(n_captions: int, clips_per_caption: int):
    """A pool whose 'pool' pairs are exactly n_captions x clips_per_caption, none an original."""
    n_clips = clips_per_caption + 1
    dataset = make_dataset(clips=n_clips, captions=n_captions)
    run = Run.objects.create(dataset=dataset, name="R", checksum=unique("sum"), depth=clips_per_caption)
    clips = list(dataset.clips.order_by("pk"))
    predictions = []
    for caption in dataset.captions.order_by("pk"):
        others = [c for c in clips if c.pk != caption.original_clip_id][:clips_per_caption]
        predictions += [Prediction(run=run, caption=caption, clip=clip, rank=r, score=1 - r / 100)
                        for r, clip in enumerate(others, start=1)]
    Prediction.objects.bulk_create(predictions)
    pool = pool_create(dataset=dataset, name="agreement pool", runs=[run], depth=clips_per_caption, redundancy=0.0)
    return pool, list(PooledPair.objects.filter(pool=pool, role="pool").order_by("pk"))


# Hand-worked (the same units as tests/annotation/analysis/test_agreement.py), 1 = relevant:
#   u0: r0=1, r1=1            -> resolved relevant
#   u1: r0=0, r2=0            -> resolved not relevant
#   u2: r1=1, r2=0            -> disagree, third vote still missing: open
#   u3: r0=1, r1=0, r2=1      -> third vote breaks the tie: relevant
#   u4: r2=0 (single label)   -> resolved not relevant
VOTES = [(0, 0, 1, 10.0), (0, 1, 1, 20.0), (1, 0, 0, 30.0), (1, 2, 0, 5.0), (2, 1, 1, 7.0), (2, 2, 0, 9.0),
         (3, 0, 1, 50.0), (3, 1, 0, None), (3, 2, 1, 1.0), (4, 2, 0, 3.0)]


def _hand_worked_pool():
    pool, pairs = _pool_of_pairs(5, 1)
    PooledPair.objects.filter(pk__in=[p.pk for p in pairs[:4]]).update(required_labels=2)
    raters = [make_user("rater") for _ in range(3)]
    memberships_grant(pool=pool, users=raters)
    word = {1: "relevant", 0: "not_relevant"}
    for unit, rater, value, seconds in VOTES:
        label_pair(raters[rater], pairs[unit], client_id=unique("c"), value=word[value],
                     seconds=seconds)
    # r0 reports u2's clip as broken (not a vote); gold: r0 right then wrong, r1 right.
    label_pair(raters[0], pairs[2], client_id=unique("c"), value="broken")
    captions = list(pool.dataset.captions.order_by("pk"))
    clips = list(pool.dataset.clips.order_by("pk"))
    known_pairs_add(pool=pool, items=[
        {"caption": captions[0].external_id, "clip": clips[0].external_id, "answer": "relevant", "role": "gold"},
        {"caption": captions[1].external_id, "clip": clips[0].external_id, "answer": "not_relevant", "role": "training"}])
    gold = {p.known_answer: p for p in PooledPair.objects.filter(pool=pool).exclude(role="pool")}
    # Gold answers are taken only from raters who passed the pool's training, as the queue ensures.
    PoolMembership.objects.filter(pool=pool).update(training="passed")
    for rater, pair, value in ((0, "relevant", "relevant"), (0, "not_relevant", "relevant"), (1, "relevant", "relevant")):
        label_pair(raters[rater], gold[pair], client_id=unique("c"), value=value, seconds=99.0)
    return pool, raters


def test_agreement_report_by_hand():
    pool, raters = _hand_worked_pool()
    report = report_create(pool=pool, kind="agreement", params={"n_boot": 200, "seed": 3})
    r = report.result
    assert report.params == {"n_boot": 200, "seed": 3, "confidence": 0.95, "with_mace": 0}
    assert r["summary"] == {
        "pairs": 5, "labelled_pairs": 5, "multiply_labelled_pairs": 4, "labels": 10, "resolved": 4,
        # 4 of the 4 decided pairs resolved (none without a majority); 4 of all 5 pairs.
        "decided_pairs": 4, "resolved_percent_of_decided_pairs": 100.0, "resolved_percent_of_all_pairs": 80.0,
        "relevant": 2, "not_relevant": 2, "disagreements": 0, "open": 1, "escalated": 0,
        "set_aside": 0, "complete_percent": 80.0, "resolved_by_admin": 0, "decided_by_imported_judgments": 0,
        "original_positive_pairs": 0, "original_positives_judged_not_relevant": 0}
    first, everything = r["agreement"]["first_two"], r["agreement"]["all"]
    # First two votes: u3 becomes (1, 0): 2 of 4 units agree; alpha = 1 - (4/8) / (4/7) = 0.125.
    assert first["percent_agreement"] == pytest.approx(0.5) and first["alpha"] == pytest.approx(0.125)
    assert first["n_pairable_labels"] == 8
    # All votes: alpha = 1 - (4/9) / (5/9) = 0.2 (the third vote raises it).
    assert everything["percent_agreement"] == pytest.approx(0.5) and everything["alpha"] == pytest.approx(0.2)
    assert everything["n_pairable_labels"] == 9 and everything["n_units_multi"] == 4
    for variant in (first, everything):
        assert variant["n_boot"] == 200 and len(variant["alpha_ci"]) == 2

    pseudonym = [RaterProfile.objects.get(user=u).pseudonym for u in raters]
    assert r["raters"] == [
        # r0 agrees with the resolution on u0, u1, u3; gold right once of twice; median(10, 30, 50).
        {"rater": pseudonym[0], "labels": 3, "compared": 3, "agreement_with_resolved": 1.0, "gold_labels": 2,
         "gold_accuracy": 0.5, "median_seconds": 30.0, "ambiguous": 0, "broken": 1},
        # r1: u2 is unresolved so only u0 (agrees) and u3 (outvoted) compare; seconds 20, 7 (one missing).
        {"rater": pseudonym[1], "labels": 3, "compared": 2, "agreement_with_resolved": 0.5, "gold_labels": 1,
         "gold_accuracy": 1.0, "median_seconds": 13.5, "ambiguous": 0, "broken": 0},
        # r2: u4 has a single label (its own), so it does not count as agreement.
        {"rater": pseudonym[2], "labels": 4, "compared": 2, "agreement_with_resolved": 1.0, "gold_labels": 0,
         "gold_accuracy": None, "median_seconds": 4.0, "ambiguous": 0, "broken": 0},
    ]
    assert r["disagreements"] == []
    # No user name anywhere in the stored report.
    text = str(r)
    assert not any(u.username in text for u in raters)


def test_agreement_bootstrap_is_seeded():
    pool, _ = _hand_worked_pool()
    a = report_create(pool=pool, kind="agreement", params={"n_boot": 300, "seed": 7}).result["agreement"]
    b = report_create(pool=pool, kind="agreement", params={"n_boot": 300, "seed": 7}).result["agreement"]
    assert a == b


def test_imported_disagreements_are_listed_and_count_in_resolution():
    pool, pairs = _pool_of_pairs(2, 2)
    PooledPair.objects.filter(pk=pairs[0].pk).update(state="disagreement", available=False)
    PooledPair.objects.filter(pk=pairs[1].pk).update(state="resolved", resolved_label="relevant", available=False)
    r = report_create(pool=pool, kind="agreement", params={"n_boot": 0}).result
    s = r["summary"]
    assert (s["resolved"], s["disagreements"], s["open"]) == (1, 1, 2)
    # 1 resolved of 2 decided (1 + 1 without majority); 1 of all 4 pairs.
    assert (s["decided_pairs"], s["resolved_percent_of_decided_pairs"], s["resolved_percent_of_all_pairs"]) == (2, 50.0, 25.0)
    assert s["decided_by_imported_judgments"] == 2
    assert [d["pair_id"] for d in r["disagreements"]] == [pairs[0].pk]
    assert r["disagreements"][0]["imported"] is True
    assert r["agreement"]["all"]["alpha"] is None  # no pair with two votes: undefined, stored as null


# --------------------------------------------------------------------------------------------
# real labels


def _tvr_rows():
    """TVR-Ranking excerpt: (pair, worker, relevant) with graded relevance >= 2 read as relevant.
    The platform stores one label per rater and pair, so a worker's repeat on a pair is dropped."""
    seen = set()
    rows = []
    with FIXTURE.open(newline="") as handle:
        for row in csv.DictReader(handle):
            key = (int(row["pair_id"]), int(row["worker"]))
            if key in seen:
                continue
            seen.add(key)
            rows.append((key[0], key[1], int(int(row["relevance"]) >= 2)))
    return rows


def _nltk_alpha(rows, first_two: bool) -> float:
    slots: dict[int, int] = {}
    triples = []
    for pair, worker, value in rows:
        slot = slots.get(pair, 0)
        slots[pair] = slot + 1
        if first_two and slot >= 2:
            continue
        triples.append((f"w{worker}", pair, value))
    return AnnotationTask(data=triples, distance=binary_distance).alpha()


def _percent_agreement(rows, first_two: bool) -> float:
    by_pair: dict[int, list[int]] = {}
    for pair, _, value in rows:
        by_pair.setdefault(pair, []).append(value)
    groups = [v[:2] if first_two else v for v in by_pair.values() if len(v) >= 2]
    return sum(all(a == b for a, b in itertools.combinations(g, 2)) for g in groups) / len(groups)


def test_agreement_on_real_multi_rater_labels_stored_in_the_database():
    rows = _tvr_rows()
    n_units = max(p for p, _, _ in rows) + 1
    assert n_units == 130 and len(rows) == 288
    pool, pairs = _pool_of_pairs(13, 10)
    assert len(pairs) == n_units
    workers = sorted({w for _, w, _ in rows})
    users = {w: make_user("rater") for w in workers}
    memberships_grant(pool=pool, users=list(users.values()))
    sequence: dict[int, int] = {}
    labels = []
    for pair, worker, value in rows:
        sequence[pair] = sequence.get(pair, 0) + 1
        labels.append(Label(pair=pairs[pair], rater=users[worker], value="relevant" if value else "not_relevant",
                            client_id=unique("c"), counted=True, sequence=sequence[pair], seconds=float(pair % 7)))
    Label.objects.bulk_create(labels)

    r = report_create(pool=pool, kind="agreement", params={"n_boot": 500, "seed": 1}).result
    for variant, first_two in (("first_two", True), ("all", False)):
        stored = r["agreement"][variant]
        assert stored["alpha"] == pytest.approx(_nltk_alpha(rows, first_two), rel=1e-9)
        assert stored["percent_agreement"] == pytest.approx(_percent_agreement(rows, first_two), rel=1e-12)
        low, high = stored["alpha_ci"]
        assert low < stored["alpha"] < high
    assert r["agreement"]["all"]["n_pairable_labels"] == 288
    assert r["agreement"]["first_two"]["n_pairable_labels"] == 260
    assert r["summary"]["labels"] == 288 and r["summary"]["multiply_labelled_pairs"] == 130
    per_worker = {users[w].rater_profile.pseudonym: sum(1 for _, x, _ in rows if x == w) for w in workers}
    assert {row["rater"]: row["labels"] for row in r["raters"]} == per_worker
    assert all(not math.isnan(row["median_seconds"]) for row in r["raters"])
