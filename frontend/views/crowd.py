"""The crowd worker's pages (study link, consent, guidelines, judging with a quota, completion)
and the admin's quality-control page.

The study link is a GET, as Prolific and MTurk send it: it checks the parameters, creates or
resumes the worker and signs them in, then redirects to the page of their stage, so a reload
never repeats the arrival. Every page of a study is for its own workers only (404 otherwise)."""
from __future__ import annotations

from csp.decorators import csp_update
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST

from annotation.models import CrowdStudy, CrowdWorker, Pool
from annotation.selectors.crowd_quality import pool_rater_quality
from annotation.services.crowd.arrivals import (MTURK_SUBMIT_HOSTS, ArrivalRefused, worker_consent, worker_guidelines_read,
                                                worker_release_held)
from annotation.services.crowd.quota import worker_progress, worker_seen
from api.views.crowd import arrive_in_browser, completion_json
from frontend.views.access import page_for

REFUSAL_STATUS = {"invalid": 400, "other_worker": 409, "done": 409, "closed": 410}


def _worker(request, token: str) -> CrowdWorker:
    if not request.user.is_authenticated:
        raise Http404("no such study")
    worker = CrowdWorker.objects.select_related("study__pool", "user").filter(study__token=token, user_id=request.user.pk).first()
    if worker is None:
        raise Http404("no such study")
    return worker


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
    return mark(redirect("frontend:study-stage", token=study.token))


@require_GET
@ensure_csrf_cookie
def study_stage(request, token: str):
    worker = _worker(request, token)
    worker_seen(worker=worker)
    progress = worker_progress(worker=worker)
    worker.refresh_from_db()
    study = worker.study
    context = {"study": study, "worker": worker, "progress": progress}
    if worker.stage in (CrowdWorker.Stage.CONSENT, CrowdWorker.Stage.DECLINED):
        context["declined"] = worker.stage == CrowdWorker.Stage.DECLINED
        return render(request, "frontend/crowd/consent.html", context)
    if worker.stage == CrowdWorker.Stage.GUIDELINES:
        return render(request, "frontend/crowd/guidelines.html", context)
    if worker.stage == CrowdWorker.Stage.WORK:
        return redirect("frontend:study-work", token=study.token)
    return study_done(request, worker)


@csp_update({"form-action": list(MTURK_SUBMIT_HOSTS)})
def _done_page(request, worker):
    return render(request, "frontend/crowd/done.html", {"study": worker.study, "worker": worker,
                                                        "completion": completion_json(worker)})


def study_done(request, worker: CrowdWorker):
    return _done_page(request, worker)


@require_POST
def study_consent(request, token: str):
    worker = _worker(request, token)
    worker_consent(worker=worker, agree=request.POST.get("agree") == "yes")
    return redirect("frontend:study-stage", token=token)


@require_POST
def study_start(request, token: str):
    worker = _worker(request, token)
    worker_guidelines_read(worker=worker)
    return redirect("frontend:study-stage", token=token)


@require_POST
def study_leave(request, token: str):
    worker = _worker(request, token)
    worker_release_held(worker=worker)
    return render(request, "frontend/crowd/left.html", {"study": worker.study})


@require_GET
@ensure_csrf_cookie
def study_work(request, token: str):
    """The pool's judging page, with the study's quota counter; its script sends the worker on
    once the quota is met."""
    worker = _worker(request, token)
    if worker.stage != CrowdWorker.Stage.WORK:
        return redirect("frontend:study-stage", token=token)
    return render(request, "frontend/crowd/work.html", {"study": worker.study, "pool": worker.study.pool,
                                                        "worker": worker})


@page_for("admin")
def pool_quality(request, pool_id: int):
    pool = get_object_or_404(Pool.objects.select_related("dataset"), pk=pool_id)
    table = pool_rater_quality(pool=pool)
    study = CrowdStudy.objects.filter(pool=pool).first()
    return render(request, "frontend/crowd/quality.html", {"pool": pool, "table": table, "study": study,
                                                           "rule": table["rule"]})
