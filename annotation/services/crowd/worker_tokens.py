"""Signed worker tokens: how an MTurk worker works inside MTurk's iframe without cookies.

MTurk shows the study in an iframe on worker.mturk.com. Our session and CSRF cookies are
SameSite=Lax, so a browser never sends them (nor stores them) in that cross-site frame: the
worker would have no session. The arrival hands them instead a token, signed with the site's key
(django.core.signing, its own salt), naming the worker and the study and carrying its expiry. The
pages carry it in their links and forms and give it to their scripts, which send it as
`Authorization: StudyWorker <token>`; api.authentication.StudyWorkerAuthentication accepts it on
that study's endpoints and the queue endpoints of its pool only.

A token is a credential: it is never logged, and a refusal never repeats it."""
from __future__ import annotations

import time

from django.core import signing

from annotation.models import CrowdStudy, CrowdWorker

SALT = "rejudge.crowd.worker-token"
# A study without a time quota still ends: a worker's token lasts a working day's shift.
DEFAULT_LIFETIME_SECONDS = 4 * 3600
# With a time quota, the quota plus the time to read consent, guidelines and do the training.
SLACK_SECONDS = 3600
HEADER_KEYWORD = "StudyWorker"
QUERY_PARAMETER = "wt"


class WorkerTokenRefused(Exception):
    """The token cannot be used; the message says why and is safe to show."""


def worker_token_lifetime(study: CrowdStudy) -> int:
    if study.quota_minutes:
        return study.quota_minutes * 60 + SLACK_SECONDS
    return DEFAULT_LIFETIME_SECONDS


def worker_token_issue(*, worker: CrowdWorker, now: float | None = None) -> str:
    now = time.time() if now is None else now
    study = worker.study
    return signing.dumps({"w": worker.pk, "s": study.token, "e": int(now) + worker_token_lifetime(study)},
                         salt=SALT, compress=False)


def worker_from_token(token: str, *, now: float | None = None) -> CrowdWorker:
    """The worker the token names, with their study and user; WorkerTokenRefused when the token is
    tampered with, expired, or names a worker who no longer exists or is inactive."""
    now = time.time() if now is None else now
    try:
        payload = signing.loads(token, salt=SALT)
    except signing.BadSignature:
        raise WorkerTokenRefused("The study worker token is not valid. Open the study again from MTurk.") from None
    if not isinstance(payload, dict) or not {"w", "s", "e"} <= payload.keys():
        raise WorkerTokenRefused("The study worker token is not valid. Open the study again from MTurk.")
    if now > payload["e"]:
        raise WorkerTokenRefused("The study worker token has expired. Open the study again from MTurk.")
    worker = (CrowdWorker.objects.select_related("study__pool", "user")
              .filter(pk=payload["w"], study__token=payload["s"]).first())
    if worker is None or not worker.user.is_active:
        raise WorkerTokenRefused("The study worker token names no worker of this study.")
    return worker
