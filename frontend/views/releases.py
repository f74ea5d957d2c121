"""Release pages: the list of releases (admins get a form to make one) and one release with its
sources, counts, files and checksums, and its download. Readers as the API's: admins and
researchers, anyone but raters when REJUDGE_RELEASES_PUBLIC is on."""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render
from django.views.decorators.csrf import ensure_csrf_cookie

from django.utils.safestring import mark_safe

from annotation import roles
from annotation.analysis.leaderboard import leaderboard_csv_rows, leaderboard_svg
from annotation.models import Pool
from annotation.selectors.releases import release_list
from annotation.selectors.reports import judgment_sets_listed


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def release_reader(view):
    @wraps(view)
    def checked(request, *args, **kwargs):
        # Who may read releases: annotation/roles.py may_read_releases (one rule, the API's too).
        if not roles.may_read_releases(request.user):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            raise PermissionDenied("Releases are for admins and researchers.")
        return view(request, *args, **kwargs)

    return ensure_csrf_cookie(checked)


@release_reader
def release_index(request):
    is_admin = roles.is_admin(request.user)
    context = {"releases": roles.releases_readable_by(request.user, release_list())[:500], "is_admin": is_admin}
    if is_admin:
        chosen = request.GET.get("pool", "")
        context |= {"pools": Pool.objects.select_related("dataset").order_by("dataset__name", "name"),
                    "judgment_sets": judgment_sets_listed(), "chosen_pool": int(chosen) if chosen.isdigit() else None}
    return render(request, "frontend/releases/index.html", context)


@release_reader
def release_detail(request, release_id: int):
    release = get_object_or_404(roles.releases_readable_by(request.user, release_list()), pk=release_id)
    versions = roles.releases_readable_by(request.user, release_list(name=release.name))
    counts = dict(release.counts)
    changes, agreement = counts.pop("changes", {}), counts.pop("agreement", {})
    board = release.leaderboard
    leaderboard = None
    if board and board.get("runs"):
        header, *rows = leaderboard_csv_rows(board)
        # leaderboard_svg escapes every text it writes, so its markup can go in as it is.
        leaderboard = {"header": header, "rows": [[_cell(v) for v in row] for row in rows], "interval": board.get("interval"), "pool": board.get("pool"),
                       "svg": mark_safe(leaderboard_svg(board))}  # noqa: S308
    return render(request, "frontend/releases/detail.html",
                  {"release": release, "leaderboard": leaderboard, "versions": versions, "counts": sorted(counts.items()), "changes": changes,
                   "agreement": agreement, "is_admin": roles.is_admin(request.user)})
