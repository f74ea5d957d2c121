"""Who may fetch a clip file from /media/: admins, and raters of a pool or ranking study that uses
the clip. Everyone else gets a 404, the same answer as for a file that does not exist, so the
response never tells which files are there."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Clip, PoolMembership, RankingStudy, RankingTask
from annotation.selectors.media import media_file_visible
from annotation.services.ranking.study import ranking_memberships_grant
from annotation.services.accounts.raters import memberships_grant
from tests.factories import make_pool_with_runs, make_rater, make_user

pytestmark = pytest.mark.django_db
SIZE = 4096


@pytest.fixture
def files(settings):
    """Four files on disk: one used by a pool, one by another pool, one by a ranking study only,
    one by no clip at all."""
    names = ["pool/a.mp4", "other/b.mp4", "study/c.mp4", "stray/d.mp4"]
    for name in names:
        path = settings.MEDIA_ROOT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes(range(256)) * (SIZE // 256))
    return names


@pytest.fixture
def setting(files):
    pool, _ = make_pool_with_runs(captions=2, clips=3, depth=2)
    other, _ = make_pool_with_runs(captions=2, clips=3, depth=2)
    clip = pool.dataset.clips.get(external_id="v2")  # pooled: run A ranks it for q1
    Clip.objects.filter(pk=clip.pk).update(media="pool/a.mp4")
    Clip.objects.filter(dataset=other.dataset, external_id="v2").update(media="other/b.mp4")
    # A clip of the first dataset that no pool pair uses, only a ranking study's task.
    study_clip = Clip.objects.create(dataset=pool.dataset, external_id="s1", video_id="s1", media="study/c.mp4")
    study = RankingStudy.objects.create(dataset=pool.dataset, name="study", proxies=["bow"], raters_per_task=2)
    RankingTask.objects.create(study=study, clip=study_clip, proxy="bow", n_candidates=5, required_submissions=2)

    member, outsider, ranker = make_rater(), make_rater(), make_rater()
    memberships_grant(pool=pool, users=[member])
    memberships_grant(pool=other, users=[outsider])
    ranking_memberships_grant(study=study, users=[ranker])
    return {"pool": pool, "member": member, "outsider": outsider, "ranker": ranker}


def fetch(client, user, name, **headers):
    if user is not None:
        client.force_login(user)
    return client.get(f"/media/{name}", **headers)


def test_admin_gets_every_file(client, setting, files):
    admin = make_user("admin")
    for name in files:
        assert fetch(client, admin, name).status_code == 200


def test_a_member_rater_gets_the_clips_of_their_pool_with_ranges(client, setting):
    whole = fetch(client, setting["member"], "pool/a.mp4")
    assert whole.status_code == 200 and len(b"".join(whole.streaming_content)) == SIZE
    part = fetch(client, setting["member"], "pool/a.mp4", HTTP_RANGE="bytes=0-99")
    assert part.status_code == 206 and part["Content-Range"] == f"bytes 0-99/{SIZE}"
    # Not the clips of a pool they are not in, nor files no clip uses.
    for name in ("other/b.mp4", "study/c.mp4", "stray/d.mp4"):
        assert fetch(client, setting["member"], name).status_code == 404


def test_a_rater_of_another_pool_gets_404(client, setting):
    assert fetch(client, setting["outsider"], "pool/a.mp4").status_code == 404
    assert fetch(client, setting["outsider"], "pool/a.mp4", HTTP_RANGE="bytes=0-99").status_code == 404
    assert fetch(client, setting["outsider"], "other/b.mp4").status_code == 200


def test_a_ranking_study_rater_gets_the_study_clip_only(client, setting):
    assert fetch(client, setting["ranker"], "study/c.mp4", HTTP_RANGE="bytes=100-").status_code == 206
    assert fetch(client, setting["ranker"], "pool/a.mp4").status_code == 404


@pytest.mark.parametrize("role", ["researcher", None])
def test_researchers_and_users_without_a_role_get_404(client, setting, role):
    user = make_user(role) if role else make_user("rater")
    if role is None:
        user.groups.clear()  # a plain account: signed in, no role
        PoolMembership.objects.create(pool=setting["pool"], rater=user)  # a stale membership grants nothing
    for name in ("pool/a.mp4", "study/c.mp4", "stray/d.mp4", "missing.mp4"):
        response = fetch(client, user, name)
        assert response.status_code == 404 and not response.has_header("Content-Range")


def test_the_refusal_looks_like_a_missing_file(client, setting):
    outsider = setting["outsider"]
    refused, missing = fetch(client, outsider, "pool/a.mp4"), fetch(client, outsider, "pool/x.mp4")
    assert refused.status_code == missing.status_code == 404
    def page(response):  # the 404 page, without its per-response CSRF token
        return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]*"', b"", response.content)

    assert page(refused).replace(b"pool/a.mp4", b"pool/x.mp4") == page(missing)


def test_anonymous_visitors_are_sent_to_login(client, setting):
    response = client.get("/media/pool/a.mp4")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_losing_membership_closes_access(client, setting):
    assert fetch(client, setting["member"], "pool/a.mp4").status_code == 200
    PoolMembership.objects.filter(rater=setting["member"]).delete()
    assert fetch(client, setting["member"], "pool/a.mp4").status_code == 404


def test_clips_sharing_a_video_file_and_legacy_absolute_paths(setting):
    pool, member = setting["pool"], setting["member"]
    # A second clip (a segment) of the same file, in no pool: the file is still the pool clip's.
    Clip.objects.create(dataset=pool.dataset, external_id="seg", video_id="v2", media="pool/a.mp4", start=0, end=1)
    assert media_file_visible(user=member, path="pool/a.mp4")
    # Media stored as an absolute path on this site (/media/...) is the same file.
    Clip.objects.filter(dataset=pool.dataset, external_id="v3").update(media="/media/pool/e.mp4")
    assert media_file_visible(user=member, path="pool/e.mp4")
    assert not media_file_visible(user=member, path="pool/e.mp4x")


def test_the_check_is_one_query_whatever_the_pool_size(setting):
    member = setting["member"]
    with CaptureQueriesContext(connection) as small:
        assert media_file_visible(user=member, path="pool/a.mp4")
    big, _ = make_pool_with_runs(captions=30, clips=40, depth=10)
    memberships_grant(pool=big, users=[member])
    with CaptureQueriesContext(connection) as large:
        assert media_file_visible(user=member, path="pool/a.mp4")
        assert not media_file_visible(user=member, path="other/b.mp4")
    assert len(small) == 1 and len(large) == 2


def test_the_check_can_use_indexes(setting, require_postgres):
    """With sequential scans priced out, PostgreSQL answers from the media and foreign-key indexes,
    so the check stays cheap on a dataset of a million clips (bench/bench_listing.py measures it)."""
    from annotation.selectors.media import media_access_query

    sql, params = media_access_query(user=setting["member"], path="pool/a.mp4")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Seq Scan" not in plan, plan
    assert "clip_media" in plan, plan


def test_behind_a_front_server_the_check_stays_here_and_the_bytes_come_from_an_internal_location(client, setting,
                                                                                                  settings):
    """With REJUDGE_MEDIA_ACCEL_REDIRECT, nginx sends the file (and answers Range itself) only
    after this view allowed it: the access rule cannot be walked around by serving MEDIA_ROOT."""
    settings.MEDIA_ACCEL_REDIRECT = "/protected-media/"
    allowed = fetch(client, setting["member"], "pool/a.mp4", HTTP_RANGE="bytes=0-99")
    assert allowed.status_code == 200 and allowed["X-Accel-Redirect"] == "/protected-media/pool/a.mp4"
    assert allowed.content == b"" and allowed["Content-Type"] == "video/mp4"
    refused = fetch(client, setting["outsider"], "pool/a.mp4")
    assert refused.status_code == 404 and "X-Accel-Redirect" not in refused
