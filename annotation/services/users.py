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
