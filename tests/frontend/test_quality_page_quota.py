"""Issue 39, finding 7: on the pool's quality page, a crowd worker whose quota is used reads as
such, not as "Working" (the queue's rule: services/crowd/gate.py crowd_quota_refusal)."""
from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import CrowdWorker, PooledPair
from annotation.services.accounts.raters import memberships_grant
from tests.annotation.services.crowd.crowd_world import prolific_study
from tests.factories import label_pair, make_pool_with_runs, make_rater, make_user

pytestmark = pytest.mark.django_db


def test_a_crowd_worker_at_quota_is_shown_so():
    pool, _ = make_pool_with_runs()
    study = prolific_study(pool, quota_pairs=2)
    done, busy, staff = make_rater(), make_rater(), make_rater()
    memberships_grant(pool=pool, users=[done, busy, staff])
    for n, user in enumerate((done, busy)):
        CrowdWorker.objects.create(study=study, user=user, worker_id=f"W{n}", stage=CrowdWorker.Stage.WORK,
                                   work_started_at=timezone.now())
    pairs = list(PooledPair.objects.filter(pool=pool, role="pool").order_by("pk"))
    label_pair(done, pairs[0], "relevant")
    label_pair(done, pairs[1], "not_relevant")
    label_pair(busy, pairs[2], "relevant")
    label_pair(staff, pairs[3], "relevant")
    label_pair(staff, pairs[4], "relevant")  # no crowd worker: a study's quota is not theirs

    admin = Client()
    admin.force_login(make_user("admin"))
    page = admin.get(f"/admin-ui/pools/{pool.pk}/quality/").content.decode()

    def status(user) -> str:
        row = page[page.index(f'<tr data-rater="{user.pk}">'):]
        return row[row.index('data-title="Status">'):row.index("</tr>")]

    assert "Quota reached" in status(done) and "Working" not in status(done)
    assert "Working" in status(busy) and "Working" in status(staff)
