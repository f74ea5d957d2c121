"""What proves that a browser is a study worker's own: the resume code and the signed entry form.

A platform worker id (PROLIFIC_PID, MTurk workerId) is in every study link and is no secret: it
names a worker, it does not authenticate one. A browser may take up a worker's account only when
it is the browser the work started in (the session, the study's signed cookie) or when the worker
gives their resume code, shown to them on the study's pages to note down.

The resume code is an HMAC of the worker's row id and a per-worker salt under SECRET_KEY: the
database alone does not give codes away, and the code is the same on every page that shows it.
Ten characters of base32 (50 bits), typed in any case, with or without the dash; guessing is
bounded by the per-address arrival throttle.

The entry form (the study link's page) carries a signed ticket with the link's parameters and a
random nonce: the form's POST takes the parameters from the ticket, so they are the ones checked
when the page was shown, and the nonce is stored on the account the form created, so the same
form posted again (a double click, the request repeated) is the same browser."""
from __future__ import annotations

import base64
import hmac
import re
import secrets
from dataclasses import dataclass

from django.core import signing
from django.utils.crypto import salted_hmac

from annotation.models import CrowdStudy, CrowdWorker

RESUME_SALT = "rejudge.crowd.resume-code"
RESUME_LENGTH = 10
TICKET_SALT = "rejudge.crowd.entry-ticket"
# Long enough to read the consent text and the description at leisure; the link itself never expires.
TICKET_MAX_AGE_SECONDS = 6 * 3600


def resume_code(worker: CrowdWorker) -> str:
    """The worker's resume code, as shown: XXXXX-XXXXX."""
    digest = salted_hmac(RESUME_SALT, f"{worker.pk}:{worker.resume_salt}", algorithm="sha256").digest()
    code = base64.b32encode(digest).decode()[:RESUME_LENGTH]
    return f"{code[:5]}-{code[5:]}"


def resume_code_matches(worker: CrowdWorker, typed: str) -> bool:
    cleaned = re.sub(r"[^A-Za-z0-9]", "", typed or "").upper()[:64]
    expected = resume_code(worker).replace("-", "")
    return hmac.compare_digest(cleaned.encode(), expected.encode())


@dataclass(frozen=True)
class EntryTicket:
    query: dict[str, str]
    nonce: str


class TicketRefused(Exception):
    """The entry form is not one this server showed, or is too old; the message is safe to show."""


def entry_ticket_issue(*, study: CrowdStudy, query: dict[str, str]) -> str:
    return signing.dumps({"s": study.token, "q": query, "n": secrets.token_urlsafe(16)}, salt=TICKET_SALT, compress=True)


def entry_ticket_load(*, study: CrowdStudy, ticket: str) -> EntryTicket:
    try:
        payload = signing.loads(ticket or "", salt=TICKET_SALT, max_age=TICKET_MAX_AGE_SECONDS)
    except signing.SignatureExpired:
        raise TicketRefused("This page was open too long. Open the study link from the platform again.") from None
    except signing.BadSignature:
        raise TicketRefused("This form was not sent by the study's page. Open the study link from the platform again.") from None
    if not isinstance(payload, dict) or payload.get("s") != study.token or not isinstance(payload.get("q"), dict):
        raise TicketRefused("This form belongs to another study. Open the study link from the platform again.")
    return EntryTicket(query={str(k): str(v) for k, v in payload["q"].items()}, nonce=str(payload.get("n", "")))
