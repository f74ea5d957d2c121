"""Making a release, as a background operation (services/operations/): at FIRE scale it takes
minutes. Declared once here: its parameters, the check that refuses a bad name, missing or mixed
sources and unresolved pairs before a job exists (a 400, not a failed job), and the run."""
from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

from django.urls import reverse

from annotation.analysis.params import REQUIRED, Param
from annotation.models import Job, Pool
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.jobs import task_names
from annotation.services.operations.operation import Operation
from annotation.services.operations.start import operation_job
from annotation.services.releases.create import (ReleaseError, release_create, release_name_clean,
                                                 release_name_lock, release_sources_check, release_submission_pools,
                                                 release_unresolved_check)

PARAMS = {
    "name": Param(str, REQUIRED, "the release's name, a slug (lower-case letters and digits joined by hyphens); "
                  "a name already released gets its next version", max_length=80),
    "pool_ids": Param(list, [], "ids of the pools whose labels it publishes", 1, None, unique_sorted=False,
                      min_items=0, max_items=50),
    "judgment_set_ids": Param(list, [], "ids of the judgment sets it publishes", 1, None, unique_sorted=False,
                              min_items=0, max_items=50),
    "title": Param(str, "", "a title for people", max_length=300),
    "licence": Param(str, "", "the licence of the published labels; prefer an SPDX id (CC-BY-4.0): CITATION.cff "
                     "needs one", max_length=200),
    "authors": Param(list, [], "the authors, in order", items=str, unique_sorted=False, min_items=0, max_items=100,
                     max_length=200),
    "allow_unresolved": Param(bool, False, "make the release although a pool has unresolved pairs (they are scored "
                              "as not relevant, and the release says so); without it such a pool is refused with "
                              "its counts"),
}


def _sources(params: dict) -> tuple[list[Pool], list[JudgmentSet], list[str]]:
    pools = {pool.pk: pool for pool in Pool.objects.filter(pk__in=params["pool_ids"]).select_related("dataset")}
    sets = {s.pk: s for s in JudgmentSet.objects.filter(pk__in=params["judgment_set_ids"]).select_related("dataset")}
    missing = [f"pool {i}" for i in params["pool_ids"] if i not in pools] + [
        f"judgment set {i}" for i in params["judgment_set_ids"] if i not in sets]
    return ([pools[i] for i in params["pool_ids"] if i in pools],
            [sets[i] for i in params["judgment_set_ids"] if i in sets], missing)


def _check(*, target, params: dict) -> dict:
    pools, sets, missing = _sources(params)
    if missing:
        raise ReleaseError(f"no {', '.join(missing)}")
    name = release_name_clean(params["name"])
    # An earlier version's accepted submissions' pools are published too (release_create), so they are checked too.
    pools += [s.pool for s in release_submission_pools(name=name, pools=pools)]
    release_sources_check(pools=pools, judgment_sets=sets)
    release_unresolved_check(pools=pools, allow_unresolved=params["allow_unresolved"])
    return params | {"name": name, "authors": [a for a in params["authors"] if a and a.strip()]}


def _run(job: Job, progress) -> dict:
    p = job.params
    pools, sets, missing = _sources(p)
    if missing:
        raise ValueError(f"{', '.join(missing)} no longer exist(s)")
    release = release_create(pools=pools, judgment_sets=sets, name=p["name"], title=p["title"], licence=p["licence"],
                             authors=p["authors"], allow_unresolved=p.get("allow_unresolved", False),
                             created_by=job.created_by, progress=progress)
    return {"release_id": release.pk, "slug": release.slug, "bytes": release.bytes, "sha256": release.sha256,
            "url": reverse("api:release-detail", args=[release.pk]),
            "archive_url": reverse("api:release-archive", args=[release.pk])}


@contextmanager
def _name_locked(params: dict):
    # The name's lock is taken before the job's snapshot starts, so the snapshot holds the previous
    # version if one committed while this waited; one snapshot keeps the archive's files in agreement.
    with release_name_lock(params.get("name") or ""):
        yield


CREATE_RELEASE = Operation(
    name="create_release", title="Make a release", params=PARAMS, check=_check, run=_run, error=ReleaseError,
    snapshot=True, around=_name_locked, legacy_task=task_names.CREATE_RELEASE)

OPERATIONS = (CREATE_RELEASE,)


def release_start(*, pools: Sequence[Pool], judgment_sets: Sequence[JudgmentSet] = (), name: str, title: str = "",
                  licence: str = "", authors: Sequence[str] = (), allow_unresolved: bool = False, created_by) -> Job:
    return operation_job(CREATE_RELEASE, params={
        "name": name, "pool_ids": [p.pk for p in pools], "judgment_set_ids": [s.pk for s in judgment_sets],
        "title": title, "licence": licence, "authors": list(authors), "allow_unresolved": allow_unresolved},
        created_by=created_by)
