from axes.helpers import get_client_username, get_cool_off
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from annotation import roles
from annotation.page_access import crowd_study_redirect
from annotation.selectors.dashboard import datasets_overview, rater_pool_cards, recent_jobs


@login_required
@ensure_csrf_cookie
def home(request):
    """The landing page: admins see datasets and jobs; raters their pools and ranking studies;
    researchers the datasets and where the reports are."""
    to_study = crowd_study_redirect(request.user)
    if to_study is not None:
        return to_study
    role = roles.role_of(request.user)
    context = {"role": role}
    if role in ("admin", roles.RESEARCHER):
        context["datasets"] = datasets_overview()
    if role == "admin":
        context["jobs"] = recent_jobs(limit=10)
    if role == roles.RATER:
        context["memberships"] = rater_pool_cards(rater=request.user)
    return render(request, "frontend/home.html", context)


def login_locked(request, response=None, credentials=None):
    """django-axes' answer (AXES_LOCKOUT_CALLABLE) to a login for a locked account, the right
    password included: 429 and how long to wait."""
    cool_off = get_cool_off(request)
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "username": get_client_username(request, credentials),
               "cooloff_minutes": round(cool_off.total_seconds() / 60) if cool_off else None}
    return render(request, "frontend/lockout.html", context, status=429)
