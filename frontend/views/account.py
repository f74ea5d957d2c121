"""The signed-in user's own account: their API token."""
from __future__ import annotations

from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation import roles
from annotation.page_access import page_for
from annotation.services.accounts.users import api_token_for, api_token_made_at, api_token_revoke, api_token_rotate

#: Where a rater's new key waits for the one page view that shows it.
_NEW_KEY = "api-token-new-key"


@page_for("admin", roles.RESEARCHER, roles.RATER)
@require_http_methods(["GET", "POST"])
def api_token(request):
    """Every action is on the caller's own token: no form field names whose.

    Admins and researchers script the API all along: GET shows their token (made on first visit);
    POST (a form, with CSRF) replaces it and redirects back, so a reload does not rotate it again.
    A rater scripts their own work only now and then: they make a token (POST action=create, which
    replaces any old one) and see it once, on the page the redirect leads to; later visits say
    when it was made, not what it is; action=revoke deletes it."""
    if roles.role_of(request.user) == roles.RATER:
        return _rater_token(request)
    if request.method == "POST":
        api_token_rotate(user=request.user)
        return redirect(f"{request.path}?rotated=1")
    return render(request, "frontend/account/token.html",
                  {"token": api_token_for(user=request.user), "rotated": request.GET.get("rotated") == "1"})


def _rater_token(request):
    if request.method == "POST":
        if request.POST.get("action") == "create":
            request.session[_NEW_KEY] = api_token_rotate(user=request.user)
        elif request.POST.get("action") == "revoke":
            request.session.pop(_NEW_KEY, None)
            api_token_revoke(user=request.user)
            return redirect(f"{request.path}?revoked=1")
        return redirect(request.path)
    return render(request, "frontend/account/rater_token.html", {
        "new_token": request.session.pop(_NEW_KEY, None), "made_at": api_token_made_at(user=request.user),
        "revoked": request.GET.get("revoked") == "1"})
