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


def _check_summary(result: dict) -> str:
    text = f"{result['playable']:,} of {result['clips']:,} clips play in browsers"
    if result["failed"]:
        text += (f"; {result['failed']:,} failed the check ({result['preparable']:,} fixed by preparing playable "
                 "copies): the dataset page lists each problem and its fix")
    return text + "."


MEDIA_CHECK = Operation(
    name="check_media", title="Check a dataset's media", run=_check_run, target=Dataset, target_field="dataset_id",
    summary=_check_summary, error=MediaCheckError)


def media_check_start(*, dataset: Dataset, created_by=None, idempotency_key: str | None = None) -> tuple[Job, bool]:
    return operation_start(MEDIA_CHECK, target=dataset, created_by=created_by, idempotency_key=idempotency_key)


def _prepare_check(*, target: Dataset, params: dict) -> None:
    prepare_check(target, cut=params["cut"])


def _prepare_run(job: Job, progress) -> dict:
    p = job.params
    return dataset_media_prepare(Dataset.objects.get(pk=p["dataset_id"]), cut=p["cut"], margin=p["margin"],
                                 height=p.get("height"), progress=progress)


def _prepare_summary(result: dict) -> str:
    text = (f"Prepared {result['prepared']:,} clips ({result['copies']:,} copies); {result['already_prepared']:,} "
            f"were prepared before; {result['not_preparable']:,} have problems a copy does not fix")
    if result["failed"]:
        text += f"; {sum(len(f['clip_ids']) for f in result['failed']):,} could not be converted"
    return f"{text}. Now {_check_summary(result['check'])}"


MEDIA_PREPARE = Operation(
    name="prepare_media", title="Prepare playable copies of a dataset's media", params=PREPARE_PARAMS,
    check=_prepare_check, run=_prepare_run, target=Dataset, target_field="dataset_id", summary=_prepare_summary,
    error=PrepareError)


def media_prepare_start(*, dataset: Dataset, params: dict, created_by=None,
                        idempotency_key: str | None = None) -> tuple[Job, bool]:
    return operation_start(MEDIA_PREPARE, target=dataset, params=params, created_by=created_by,
                           idempotency_key=idempotency_key)


OPERATIONS = (MEDIA_CHECK, MEDIA_PREPARE)
