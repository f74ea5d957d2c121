"""Invitations: one-use, expiring links that let a rater set their own password.

The link carries a random token; the database keeps only its sha256, so neither a copy of the
database nor the admin's page can open an account later. A new invitation for a user revokes their
unused ones: that is also how an admin resets a password."""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.password_validation import validate_password
from django.db import transaction
from django.utils import timezone

from annotation.models import RaterInvitation

# How long a link works: long enough for a rater to find the e-mail after a weekend.
INVITATION_LIFETIME = timedelta(days=7)
# The token's random bytes (URL-safe base64 makes them 43 characters).
TOKEN_BYTES = 32


class InvitationInvalid(Exception):
    """The link cannot be used; the message says why in words a rater understands."""


@dataclass(frozen=True)
class IssuedInvitation:
    invitation: RaterInvitation
    token: str  # shown once (in the link); never stored


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def invitation_path(token: str) -> str:
    """The link's path; services/accounts knows no host (views build the full URL)."""
    return f"/invite/{token}/"


@transaction.atomic
def invitation_create(*, user, created_by=None, lifetime: timedelta = INVITATION_LIFETIME) -> IssuedInvitation:
    """A new link for `user`; their earlier unused links stop working."""
    now = timezone.now()
    RaterInvitation.objects.filter(user=user, used_at__isnull=True, revoked_at__isnull=True).update(revoked_at=now)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    invitation = RaterInvitation.objects.create(user=user, created_by=created_by, token_sha256=token_digest(token),
                                                expires_at=now + lifetime)
    return IssuedInvitation(invitation=invitation, token=token)


def invitation_check(*, token: str) -> RaterInvitation:
    """The invitation the token opens, or InvitationInvalid saying why not (used, expired, replaced,
    unknown). Never compared as typed: the guess is hashed first, so a lookup's timing depends on its
    digest, which shares no prefix with the real token's; the final comparison is constant-time too."""
    digest = token_digest(token or "")
    invitation = RaterInvitation.objects.select_related("user").filter(token_sha256=digest).first()
    if invitation is None or not hmac.compare_digest(invitation.token_sha256, digest):
        raise InvitationInvalid("This link is not valid. Ask the admin who invited you for a new one.")
    if invitation.used_at is not None:
        raise InvitationInvalid("This link was already used to set a password. Log in with that password, or "
                                "ask an admin to reset it.")
    if invitation.revoked_at is not None:
        raise InvitationInvalid("This link was replaced by a newer one. Use the latest link you were sent.")
    if invitation.expires_at <= timezone.now():
        raise InvitationInvalid("This link has expired. Ask the admin who invited you for a new one.")
    if not invitation.user.is_active:
        raise InvitationInvalid("This account is disabled. Ask an admin.")
    return invitation



@transaction.atomic
def invitation_use(*, token: str, password: str):
    """Sets the password the link's owner chose (Django's password validators decide; their refusal
    is a django ValidationError) and spends the link. Returns the user."""
    invitation = invitation_check(token=token)
    invitation = RaterInvitation.objects.select_for_update().select_related("user").get(pk=invitation.pk)
    if invitation.used_at is not None or invitation.revoked_at is not None:  # a second tab won the race
        raise InvitationInvalid("This link was already used to set a password.")
    user = invitation.user
    validate_password(password, user=user)
    user.set_password(password)
    user.save(update_fields=["password"])
    invitation.used_at = timezone.now()
    invitation.save(update_fields=["used_at"])
    return user
