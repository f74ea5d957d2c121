"""Who may open which page. Pages check roles here; the API they call checks again.

Below frontend/ and api/, which do not import each other: the API's reference pages (api/docs.py)
are pages too and are checked the same way."""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.csrf import ensure_csrf_cookie

from annotation import roles

ROLE_NAMES = {"admin": "admins", roles.RATER: "raters", roles.RESEARCHER: "researchers"}


def crowd_study_redirect(user):
    """A redirect to a crowd worker's study page (roles.crowd_study_token says why), or None."""
    token = roles.crowd_study_token(user)
    return redirect(reverse("frontend:study-stage", kwargs={"token": token})) if token else None


def page_for(*allowed: str):
    """Signed-out visitors go to the login page; signed-in users without an allowed role get a 403.
    The CSRF cookie is always set, because every page posts to the API from JavaScript."""

    def decorator(view):
        @wraps(view)
        def checked(request, *args, **kwargs):
            to_study = crowd_study_redirect(request.user)
            if to_study is not None:
                return to_study
            if roles.role_of(request.user) not in allowed:
                raise PermissionDenied(f"This page is for {' and '.join(ROLE_NAMES[r] for r in allowed)} only.")
            return view(request, *args, **kwargs)

        return login_required(ensure_csrf_cookie(checked))

    return decorator
