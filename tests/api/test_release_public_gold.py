"""REJUDGE_RELEASES_PUBLIC and a running campaign (issue 36, finding 8): a rater without their
token (an anonymous visitor) could download a release holding the resolved labels of pairs that
are gold in a running pool. The rule chosen (annotation/selectors/release_access.py): a release is
held back from the public while one of its pools is still being judged, or while a pool still
being judged on its dataset has a gold pair the release decides; admins and researchers always
read it, raters never. Once the running pool is done, the release is public again."""
from __future__ import annotations

import io
import zipfile

import pytest
from rest_framework.test import APIClient

from annotation import roles
from annotation.models import Pool, PooledPair
from annotation.services.accounts.users import api_token_for
from annotation.services.releases.create import release_create
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.factories import make_rater, make_user

pytestmark = pytest.mark.django_db


def _client(user=None) -> APIClient:
    """The user's API token for the API, and a signed-in session for the pages."""
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_for(user=user)}")
        client.force_login(user)
    return client


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _reads(client, release) -> dict:
    """What `client` gets of the release: in the list? detail, archive and page status."""
    listed = client.get("/api/v1/releases/")
    return {"listed": listed.status_code == 200 and release.pk in [r["id"] for r in listed.json()["results"]],
            "detail": client.get(f"/api/v1/releases/{release.pk}/").status_code,
            "archive": client.get(f"/api/v1/releases/{release.pk}/archive/").status_code,
            "page": client.get(f"/releases/{release.pk}/").status_code,
            "page_lists_it": f"/releases/{release.pk}/" in client.get("/releases/").content.decode()}


PUBLIC = {"listed": True, "detail": 200, "archive": 200, "page": 200, "page_lists_it": True}
HELD_BACK = {"listed": False, "detail": 404, "archive": 404, "page": 404, "page_lists_it": False}


def _gold_line(release, caption: str, clip: str) -> str:
    data = _body(_client(make_user("researcher")).get(f"/api/v1/releases/{release.pk}/archive/"))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        qrels = archive.read(f"{release.folder}/qrels.txt").decode()
    return next(line for line in qrels.splitlines() if line.split()[0] == caption and line.split()[2] == clip)


def test_a_release_deciding_a_running_pools_gold_pairs_is_not_public_until_that_pool_is_done(tmp_path, settings):
    settings.REJUDGE_RELEASES_PUBLIC = True
    finished = example_pool(tmp_path)
    release = release_create(pools=[finished], name="example-fire", allow_unresolved=True)
    anonymous, rater, researcher = APIClient(), _client(make_rater()), _client(make_user("researcher"))
    assert _reads(anonymous, release) == PUBLIC

    # A new campaign on the same dataset takes a pair the release decides as a gold pair, and
    # still has a pool pair to judge.
    decided = PooledPair.objects.select_related("caption", "clip").get(
        pool=finished, role="pool", caption__external_id="q1", clip__external_id="v2")
    running = Pool.objects.create(dataset=finished.dataset, name="next campaign", gold_rate=0.2)
    PooledPair.objects.create(pool=running, caption=decided.caption, clip=decided.clip, role="gold",
                              known_answer="relevant", available=False)
    still_open = PooledPair.objects.create(pool=running, caption=decided.caption, clip=decided.clip, role="pool",
                                           required_labels=1)
    # The release does give that gold pair's answer: the leak the rule closes.
    assert _gold_line(release, "q1", "v2").split()[3] == "1"

    assert _reads(anonymous, release) == HELD_BACK
    assert not roles.may_read_releases(None, release)
    assert _reads(researcher, release) == PUBLIC  # researchers (and admins) read it all along
    assert {k: v for k, v in _reads(rater, release).items() if k in ("detail", "archive")} == {"detail": 403,
                                                                                               "archive": 403}

    still_open.state = PooledPair.State.RESOLVED
    still_open.resolved_label = "relevant"
    still_open.save()
    assert _reads(anonymous, release) == PUBLIC  # the campaign is done: no rater is served gold any more


def test_a_release_made_mid_campaign_is_not_public_until_its_pool_is_done(tmp_path, settings):
    settings.REJUDGE_RELEASES_PUBLIC = True
    pool = example_pool(tmp_path)
    decided = PooledPair.objects.filter(pool=pool, role="pool").select_related("caption", "clip").first()
    PooledPair.objects.create(pool=pool, caption=decided.caption, clip=decided.clip, role="gold",
                              known_answer=decided.resolved_label or "relevant", available=False)
    left = PooledPair.objects.filter(pool=pool, role="pool", state="resolved").exclude(pk=decided.pk).first()
    left.state, left.resolved_label, left.vote_count = PooledPair.State.OPEN, "", 0
    left.save()  # one pair still needs a label: the pool is being judged
    release = release_create(pools=[pool], name="mid-campaign", allow_unresolved=True)

    assert _reads(APIClient(), release) == HELD_BACK
    assert _reads(_client(make_user("researcher")), release) == PUBLIC

    left.state, left.resolved_label = PooledPair.State.RESOLVED, "not_relevant"
    left.save()
    assert _reads(APIClient(), release) == PUBLIC


def test_without_public_releases_anonymous_visitors_are_refused_or_sent_to_log_in(tmp_path, settings):
    settings.REJUDGE_RELEASES_PUBLIC = False
    release = release_create(pools=[example_pool(tmp_path)], name="example-fire", allow_unresolved=True)
    assert APIClient().get(f"/api/v1/releases/{release.pk}/archive/").status_code == 403
    page = APIClient().get(f"/releases/{release.pk}/")
    assert page.status_code == 302 and "login" in page["Location"]
    assert _client(make_rater()).get("/releases/").status_code == 403
