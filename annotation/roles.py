"""Who is who. Admins are staff users; raters and researchers are members of a named group.

- admin: datasets, runs, pools, raters, reports (Django's is_staff);
- rater: only the queue and their own labels; never gold answers or other raters' labels;
- researcher: read-only API token for datasets, reports and exports.

Reading releases (may_read_releases) is decided here too, for the API and the pages alike.
"""
from __future__ import annotations

import functools

from annotation.services.queue.rows import raw_first

RATER = "rater"
RESEARCHER = "researcher"
ROLE_GROUPS = (RATER, RESEARCHER)


def user_by_token(key: str):
    """The user owning an API token, with their role groups read in the same query (or None).

    Every API request checks the caller's role; this keeps that to one short query."""
    return _load(_user_sql("token"), key)


def user_by_id(user_id):
    """The user with this id, with their role groups read in the same query (or None)."""
    return _load(_user_sql("id"), user_id)


def _load(sql: str, value):
    from django.contrib.auth import get_user_model

    user = raw_first(get_user_model(), sql, [value])  # a prepared statement on PostgreSQL
    if user is not None:
        user._rejudge_groups = {group for bit, group in enumerate(ROLE_GROUPS) if (user.role_group_bits or 0) >> bit & 1}
    return user


@functools.cache
def _user_sql(by: str) -> str:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from rest_framework.authtoken.models import Token

    user_model = get_user_model()
    membership, group = user_model.groups.through._meta.db_table, Group._meta.db_table
    # One subquery, one bit per role group: cheaper for PostgreSQL to plan than one EXISTS per group.
    bits = " ".join(f"WHEN '{name}' THEN {1 << bit}" for bit, name in enumerate(ROLE_GROUPS))
    flags = (f"(SELECT SUM(CASE g.name {bits} ELSE 0 END) FROM {membership} ug JOIN {group} g ON g.id = ug.group_id "
             f"WHERE ug.user_id = u.id) AS role_group_bits")
    users = f"{user_model._meta.db_table} u"
    if by == "token":
        return f"SELECT u.*, {flags} FROM {Token._meta.db_table} t JOIN {users} ON u.id = t.user_id WHERE t.key = %s"
    return f"SELECT u.*, {flags} FROM {users} WHERE u.id = %s"


def _in_group(user, group: str) -> bool:
    if not user or not user.is_authenticated:
        return False
    cache = getattr(user, "_rejudge_groups", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True))
        user._rejudge_groups = cache
    return group in cache


def is_admin(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active and user.is_staff)


def is_rater(user) -> bool:
    return bool(user and user.is_active) and _in_group(user, RATER)


def is_researcher(user) -> bool:
    return bool(user and user.is_active) and _in_group(user, RESEARCHER)


def role_of(user) -> str | None:
    if is_admin(user):
        return "admin"
    if is_rater(user):
        return "rater"
    if is_researcher(user):
        return "researcher"
    return None


def may_read_releases(user, release=None) -> bool:
    """The one rule for reading releases (API, pages, archive downloads). Admins and researchers
    read every release; raters never do (a release holds resolved labels, which may be gold
    answers of a pool they judge); anyone else, anonymous visitors included, only with
    REJUDGE_RELEASES_PUBLIC on, and then not a release held back while a campaign runs
    (selectors/release_access.py). Without `release`: whether the user may read releases at all."""
    from django.conf import settings

    if is_admin(user) or is_researcher(user):
        return True
    if is_rater(user) or not settings.REJUDGE_RELEASES_PUBLIC:
        return False
    if release is None:
        return True
    from annotation.selectors.release_access import releases_held_back

    return release.pk not in releases_held_back([release])


def releases_readable_by(user, releases):
    """`releases` (a queryset) narrowed to those `user` may read (may_read_releases)."""
    if is_admin(user) or is_researcher(user):
        return releases
    if not may_read_releases(user):
        return releases.none()
    from annotation.selectors.release_access import releases_held_back

    candidates = releases.model.objects.filter(pk__in=releases.values("pk")).only("pk", "dataset_id", "sources")
    return releases.exclude(pk__in=releases_held_back(candidates))


def crowd_study_token(user) -> str | None:
    """The study token of a crowd worker's account, None for any other account: the one rule for
    what a crowd account may see. Such an account is a rater of its study's pool, but the rater
    pages (start page, judging page, ranking) and the rater's list of pools are not for it: they
    name the pool and the dataset, which a study hides from its workers, and bypass the study's
    pages. Pages redirect it to its study; the API lists it no pools."""
    if not getattr(user, "is_authenticated", False) or role_of(user) != RATER:
        return None
    from annotation.models import CrowdWorker

    return CrowdWorker.objects.filter(user_id=user.pk).values_list("study__token", flat=True).first()
