"""Issue 26's "done when" on the demo pool, as the README's first command leaves it: released,
downloaded through REST with the researcher's client, verified, its Croissant file validated with
mlcroissant, then released again after one adjudication and diffed against the first version."""
from __future__ import annotations

import mlcroissant as mlc
import pytest
from rejudge_client import Client, open_release

from django.contrib.auth import get_user_model

from annotation.models import PooledPair
from annotation.services.accounts.users import api_token_for
from annotation.demo.load import demo_load
from annotation.services.queue.labels import label_submit, pair_adjudicate
from annotation.services.queue.leases import lease_next
from annotation.services.releases.create import release_create
from annotation.services.releases.diff import release_diff
from tests.annotation.demo_truth import true_answer
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


def judge_truthfully(pool, usernames, pairs_each: int) -> None:
    """The demo's raters answer what the clips show (training and gold included), as people would."""
    for username in usernames:
        rater = get_user_model().objects.get(username=username)
        for step in range(pairs_each):
            lease = lease_next(pool=pool, rater=rater).lease
            if lease is None:
                break
            pair = PooledPair.objects.select_related("caption", "clip").get(pk=lease.pair_id)
            label_submit(rater=rater, client_id=f"{username}-{step}", lease=lease.token, seconds=3,
                         value=true_answer(pair.caption.text, pair.clip.external_id))


def test_the_demo_pool_is_released_downloaded_verified_validated_and_diffed(live_server, tmp_path):
    pool = demo_load()["pool"]  # as the README's first command leaves it: ready to judge, no labels yet
    judge_truthfully(pool, ["rater1", "rater2"], pairs_each=25)
    first = release_create(allow_unresolved=True, pools=[pool], name="demo-fire", title="Demo, corrected", licence="CC-BY-4.0")
    client = Client(live_server.url, token=api_token_for(user=make_user("researcher")))

    folder = client.download("demo-fire@v1", tmp_path / "downloads")
    local = open_release(folder)
    assert len(local.verify()) == len(first.files)
    qrels = local.qrels()
    assert qrels, "the demo pool's release holds no judgments"
    dataset = mlc.Dataset(jsonld=folder / "croissant.json")  # raises on an invalid file
    lines = (folder / "qrels.txt").read_text().splitlines()
    assert len(list(dataset.records(record_set="qrels"))) == len(lines)

    # A pair the raters resolved as not relevant, and not the caption's original clip, turned relevant.
    flipped = (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, state=PooledPair.State.RESOLVED,
                                         resolved_label="not_relevant")
               .select_related("caption", "clip").order_by("pk").first())
    assert flipped is not None, "the demo has no resolved not-relevant pair to adjudicate"
    pair_adjudicate(pair_id=flipped.pk, admin=make_user("admin"), label="relevant", note="on a second look")
    second = release_create(allow_unresolved=True, pools=[pool], name="demo-fire")
    assert second.version == 2

    diff = release_diff(old=first, new=second)
    key = {"query_id": flipped.caption.external_id, "clip_id": flipped.clip.external_id}
    assert diff["counts"] == {"added": 0, "changed": 1, "removed": 0}
    assert diff["changed"] == [key | {"old_relevance": 0, "new_relevance": 1, "reason": "adjudication"}]
    newer = open_release(client.download("demo-fire@v2", tmp_path / "downloads"))
    assert newer.qrels()[key["query_id"]][key["clip_id"]] == 1
    assert qrels[key["query_id"]][key["clip_id"]] == 0
