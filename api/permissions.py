"""Who may call what. Every view names one of these (the default is admin only)."""
from django.conf import settings
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
    """Releases: admins for everything; researchers read; with REJUDGE_RELEASES_PUBLIC anyone who is
    not a rater reads too (anonymous visitors included). Raters never."""

    message = "Only admins and researchers may read releases (raters never)."

    def has_permission(self, request, view) -> bool:
        if roles.is_admin(request.user):
            return True
        if request.method not in SAFE_METHODS:
            return False
        if roles.is_researcher(request.user):
            return True
        return bool(settings.REJUDGE_RELEASES_PUBLIC) and not roles.is_rater(request.user)
