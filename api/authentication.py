"""API token authentication that reads the user's role groups in the same query as the token.

Every rater request checks the caller's role; DRF's own TokenAuthentication loads the token and
user in one query and the groups in another, on the hot path of the queue."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, TokenAuthentication, get_authorization_header

from annotation import roles
from annotation.services.crowd.worker_tokens import WorkerTokenRefused, worker_from_token


class TokenWithRolesAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        user = roles.user_by_token(key)
        if user is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return user, self.get_model()(key=key, user=user)


class StudyWorkerAuthentication(BaseAuthentication):
    """`Authorization: StudyWorker <token>`: an MTurk worker inside MTurk's iframe, where the
    browser sends no cookie (annotation/services/crowd/worker_tokens). Authenticates as the
    worker's own account, and only on their study's endpoints and the queue endpoints the judging
    page calls for that study's pool: anywhere else the token is refused outright (403), so it
    can never reach an admin's or researcher's endpoint even if the account gained a role.
    No CSRF check: the browser never sends this header on its own, unlike a cookie."""

    keyword = "StudyWorker"
    # The judging page's calls; leases, labels and the rater's own answers are checked against
    # the rater by the queue itself, and a crowd account belongs to one study's pool.
    QUEUE_VIEWS = frozenset({"lease-heartbeat", "lease-release", "label-submit", "my-recent-answers",
                             "my-answer-change"})
    POOL_VIEWS = frozenset({"pool-next", "pool-my-progress"})
    STUDY_VIEWS = frozenset({"study-progress", "study-consent", "study-guidelines-read", "study-leave", "study-return"})

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(_("Invalid StudyWorker header: give one token after the keyword."))
        try:
            token = header[1].decode("ascii")
        except UnicodeError:
            raise exceptions.AuthenticationFailed(_("Invalid StudyWorker header: the token is not ASCII.")) from None
        try:
            worker = worker_from_token(token)
        except WorkerTokenRefused as refused:
            raise exceptions.AuthenticationFailed(str(refused)) from None
        if not self._allowed(request, worker):
            raise exceptions.PermissionDenied(_("A study worker token is valid only on its own study's work."))
        return worker.user, worker

    def _allowed(self, request, worker) -> bool:
        match = getattr(request._request, "resolver_match", None)
        if match is None or match.namespace != "api":
            return False
        name, kwargs = match.url_name, match.kwargs
        if name in self.STUDY_VIEWS:
            return kwargs.get("token") == worker.study.token
        if name in self.POOL_VIEWS:
            return kwargs.get("pool_id") == worker.study.pool_id
        return name in self.QUEUE_VIEWS

    def authenticate_header(self, request):
        return self.keyword


class StudyWorkerScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.StudyWorkerAuthentication"
    name = "studyWorker"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`StudyWorker <token>`: an MTurk worker's token from the study link, valid on their "
                               "study's endpoints and their pool's queue only."}
