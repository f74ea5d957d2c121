"""The crowd worker's pages (study link, consent, guidelines, judging with a quota, completion)
and the admin's quality-control page.

The study link is a GET, as Prolific and MTurk send it, and changes nothing: it checks the
parameters and shows the entry page (the consent, whose "I agree" is a POST that makes the
account), the resume-code form (the worker id has started elsewhere), the choice of someone
already signed in (stay, or sign out and take part), or sends the browser where its own work
started on to the page of its stage. Every page of a study is for its own workers only (404
otherwise). Study links and their forms are throttled per address (CrowdArrivalThrottle)."""
from __future__ import annotations

import math
from functools import wraps
from urllib.parse import urlencode

from csp.decorators import csp_update
from django.conf import settings
from django.contrib.auth import logout
from django.http import Http404
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST

from annotation.models import CrowdStudy, CrowdWorker, Pool
from annotation.page_access import page_for
from annotation.selectors.crowd_quality import pool_rater_quality
from annotation.services.crowd.arrivals import (MTURK_PARAMS, MTURK_SUBMIT_HOSTS, PROLIFIC_PARAMS, ArrivalRefused,
                                                arrival_check, arrival_from_query, worker_consent,
                                                worker_guidelines_read, worker_release_held, worker_return)
from annotation.services.crowd.browser import (REFUSAL_STATUS, arrive_in_browser, completion_json, csrf_passes,
                                               known_worker_ids, signed_in_elsewhere)
from annotation.services.crowd.gate import crowd_workers_at_quota
from annotation.services.crowd.identity import TicketRefused, entry_ticket_issue, entry_ticket_load, resume_code
from annotation.services.crowd.quota import worker_progress, worker_seen
from annotation.services.crowd.worker_tokens import QUERY_PARAMETER, WorkerTokenRefused, worker_from_token, worker_token_issue
from config.throttling import CrowdArrivalThrottle

# MTurk shows an ExternalQuestion in an iframe on these origins (the worker site, the sandbox's).
MTURK_FRAME_ANCESTORS = ("https://worker.mturk.com", "https://workersandbox.mturk.com")


class _TokenRefused(Exception):
    pass


def _framed_by_mturk(response, study: CrowdStudy):
    """An MTurk study's pages may be shown in MTurk's iframe, and only there; every other page
    (Prolific's included: Prolific opens a new tab) keeps frame-ancestors 'none' and DENY."""
    if study.platform == CrowdStudy.Platform.MTURK:
        # REJUDGE_MTURK_FRAME_ANCESTORS: a test's stand-in parent page (Chromium refuses a public
        # origin framing a local server, so the browser test frames from another local site).
        ancestors = getattr(settings, "REJUDGE_MTURK_FRAME_ANCESTORS", MTURK_FRAME_ANCESTORS)
        response._csp_replace = {**(getattr(response, "_csp_replace", None) or {}), "frame-ancestors": list(ancestors)}
        response.xframe_options_exempt = True
    return response


def _worker_token(request) -> str:
    return request.GET.get(QUERY_PARAMETER) or ""


def _worker(request, token: str) -> CrowdWorker:
    """The study's worker: by the signed worker token of the page's URL (an MTurk worker in
    MTurk's iframe, where no cookie is sent), else by the session. 404 for anyone else."""
    worker_token = _worker_token(request)
    if worker_token:
        try:
            worker = worker_from_token(worker_token)
        except WorkerTokenRefused as refused:
            raise _TokenRefused(str(refused)) from None
        if worker.study.token != token:
            raise Http404("no such study")
        # The page is rendered for the worker the token names (the judging page's data-user,
        # whose outbox and tab lock are keyed by it); nothing is stored in a session.
        request.user = worker.user
        return worker
    if not request.user.is_authenticated:
        raise Http404("no such study")
    worker = CrowdWorker.objects.select_related("study__pool", "user").filter(study__token=token, user_id=request.user.pk).first()
    if worker is None:
        raise Http404("no such study")
    return worker


def _study_url(name: str, request, token: str) -> str:
    """The study page's URL, carrying the worker token when this request came with one."""
    url = reverse(f"frontend:{name}", kwargs={"token": token})
    worker_token = _worker_token(request)
    return f"{url}?{urlencode({QUERY_PARAMETER: worker_token})}" if worker_token else url


def _study_page(view):
    """A worker's study page: framed by MTurk for an MTurk study; a refused worker token gets a
    page saying why (403). A POST carrying the worker token needs no CSRF token (the browser never
    adds the token by itself, as it does a cookie); a POST by session is checked as usual."""

    @wraps(view)
    def page(request, token: str):
        study = CrowdStudy.objects.filter(token=token[:64]).first()
        if request.method == "POST" and not _worker_token(request):
            refused = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
            if refused is not None:
                return refused
        try:
            response = view(request, token)
        except _TokenRefused as refused:
            response = render(request, "frontend/crowd/refused.html", {"study": study, "message": str(refused)}, status=403)
        return _framed_by_mturk(response, study) if study is not None else response

    return csrf_exempt(page)


def _entry_page(view):
    """The study link and its forms: framed by MTurk for an MTurk study, throttled per address.
    The forms check CSRF themselves (_entry_mode): an MTurk frame keeps no cookie."""

    @wraps(view)
    def page(request, token: str):
        study = CrowdStudy.objects.filter(token=token[:64]).first()
        if study is None:
            raise Http404("no such study")
        throttle = CrowdArrivalThrottle()
        if not throttle.allow_request(request, None):
            wait = throttle.wait()
            minutes = max(1, math.ceil((wait or 60) / 60))
            response = _refused(request, study, f"Too many arrivals from your address. Try again in {minutes} minutes.", 429)
            response["Retry-After"] = str(math.ceil(wait or 60))
        else:
            response = view(request, study)
        return _framed_by_mturk(response, study)

    return csrf_exempt(page)


def _refused(request, study: CrowdStudy, message: str, status: int):
    return render(request, "frontend/crowd/refused.html", {"study": study, "message": message}, status=status)


def _refusal_page(request, study: CrowdStudy, refused: ArrivalRefused):
    if refused.code == "full":
        return render(request, "frontend/crowd/full.html", {"study": study, "message": str(refused)},
                      status=REFUSAL_STATUS["full"])
    return _refused(request, study, str(refused), REFUSAL_STATUS.get(refused.code, 400))


def _entry_context(study: CrowdStudy, query, **more) -> dict:
    arrival_params = PROLIFIC_PARAMS if study.platform == CrowdStudy.Platform.PROLIFIC else MTURK_PARAMS
    kept = {name: query.get(name) for name in arrival_params if isinstance(query.get(name), str)}
    return {"study": study, "ticket": entry_ticket_issue(study=study, query=kept),
            "enter_url": reverse("frontend:study-enter", kwargs={"token": study.token}),
            "switch_url": reverse("frontend:study-switch", kwargs={"token": study.token}), **more}


def _to_stage(study: CrowdStudy, worker: CrowdWorker, mark):
    url = reverse("frontend:study-stage", kwargs={"token": study.token})
    if study.platform == CrowdStudy.Platform.MTURK:
        # In MTurk's iframe the session cookie is never sent back: the pages carry a signed worker
        # token instead (outside an iframe both work).
        url += "?" + urlencode({QUERY_PARAMETER: worker_token_issue(worker=worker)})
    return mark(redirect(url))


@_entry_page
@require_GET
@ensure_csrf_cookie
def study_entry(request, study: CrowdStudy):
    try:
        arrival = arrival_from_query(study=study, query=request.GET)
        if arrival.preview:
            return render(request, "frontend/crowd/preview.html", {"study": study})
        if signed_in_elsewhere(request, study):
            return render(request, "frontend/crowd/choice.html", _entry_context(study, request.GET))
        worker = arrival_check(study=study, arrival=arrival, known_worker_ids=known_worker_ids(request, study),
                               signed_in_user=request.user)
        if worker is None:
            return render(request, "frontend/crowd/entry.html", _entry_context(study, request.GET))
        # The browser the work started in: straight on, nothing created.
        worker, mark = arrive_in_browser(request, study, arrival, create=False)
    except ArrivalRefused as refused:
        if refused.code == "resume_needed":
            return render(request, "frontend/crowd/resume.html", _entry_context(study, request.GET, message=str(refused)))
        return _refusal_page(request, study, refused)
    return _to_stage(study, worker, mark)


def _entry_mode(request, study: CrowdStudy):
    """'session' when Django's CSRF check passes; 'frame' for an MTurk study's form without the CSRF
    cookie (MTurk's iframe keeps none): it then signs nobody in and touches no session, so a forged
    post can neither sign anyone out nor in, and the worker goes on by the worker token. Else the
    CSRF failure response."""
    if csrf_passes(request):
        return "session"
    if study.platform == CrowdStudy.Platform.MTURK and settings.CSRF_COOKIE_NAME not in request.COOKIES:
        return "frame"
    return CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})


@_entry_page
@require_POST
def study_enter(request, study: CrowdStudy):
    """The entry page's form: "I agree" makes the account (with the consent given), "I do not
    agree" makes nothing; the resume form takes up an existing worker with their code."""
    mode = _entry_mode(request, study)
    if not isinstance(mode, str):
        return mode
    try:
        ticket = entry_ticket_load(study=study, ticket=request.POST.get("ticket", ""))
    except TicketRefused as refused:
        return _refused(request, study, str(refused), 400)
    if mode == "session" and signed_in_elsewhere(request, study):
        return render(request, "frontend/crowd/choice.html", _entry_context(study, ticket.query))
    action = request.POST.get("action")
    try:
        arrival = arrival_from_query(study=study, query=ticket.query)
        if arrival.preview:
            return render(request, "frontend/crowd/preview.html", {"study": study})
        if action == "decline":
            return render(request, "frontend/crowd/entry.html", _entry_context(study, ticket.query, declined=True))
        if action not in ("agree", "resume"):
            return _refused(request, study, "The form was not sent by the study's page.", 400)
        worker, mark = arrive_in_browser(request, study, arrival, create=action == "agree",
                                         resume_code=request.POST.get("resume_code", "") if action == "resume" else "",
                                         entry_nonce=ticket.nonce, keep_session=mode == "session")
    except ArrivalRefused as refused:
        if refused.code in ("resume_needed", "resume_code_wrong"):
            context = _entry_context(study, ticket.query, message=str(refused), wrong=refused.code == "resume_code_wrong")
            return render(request, "frontend/crowd/resume.html", context, status=REFUSAL_STATUS[refused.code])
        return _refusal_page(request, study, refused)
    if action == "agree":
        worker_consent(worker=worker, agree=True)
    return _to_stage(study, worker, mark)


@_entry_page
@require_POST
def study_switch(request, study: CrowdStudy):
    """Someone signed in chose to sign out and take part: signed out, back to the study link."""
    refused = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
    if refused is not None:
        return refused
    try:
        ticket = entry_ticket_load(study=study, ticket=request.POST.get("ticket", ""))
    except TicketRefused as bad:
        return _refused(request, study, str(bad), 400)
    logout(request)
    url = reverse("frontend:study-entry", kwargs={"token": study.token})
    return redirect(f"{url}?{urlencode(ticket.query)}")


def _context(request, worker: CrowdWorker, **more) -> dict:
    token = worker.study.token
    return {"study": worker.study, "worker": worker, "worker_token": _worker_token(request),
            "resume_code": resume_code(worker),
            **{f"{name.replace('-', '_')}_url": _study_url(f"study-{name}", request, token)
               for name in ("stage", "consent", "start", "work", "leave", "return")}, **more}


@_study_page
@require_GET
@ensure_csrf_cookie
def study_stage(request, token: str):
    worker = _worker(request, token)
    worker_seen(worker=worker)
    progress = worker_progress(worker=worker)
    worker.refresh_from_db()
    context = _context(request, worker, progress=progress)
    if worker.stage in (CrowdWorker.Stage.CONSENT, CrowdWorker.Stage.DECLINED):
        context["declined"] = worker.stage == CrowdWorker.Stage.DECLINED
        return render(request, "frontend/crowd/consent.html", context)
    if worker.stage == CrowdWorker.Stage.GUIDELINES:
        return render(request, "frontend/crowd/guidelines.html", context)
    if worker.stage == CrowdWorker.Stage.WORK:
        return redirect(_study_url("study-work", request, token))
    if worker.stage == CrowdWorker.Stage.RETURNED:
        return render(request, "frontend/crowd/returned.html", context)
    return study_done(request, worker)


@csp_update({"form-action": list(MTURK_SUBMIT_HOSTS)})
def _done_page(request, worker):
    return render(request, "frontend/crowd/done.html", _context(request, worker, completion=completion_json(worker)))


def study_done(request, worker: CrowdWorker):
    return _done_page(request, worker)


@_study_page
@require_POST
def study_consent(request, token: str):
    worker = _worker(request, token)
    worker_consent(worker=worker, agree=request.POST.get("agree") == "yes")
    return redirect(_study_url("study-stage", request, token))


@_study_page
@require_POST
def study_start(request, token: str):
    worker = _worker(request, token)
    worker_guidelines_read(worker=worker)
    return redirect(_study_url("study-stage", request, token))


@_study_page
@require_POST
def study_leave(request, token: str):
    worker = _worker(request, token)
    worker_release_held(worker=worker)
    return render(request, "frontend/crowd/left.html", _context(request, worker))


@_study_page
@require_POST
def study_return(request, token: str):
    """The worker returns the task: if they judged nothing their place goes to someone else."""
    worker = _worker(request, token)
    freed = worker_return(worker=worker)
    worker.refresh_from_db()
    return render(request, "frontend/crowd/returned.html", _context(request, worker, freed=freed))


@_study_page
@require_GET
@ensure_csrf_cookie
def study_work(request, token: str):
    """The pool's judging page, with the study's quota counter; its script sends the worker on
    once the quota is met."""
    worker = _worker(request, token)
    if worker.stage != CrowdWorker.Stage.WORK:
        return redirect(_study_url("study-stage", request, token))
    return render(request, "frontend/crowd/work.html", _context(request, worker, pool=worker.study.pool))


@page_for("admin")
def pool_quality(request, pool_id: int):
    pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
    table = pool_rater_quality(pool=pool)
    study = CrowdStudy.objects.filter(pool=pool).first()
    at_quota = crowd_workers_at_quota(pool_id=pool.pk, user_ids=[r["rater_id"] for r in table["raters"]
                                                                  if r["crowd_worker_id"]])
    return render(request, "frontend/crowd/quality.html", {"pool": pool, "table": table, "study": study,
                                                           "rule": table["rule"], "at_quota": at_quota})
