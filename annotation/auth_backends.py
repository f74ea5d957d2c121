"""The login backend: Django's, except that loading the session's user also reads their role
groups, so a browser request checks the role without a query of its own."""
from __future__ import annotations

from django.contrib.auth.backends import ModelBackend

from annotation import roles


class RoleAwareModelBackend(ModelBackend):
    def get_user(self, user_id):
        user = roles.user_by_id(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
