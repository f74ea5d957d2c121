"""The invitation page: a rater opens their one-use link, chooses a password, and is signed in.
Open to anyone holding a link, so throttled per address (each request is a guess at a token)."""
from __future__ import annotations

import math

from django.contrib.auth import login
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from annotation.services.accounts.invitations import InvitationInvalid, invitation_check, invitation_use
from config.throttling import InvitationUseThrottle

TEMPLATE = "frontend/account/invitation.html"


@never_cache
@require_http_methods(["GET", "POST"])
def invitation(request, token: str):
    """GET: the form to set a password (or why the link cannot be used). POST: sets it with Django's
    password validators, spends the link, signs the rater in and sends them home."""
    throttle = InvitationUseThrottle()
    if not throttle.allow_request(request, None):
        wait = math.ceil(throttle.wait() or 60)
        response = render(request, TEMPLATE, {"problem": f"Too many tries from your address. Try again in "
                                                          f"{max(1, math.ceil(wait / 60))} minutes."}, status=429)
        response["Retry-After"] = str(wait)
        return response
    token = token[:100]
    try:
        invitation_row = invitation_check(token=token)
    except InvitationInvalid as exc:
        return render(request, TEMPLATE, {"problem": str(exc)}, status=410)
    errors = []
    if request.method == "POST":
        password, again = request.POST.get("password", ""), request.POST.get("password_again", "")
        if password != again:
            errors = ["The two passwords differ."]
        else:
            try:
                user = invitation_use(token=token, password=password)
            except ValidationError as exc:
                errors = exc.messages
            except InvitationInvalid as exc:
                return render(request, TEMPLATE, {"problem": str(exc)}, status=410)
            else:
                login(request, user, backend="annotation.auth_backends.RoleAwareModelBackend")
                return redirect("/")
    return render(request, TEMPLATE, {"username": invitation_row.user.username, "errors": errors,
                                      "expires_at": invitation_row.expires_at}, status=400 if errors else 200)
