"""A worker's browser: how an arrival from a browser signs the worker in and marks the browser (the
session and the study's signed cookie, which later prove the work started here:
`known_worker_ids`), and how a worker who is done is sent back to their platform. Used by the
worker's pages (frontend/views/crowd.py) and the API's arrival (api/views/crowd.py) alike; the
rules of who may arrive are arrivals.py's."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import login
from django.middleware.csrf import CsrfViewMiddleware

from annotation.models import CrowdStudy, CrowdWorker
from annotation.services.crowd.arrivals import Arrival, study_arrive

# v2: cookies signed before resume codes existed were handed to whoever brought a worker id, so
# they prove nothing of the browser.
COOKIE_SALT = "rejudge-crowd-study-v2"
COOKIE_MAX_AGE = 90 * 24 * 3600
SESSION_KEY = "crowd_workers"  # {study token: platform worker id}
LOGIN_BACKEND = "annotation.auth_backends.RoleAwareModelBackend"
PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc="
# What each refusal of an arrival answers, on the API and the pages alike.
REFUSAL_STATUS = {"invalid": 400, "unknown": 400, "other_worker": 409, "done": 409, "other_assignment": 409, "full": 409,
                  "resume_needed": 409, "resume_code_wrong": 403, "closed": 410, "signed_in": 409}


def study_cookie_name(study: CrowdStudy) -> str:
    return f"rj_study_{study.pk}"


def known_worker_ids(request, study: CrowdStudy) -> set[str]:
    """The platform ids this browser already came to the study with (cookie and session): the
    server gave it both, so they prove the browser is where that worker's work started."""
    known = set()
    cookie = request.get_signed_cookie(study_cookie_name(study), default=None, salt=COOKIE_SALT)
    if cookie:
        known.add(cookie)
    session_id = request.session.get(SESSION_KEY, {}).get(study.token)
    if session_id:
        known.add(session_id)
    return known


def signed_in_elsewhere(request, study: CrowdStudy) -> bool:
    """Someone is signed in as an account that is not a worker of this study (an admin, a rater, a
    worker of another study): an arrival must not sign them out without asking."""
    user = request.user
    if not user.is_authenticated:
        return False
    return not CrowdWorker.objects.filter(user_id=user.pk, study=study).exists()


def csrf_passes(request) -> bool:
    """Django's own CSRF check (token and cookie, origin), as a form or a session API call gets it."""
    return CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {}) is None


def arrive_in_browser(request, study: CrowdStudy, arrival: Arrival, *, create: bool, resume_code: str = "",
                      entry_nonce: str = "", keep_session: bool = True) -> tuple[CrowdWorker, callable]:
    """Arrival from a browser: creates (create: a POST) or takes up the worker (study_arrive says
    when it may) and, with `keep_session`, signs them in and marks the browser with the study's
    cookie. Without it (an MTurk frame, where no cookie is kept or sent) nothing of the session is
    touched: the worker goes on with a worker token. Returns (worker, a function that marks the
    response). Raises ArrivalRefused; never called for someone signed in elsewhere."""
    worker = study_arrive(study=study, arrival=arrival, known_worker_ids=known_worker_ids(request, study),
                          signed_in_user=request.user, create=create, resume_code=resume_code, entry_nonce=entry_nonce)
    if not keep_session:
        return worker, lambda response: response
    if request.user.pk != worker.user_id:
        login(request, worker.user, backend=LOGIN_BACKEND)
    request.session[SESSION_KEY] = {**request.session.get(SESSION_KEY, {}), study.token: worker.worker_id}

    def mark(response):
        response.set_signed_cookie(study_cookie_name(study), worker.worker_id, salt=COOKIE_SALT, max_age=COOKIE_MAX_AGE,
                                   httponly=True, samesite="Lax", secure=settings.SESSION_COOKIE_SECURE)
        return response

    return worker, mark


def completion_json(worker: CrowdWorker) -> dict | None:
    """How the worker is sent back, once done (never before: the code is what they are paid for)."""
    if worker.stage != CrowdWorker.Stage.DONE:
        return None
    study = worker.study
    if study.platform == CrowdStudy.Platform.PROLIFIC:
        return {"platform": "prolific", "completion_code": study.completion_code,
                "return_url": PROLIFIC_COMPLETE_URL + study.completion_code}
    return {"platform": "mturk", "submit_url": f"{worker.submit_to}/mturk/externalSubmit",
            "fields": {"assignmentId": worker.completed_session_id or worker.session_id, "quotaMet": "true"}}
