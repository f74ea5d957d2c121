"""Who may call what. Every view names one of these (the default is admin only)."""
from rest_framework.permissions import SAFE_METHODS, BasePermission

from annotation import roles


class IsAdmin(BasePermission):
    message = "Only admins may do this."

    def has_permission(self, request, view) -> bool:
        return roles.is_admin(request.user)


class IsRater(BasePermission):
    message = "Only raters may do this."

    def has_permission(self, request, view) -> bool:
        return roles.is_rater(request.user)


class IsAdminOrResearcherReadOnly(BasePermission):
    """Admins for everything; researchers may read (GET/HEAD/OPTIONS) only."""

    message = "Only admins, or researchers reading, may do this."

    def has_permission(self, request, view) -> bool:
        if roles.is_admin(request.user):
            return True
        return request.method in SAFE_METHODS and roles.is_researcher(request.user)


class IsAuthenticatedWithRole(BasePermission):
    message = "Your account has no role on this platform."

    def has_permission(self, request, view) -> bool:
        return roles.role_of(request.user) is not None


class CanReadReleases(BasePermission):
    """Releases: admins for everything; reading as annotation/roles.py may_read_releases says
    (researchers; with REJUDGE_RELEASES_PUBLIC anyone who is not a rater, releases held back
    while their campaign runs excepted: the views narrow their querysets with
    roles.releases_readable_by, so such a release is 404 to them). Raters never."""

    message = "Only admins and researchers may read releases (raters never)."

    def has_permission(self, request, view) -> bool:
        if roles.is_admin(request.user):
            return True
        return request.method in SAFE_METHODS and roles.may_read_releases(request.user)
