"""Every demo training and gold pair carries the answer the demo's own clips and captions give.

Issue 14 item 1: caption ids off by one made 'a blue shape' x the blue triangle a 'not relevant'
training pair and 'a red shape moves across the screen' x the green square a 'relevant' gold pair,
so a truthful rater scored 2/3 in training and 1/2 on gold."""
from __future__ import annotations

import pytest

from annotation.demo.scenes import SCENES, demo_captions, ground_truth
from annotation.models import Label, PooledPair, PoolMembership
from annotation.demo.load import demo_load
from annotation.services.queue.labels import label_submit
from annotation.services.queue.leases import lease_next
from tests.annotation.demo_truth import said, scene_of, spoken, true_answer

pytestmark = pytest.mark.django_db


def test_caption_words_parse_as_expected():
    # Hand-read: "a red shape moves across the screen" names only a colour; "a triangle rises up"
    # names a shape and a motion; the specific captions name all four elements.
    assert said("a red shape moves across the screen") == {"colour": "red"}
    assert said("a triangle rises up") == {"shape": "triangle", "motion": "rising"}
    assert said("a blue triangle moves from left to right on a dark background") == {
        "colour": "blue", "shape": "triangle", "motion": "left-to-right", "background": "dark"}
    # The blue triangle (demo07) shows "a blue shape" but not "a triangle rises up".
    assert true_answer("a blue shape", "demo07") == "relevant"
    assert true_answer("a triangle rises up", "demo07") == "not_relevant"
    assert true_answer("a red shape moves across the screen", "demo05") == "not_relevant"


def test_each_caption_requires_what_its_words_say():
    # The demo's `needs` (used for ground truth and the synthetic runs) must be what the text says.
    for caption in demo_captions():
        assert caption.needs == said(caption.text), caption.caption_id
        assert true_answer(caption.text, caption.original_clip) == "relevant", caption.caption_id
    truth = ground_truth()
    for caption in demo_captions():
        assert truth[caption.caption_id] == {s.clip_id for s in SCENES if true_answer(caption.text, s.clip_id) == "relevant"}


def test_every_stored_known_pair_has_the_true_answer():
    pool = demo_load()["pool"]
    known = list(PooledPair.objects.filter(pool=pool, role__in=["training", "gold"]).select_related("caption", "clip"))
    assert sorted(p.role for p in known) == ["gold", "gold", "training", "training", "training"]
    for pair in known:
        assert pair.known_answer == true_answer(pair.caption.text, pair.clip.external_id), (
            pair.role, pair.caption.text, pair.clip.external_id)
    # Both answers are taught in training, and gold checks both.
    for role in ("training", "gold"):
        assert {p.known_answer for p in known if p.role == role} == {"relevant", "not_relevant"}


def test_training_explanations_name_what_decides_the_answer():
    """A 'not relevant' explanation names something the clip shows instead of what the caption
    says; a 'relevant' one names every element of the caption."""
    pool = demo_load()["pool"]
    for pair in PooledPair.objects.filter(pool=pool, role="training").select_related("caption", "clip"):
        scene, named = scene_of(pair.clip.external_id), said(pair.caption.text)
        text = pair.explanation.lower()
        if pair.known_answer == "relevant":
            assert all(spoken(a, v) in text for a, v in named.items()), (pair.caption.text, text)
        else:
            wrong = [a for a, v in named.items() if getattr(scene, a) != v]
            assert any(spoken(a, getattr(scene, a)) in text for a in wrong), (pair.caption.text, text)


def test_a_truthful_rater_passes_training_with_full_marks():
    summary = demo_load()
    pool = summary["pool"]
    membership = PoolMembership.objects.select_related("rater").filter(pool=pool).first()
    for step in range(3):
        lease = lease_next(pool=pool, rater=membership.rater).lease
        pair = lease.pair
        label_submit(rater=membership.rater, client_id=f"t{step}", lease=lease.token,
                     value=true_answer(pair.caption.text, pair.clip.external_id), seconds=2.0)
    membership.refresh_from_db()
    assert Label.objects.filter(rater=membership.rater, pair__role="training").count() == 3
    assert (membership.training, membership.training_score) == ("passed", 1.0)
