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

import functools

from django.conf import settings
from django.db import connection

from annotation import roles
from annotation.models import Clip, PooledPair, PoolMembership, RankingMembership, RankingTask


def _stored_forms(path: str) -> list[str]:
    """How a clip may store this file: relative to MEDIA_ROOT, or as an absolute path on this site
    (Clip.playback_url serves both from /media/)."""
    return [path, "/" + settings.MEDIA_URL.strip("/") + "/" + path]


@functools.cache
def _rater_sql() -> str:
    # Plain SQL written once: building the same query through the ORM costs about 1.5 ms of
    # Python per request, several times what PostgreSQL needs to answer it.
    q = connection.ops.quote_name
    clip, pair, membership = Clip._meta.db_table, PooledPair._meta.db_table, PoolMembership._meta.db_table
    task, ranking_membership = RankingTask._meta.db_table, RankingMembership._meta.db_table
    return (f"SELECT 1 FROM {clip} c WHERE c.{q('media')} IN (%s, %s) AND ("
            f"EXISTS (SELECT 1 FROM {pair} pp JOIN {membership} m ON m.pool_id = pp.pool_id "
            f"WHERE pp.clip_id = c.id AND m.rater_id = %s) OR "
            f"EXISTS (SELECT 1 FROM {task} t JOIN {ranking_membership} rm ON rm.study_id = t.study_id "
            f"WHERE t.clip_id = c.id AND rm.rater_id = %s)) LIMIT 1")


def media_access_query(*, user, path: str) -> tuple[str, list]:
    """The SQL of a rater's check and its parameters (also for EXPLAIN in tests and the benchmark)."""
    return _rater_sql(), [*_stored_forms(path), user.pk, user.pk]


def media_file_visible(*, user, path: str) -> bool:
    """Whether `user` may fetch the file at `path` (relative to MEDIA_ROOT, as in the URL)."""
    if roles.is_admin(user):
        return True
    if not roles.is_rater(user):
        return False
    sql, params = media_access_query(user=user, path=path)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone() is not None
