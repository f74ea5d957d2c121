"""Who is who. Admins are staff users; raters and researchers are members of a named group.

- admin: datasets, runs, pools, raters, reports (Django's is_staff);
- rater: only the queue and their own labels; never gold answers or other raters' labels;
- researcher: read-only API token for datasets, reports and exports.
"""
from __future__ import annotations

RATER = "rater"
RESEARCHER = "researcher"


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
