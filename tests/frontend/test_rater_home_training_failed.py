"""The rater's home says what a failed training means and who can undo it (issue 39, finding 3:
a failed training silently blocked the rater)."""
from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import PoolMembership
from annotation.services.accounts.raters import memberships_grant
from annotation.services.pools.build import known_pairs_add
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def test_a_failed_training_is_explained_on_the_raters_home_with_who_can_reset_it():
    pool, _ = make_pool_with_runs()
    known_pairs_add(pool=pool, items=[{"caption": "q1", "clip": "v1", "answer": "relevant", "role": "training"}])
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    PoolMembership.objects.filter(pool=pool, rater=rater).update(training="failed", training_score=0.5)
    client = Client()
    client.force_login(rater)
    text = " ".join(client.get("/").content.decode().split())
    assert "Training not passed: you scored 50%, the pass mark is 80%." in text
    assert "until an admin lets you take the training again (“Retake training” on the pool's page)" in text
