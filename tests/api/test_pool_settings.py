"""PATCH pools/{id}/ and pool_settings_update: an admin changes lease, gold rate, pass mark and
redundancy after the build; a new redundancy re-draws only pairs nobody labelled or holds."""
from __future__ import annotations

import numpy as np
import pytest
from rest_framework.test import APIClient

from annotation.models import Pool, PooledPair
from annotation.analysis.pair_hashes import needs_second_label
from annotation.services.pools.build import PoolError, pool_settings_update
from annotation.services.accounts.raters import memberships_grant
from tests.factories import label_pair, lease_pair_for, make_pool_with_runs, make_rater, make_user

pytestmark = pytest.mark.django_db


def admin_client():
    client = APIClient()
    client.force_authenticate(make_user("admin"))
    return client


def test_patch_changes_the_settings_and_refuses_others_and_bad_values():
    pool, _ = make_pool_with_runs()
    client = admin_client()
    url = f"/api/v1/pools/{pool.pk}/"
    ok = client.patch(url, {"lease_seconds": 120, "gold_rate": 0.05, "training_pass_mark": 0.9}, format="json")
    assert ok.status_code == 200
    assert (ok.json()["lease_seconds"], ok.json()["gold_rate"], ok.json()["training_pass_mark"]) == (120, 0.05, 0.9)
    pool.refresh_from_db()
    assert (pool.lease_seconds, pool.gold_rate, pool.training_pass_mark) == (120, 0.05, 0.9)
    bad = client.patch(url, {"gold_rate": 1.5, "lease_seconds": 5}, format="json")
    assert bad.status_code == 400 and set(bad.json()) >= {"gold_rate", "lease_seconds"}
    fixed = client.patch(url, {"depth": 3}, format="json")
    assert fixed.status_code == 400 and "depth" in fixed.json()
    assert client.patch(url, {}, format="json").status_code == 400
    pool.refresh_from_db()
    assert (pool.lease_seconds, pool.gold_rate, pool.depth) == (120, 0.05, 3)
    researcher = APIClient()
    researcher.force_authenticate(make_user("researcher"))
    assert researcher.patch(url, {"gold_rate": 0.2}, format="json").status_code == 403


def test_new_redundancy_redraws_only_pairs_nobody_labelled_or_holds():
    pool, _ = make_pool_with_runs(captions=8, clips=10, depth=4, redundancy=0.0, seed=7)
    rater = make_rater()
    memberships_grant(pool=pool, users=[rater])
    pairs = list(PooledPair.objects.filter(pool=pool, role="pool").select_related("caption", "clip").order_by("pk"))
    labelled, leased, rest = pairs[0], pairs[1], pairs[2:]
    label_pair(rater, labelled, "relevant")
    lease_pair_for(rater, leased)

    result = pool_settings_update(pool=pool, changes={"redundancy": 1.0})
    # Rate 1.0: every untouched pair now asks two labels; the labelled (resolved) and leased
    # pairs keep one.
    assert result["redrawn"] == len(rest) and pool.redundancy == 1.0
    asked = dict(PooledPair.objects.filter(pool=pool, role="pool").values_list("pk", "required_labels"))
    assert asked[labelled.pk] == 1 and asked[leased.pk] == 1 and {asked[p.pk] for p in rest} == {2}

    # Rate 0.5: the same seeded draw as a build with 0.5 (needs_second_label on external ids).
    result = pool_settings_update(pool=pool, changes={"redundancy": 0.5})
    expected = needs_second_label([p.caption.external_id for p in rest], [p.clip.external_id for p in rest], 7, 0.5)
    asked = dict(PooledPair.objects.filter(pool=pool, role="pool").values_list("pk", "required_labels"))
    assert [asked[p.pk] for p in rest] == list(np.where(expected, 2, 1))
    assert result["redrawn"] == int((~expected).sum()) and 0 < result["redrawn"] < len(rest)


def test_service_refuses_fields_that_cannot_change():
    pool, _ = make_pool_with_runs()
    with pytest.raises(PoolError, match="seed"):
        pool_settings_update(pool=pool, changes={"seed": 3})
    assert Pool.objects.get(pk=pool.pk).seed == 0
