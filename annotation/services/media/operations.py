"""The media area's background operations (services/operations/): checking a dataset's media and
preparing copies browsers play. Each is declared once here: its parameters, the check that refuses
a request before a job exists, and the run that calls check.py or prepare.py. A dataset import
starts the check by itself (services/datasets/operations.py)."""
from __future__ import annotations

from annotation.models import Dataset, Job
from annotation.services.media.check import dataset_media_check
from annotation.services.media.prepare import PREPARE_PARAMS, PrepareError, dataset_media_prepare, prepare_check
from annotation.services.operations.operation import Operation
from annotation.services.operations.start import operation_start


class MediaCheckError(ValueError):
    """A media check request refused; `param` names the parameter to blame."""


def _check_run(job: Job, progress) -> dict:
    return dataset_media_check(Dataset.objects.get(pk=job.params["dataset_id"]), progress=progress)


MEDIA_CHECK = Operation(
    name="check_media", title="Check a dataset's media", run=_check_run, target=Dataset, target_field="dataset_id",
    error=MediaCheckError)


def media_check_start(*, dataset: Dataset, created_by=None, idempotency_key: str | None = None) -> tuple[Job, bool]:
    return operation_start(MEDIA_CHECK, target=dataset, created_by=created_by, idempotency_key=idempotency_key)


def _prepare_check(*, target: Dataset, params: dict) -> None:
    prepare_check(target, cut=params["cut"])


def _prepare_run(job: Job, progress) -> dict:
    p = job.params
    return dataset_media_prepare(Dataset.objects.get(pk=p["dataset_id"]), cut=p["cut"], margin=p["margin"],
                                 height=p.get("height"), progress=progress)


MEDIA_PREPARE = Operation(
    name="prepare_media", title="Prepare playable copies of a dataset's media", params=PREPARE_PARAMS,
    check=_prepare_check, run=_prepare_run, target=Dataset, target_field="dataset_id", error=PrepareError)


def media_prepare_start(*, dataset: Dataset, params: dict, created_by=None,
                        idempotency_key: str | None = None) -> tuple[Job, bool]:
    return operation_start(MEDIA_PREPARE, target=dataset, params=params, created_by=created_by,
                           idempotency_key=idempotency_key)


OPERATIONS = (MEDIA_CHECK, MEDIA_PREPARE)
