"""API token authentication that reads the user's role groups in the same query as the token.

Every rater request checks the caller's role; DRF's own TokenAuthentication loads the token and
user in one query and the groups in another, on the hot path of the queue."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from annotation import roles


class TokenWithRolesAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        user = roles.user_by_token(key)
        if user is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return user, self.get_model()(key=key, user=user)
