"""Accounts: admins, raters and researchers."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from rest_framework.authtoken.models import Token

from annotation import roles


@transaction.atomic
def user_create(*, username: str, password: str | None, role: str, email: str = "") -> object:
    """Creates an account with one role ('admin', 'rater' or 'researcher')."""
    if role not in ("admin", roles.RATER, roles.RESEARCHER):
        raise ValueError(f"unknown role '{role}'")
    User = get_user_model()
    user = User(username=username, email=email, is_staff=role == "admin", is_superuser=role == "admin")
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.full_clean(exclude=["password"])
    user.save()
    if role != "admin":
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def user_ensure(*, username: str, password: str, role: str) -> tuple[object, bool]:
    """Creates the account if missing (used by the demo, which may run twice)."""
    User = get_user_model()
    existing = User.objects.filter(username=username).first()
    if existing:
        return existing, False
    return user_create(username=username, password=password, role=role), True


def api_token_for(*, user) -> str:
    token, _ = Token.objects.get_or_create(user=user)
    return token.key


@transaction.atomic
def api_token_rotate(*, user) -> str:
    """Replaces the user's API token with a new one. The old key stops working with this commit:
    tokens are looked up on every request, never cached."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user).key


def api_token_revoke(*, user) -> bool:
    """Deletes the user's API token (it stops working with this commit); False when there was none."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)


def api_token_made_at(*, user):
    """When the user's API token was made, or None when they have none (its key is not read)."""
    return Token.objects.filter(user=user).values_list("created", flat=True).first()


def researchers():
    """Accounts in the researcher group, by name."""
    return get_user_model().objects.filter(groups__name=roles.RESEARCHER).order_by("username")


@transaction.atomic
def researcher_create(*, username: str, email: str = "", password: str | None = None) -> object:
    """A researcher account with its API token made at once, so the admin can hand it over.
    Without a password the account signs in with the token only (no web login) until one is set."""
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        raise ValueError(f"a user named '{username}' already exists")
    user = user_create(username=username, password=password, role=roles.RESEARCHER, email=email)
    api_token_for(user=user)
    return user


@transaction.atomic
def researcher_remove(*, user) -> str:
    """Takes the researcher role away. An account that is only a researcher is deleted (its token
    and sessions go with it; reports and jobs it made keep their data, with no author). An account
    that also has another role (rater, admin) keeps it, and its labels: only the group goes, and
    its token is rotated so a script holding the researcher's key stops working.
    Returns 'deleted' or 'role removed'."""
    if not user.groups.filter(name=roles.RESEARCHER).exists():
        raise ValueError(f"'{user.username}' is not a researcher")
    if user.is_staff or user.groups.exclude(name=roles.RESEARCHER).exists():
        user.groups.remove(Group.objects.get(name=roles.RESEARCHER))
        if Token.objects.filter(user=user).exists():
            api_token_rotate(user=user)
        return "role removed"
    user.delete()
    return "deleted"
