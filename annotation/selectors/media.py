"""Who may fetch a clip file served from MEDIA_ROOT.

Admins see every file. A rater sees a file when a clip referring to it (Clip.media, a path under
MEDIA_ROOT) is used by a pool they are a member of (any pair: pool, gold or training) or by a
ranking study they are a member of. Researchers read labels and reports, never videos, so they
get no file, nor does an account without a role.

A browser fetches one video with many Range requests, so this runs on every one of them: it is one
query that starts from the `clip_media` index and checks the pair and task foreign-key indexes,
whatever the size of the pools. Nothing is cached: a cache lookup costs about what the indexed
query costs, and a cache would keep serving a rater just removed from a pool.
"""
from __future__ import annotations

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet

from annotation import roles
from annotation.models import Clip, PooledPair, PoolMembership, RankingMembership, RankingTask


def _stored_forms(path: str) -> list[str]:
    """How a clip may store this file: relative to MEDIA_ROOT, or as an absolute path on this site
    (Clip.playback_url serves both from /media/)."""
    return [path, "/" + settings.MEDIA_URL.strip("/") + "/" + path]


def _clips_of_rater(*, user, path: str) -> QuerySet:
    in_pool = PooledPair.objects.filter(
        clip=OuterRef("pk"), pool__in=PoolMembership.objects.filter(rater=user).values("pool"))
    in_study = RankingTask.objects.filter(
        clip=OuterRef("pk"), study__in=RankingMembership.objects.filter(rater=user).values("study"))
    return Clip.objects.filter(media__in=_stored_forms(path)).filter(Exists(in_pool) | Exists(in_study))


def media_file_visible(*, user, path: str) -> bool:
    """Whether `user` may fetch the file at `path` (relative to MEDIA_ROOT, as in the URL)."""
    if roles.is_admin(user):
        return True
    if not roles.is_rater(user):
        return False
    return _clips_of_rater(user=user, path=path).exists()


def media_access_query(*, user, path: str) -> tuple[str, tuple]:
    """The SQL a rater's check runs (for EXPLAIN in tests and the benchmark)."""
    return _clips_of_rater(user=user, path=path).values("pk")[:1].query.sql_with_params()
