"""The crowd worker's pages (study link, consent, guidelines, judging with a quota, completion)
and the admin's quality-control page.

The study link is a GET, as Prolific and MTurk send it: it checks the parameters, creates or
resumes the worker and signs them in, then redirects to the page of their stage, so a reload
never repeats the arrival. Every page of a study is for its own workers only (404 otherwise)."""
from __future__ import annotations

from functools import wraps
from urllib.parse import urlencode

from csp.decorators import csp_update
from django.conf import settings
from django.http import Http404
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST

from annotation.models import CrowdStudy, CrowdWorker, Pool
from annotation.selectors.crowd_quality import pool_rater_quality
from annotation.services.crowd.arrivals import (MTURK_SUBMIT_HOSTS, ArrivalRefused, worker_consent, worker_guidelines_read,
                                                worker_release_held)
from annotation.services.crowd.quota import worker_progress, worker_seen
from annotation.services.crowd.worker_tokens import QUERY_PARAMETER, WorkerTokenRefused, worker_from_token, worker_token_issue
from api.views.crowd import arrive_in_browser, completion_json
from frontend.views.access import page_for

REFUSAL_STATUS = {"invalid": 400, "other_worker": 409, "done": 409, "closed": 410}
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


@_study_page
@require_GET
def study_entry(request, token: str):
    study = CrowdStudy.objects.filter(token=token[:64]).first()
    if study is None:
        raise Http404("no such study")
    try:
        worker, mark = arrive_in_browser(request, study, request.GET)
    except ArrivalRefused as refused:
        return render(request, "frontend/crowd/refused.html", {"study": study, "message": str(refused)},
                      status=REFUSAL_STATUS.get(refused.code, 400))
    if worker is None:
        return render(request, "frontend/crowd/preview.html", {"study": study})
    url = reverse("frontend:study-stage", kwargs={"token": study.token})
    if study.platform == CrowdStudy.Platform.MTURK:
        # In MTurk's iframe the session cookie just set is never sent back: the pages carry a
        # signed worker token instead (outside an iframe both work).
        url += "?" + urlencode({QUERY_PARAMETER: worker_token_issue(worker=worker)})
    return mark(redirect(url))


def _context(request, worker: CrowdWorker, **more) -> dict:
    token = worker.study.token
    return {"study": worker.study, "worker": worker, "worker_token": _worker_token(request),
            **{f"{name.replace('-', '_')}_url": _study_url(f"study-{name}", request, token)
               for name in ("stage", "consent", "start", "work", "leave")}, **more}


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
    return render(request, "frontend/crowd/left.html", {"study": worker.study})


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
    return render(request, "frontend/crowd/quality.html", {"pool": pool, "table": table, "study": study,
                                                           "rule": table["rule"]})
