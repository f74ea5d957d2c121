"""The signed-in user's own account: their API token."""
from __future__ import annotations

from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation import roles
from annotation.page_access import page_for
from annotation.services.accounts.users import api_token_for, api_token_rotate


# Raters work in the browser only; admins and researchers script the API.
@page_for("admin", roles.RESEARCHER)
@require_http_methods(["GET", "POST"])
def api_token(request):
    """GET shows the caller's own token (made on first visit); POST (a form, with CSRF) replaces it
    and redirects back, so a reload does not rotate it again."""
    if request.method == "POST":
        api_token_rotate(user=request.user)
        return redirect(f"{request.path}?rotated=1")
    return render(request, "frontend/account/token.html",
                  {"token": api_token_for(user=request.user), "rotated": request.GET.get("rotated") == "1"})
