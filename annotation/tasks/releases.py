"""Celery job of the releases area: making a release (services/releases/create.py)."""
from __future__ import annotations

from celery import shared_task
from django.urls import reverse

from annotation.models import Job, Pool
from annotation.models.reports import JudgmentSet
from annotation.services.jobs import job_execute, task_names
from annotation.services.releases.create import release_create, release_name_lock


@shared_task(name=task_names.CREATE_RELEASE)
def create_release(job_id: int) -> None:
    def work(job, progress):
        p = job.params
        pools = {pool.pk: pool for pool in Pool.objects.filter(pk__in=p["pool_ids"]).select_related("dataset")}
        sets = {s.pk: s for s in JudgmentSet.objects.filter(pk__in=p["judgment_set_ids"]).select_related("dataset")}
        missing = [f"pool {i}" for i in p["pool_ids"] if i not in pools] + [
            f"judgment set {i}" for i in p["judgment_set_ids"] if i not in sets]
        if missing:
            raise ValueError(f"{', '.join(missing)} no longer exist(s)")
        release = release_create(pools=[pools[i] for i in p["pool_ids"]], judgment_sets=[sets[i] for i in p["judgment_set_ids"]],
                                 name=p["name"], title=p["title"], licence=p["licence"], authors=p["authors"],
                                 allow_unresolved=p.get("allow_unresolved", False), created_by=job.created_by,
                                 progress=progress)
        return {"release_id": release.pk, "slug": release.slug, "bytes": release.bytes, "sha256": release.sha256,
                "url": reverse("api:release-detail", args=[release.pk]),
                "archive_url": reverse("api:release-archive", args=[release.pk])}

    # The name's lock is taken before the job's snapshot starts, so the snapshot holds the previous
    # version if one committed while this waited; one snapshot keeps the archive's files in agreement.
    name = Job.objects.filter(pk=job_id).values_list("params__name", flat=True).first()
    with release_name_lock(name or ""):
        job_execute(job_id=job_id, work=work, snapshot=True)
