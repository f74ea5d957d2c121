"""Releases started from the API or the pages, as background jobs: making one at FIRE scale takes
minutes. The request is checked first (a bad name or mixed datasets get a 400, not a failed job)."""
from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from annotation.models import Job, Pool
from annotation.models.reports import JudgmentSet
from annotation.services.jobs import task_names
from annotation.services.jobs.dispatch import job_enqueue
from annotation.services.jobs.lifecycle import job_create
from annotation.services.releases.create import release_name_clean, release_sources_check, release_unresolved_check


@transaction.atomic
def release_start(*, pools: Sequence[Pool], judgment_sets: Sequence[JudgmentSet] = (), name: str, title: str = "",
                  licence: str = "", authors: Sequence[str] = (), allow_unresolved: bool = False, created_by) -> Job:
    name = release_name_clean(name)
    release_sources_check(pools=list(pools), judgment_sets=list(judgment_sets))
    release_unresolved_check(pools=list(pools), allow_unresolved=allow_unresolved)
    params = {"pool_ids": [p.pk for p in pools], "judgment_set_ids": [s.pk for s in judgment_sets], "name": name,
              "title": title, "licence": licence, "authors": [a for a in authors if a and a.strip()],
              "allow_unresolved": bool(allow_unresolved)}
    job = job_create(kind="create_release", params=params, created_by=created_by)
    return job_enqueue(job=job, task=task_names.CREATE_RELEASE)
