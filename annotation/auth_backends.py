"""The login backend: Django's, except that loading the session's user also reads their role
groups, so a browser request checks the role without a query of its own."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.backends import ModelBackend

from annotation import roles


class RoleAwareModelBackend(ModelBackend):
    def get_user(self, user_id):
        user = roles.user_by_id(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None


# django-axes keeps the user name of every failed login in a 255-character column.
AXES_USERNAME_LENGTH = 255


def login_attempt_username(request, credentials: dict | None = None) -> str | None:
    """The user name django-axes records and counts for a login attempt (AXES_USERNAME_CALLABLE):
    axes' own choice (the credentials, else the posted form), cut to its column. A longer name, which
    no account has but scanners send, made the failed login an HTML 500 (jazzband/django-axes#1381)."""
    source = credentials if credentials else getattr(request, "data", request.POST)
    username = source.get(settings.AXES_USERNAME_FORM_FIELD) if source else None
    return username[:AXES_USERNAME_LENGTH] if isinstance(username, str) else username
