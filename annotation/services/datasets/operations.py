"""The datasets area's background operations (services/operations/): importing an uploaded dataset
file (clips and captions) and an uploaded run file (a model's ranked predictions). Each is declared
once here: the parameters a caller chooses, the check that refuses a request before its upload is
stored (a mistake is a 400, not a failed job), and the run that calls the import service. The
upload itself is stored by the start (`inputs`), beside the parameters, with the file's name.

The command line imports a file in its own process (import_dataset, import_run), without a job.
A dataset import whose clips name media queues a media check (services/media/operations.py)."""
from __future__ import annotations

from annotation.analysis.params import REQUIRED, Param
from annotation.formats.datasets import DATASET_FORMATS, MediaTemplate
from annotation.formats.runs import RUN_FORMATS
from annotation.models import Dataset, Job
from annotation.services.datasets.imports import dataset_import
from annotation.services.datasets.runs import ALL_RANKS, run_import
from annotation.services.deletes import delete_operation
from annotation.services.jobs import task_names
from annotation.services.media.operations import media_check_start
from annotation.services.operations.operation import Operation, refusal_naming
from annotation.services.operations.start import operation_start
from annotation.services.storage.uploads import upload_local_path, upload_store


class ImportRequestError(ValueError):
    """An import request refused before its upload is stored; `param` names the field to blame."""


def _upload_inputs(uploaded_file):
    """What an import job needs that nobody chooses: the stored upload and the file's name."""
    return lambda: {"upload": upload_store(uploaded_file=uploaded_file), "source_name": uploaded_file.name}


# --- import a dataset ----------------------------------------------------------------------------

DATASET_PARAMS = {
    "name": Param(str, REQUIRED, "the dataset's name (unique)", max_length=200),
    "format": Param(str, "", "the file's format (blank: guessed from the file name and header)",
                    choices=DATASET_FORMATS),
    "media_template": Param(str, "", "maps a clip to its file or URL, e.g. 'https://host/msrvtt/{video_id}.mp4' "
                            "or 'msrvtt/{clip_id}.mp4' (under MEDIA_ROOT); blank leaves media empty", max_length=1000),
    "description": Param(str, "", "a description for people"),
}


def _dataset_check(*, target, params: dict) -> None:
    try:
        MediaTemplate(params["media_template"])
    except ValueError as exc:
        raise refusal_naming(ImportRequestError(str(exc)), "media_template") from exc


def _dataset_run(job: Job, progress) -> dict:
    p = job.params
    with upload_local_path(params=p) as path:
        dataset = dataset_import(path=path, name=p["name"], fmt=p.get("format") or None,
                                 media_template=p.get("media_template") or None,
                                 description=p.get("description", ""), source_name=p.get("source_name"),
                                 progress=progress)
    result = {"dataset_id": dataset.pk, "name": dataset.name, "clips": dataset.clips.count(),
              "captions": dataset.captions.count()}
    if dataset.clips.exclude(media="").exists():
        # Every import is followed by a media check (services/media/), queued once this job commits:
        # a missing file or one browsers cannot play shows on the dataset page before raters meet it.
        check, _ = media_check_start(dataset=dataset, created_by=job.created_by)
        result["media_check_job_id"] = check.pk
    return result


DATASET_IMPORT = Operation(
    name="import_dataset", title="Import a dataset", params=DATASET_PARAMS, check=_dataset_check, run=_dataset_run,
    error=ImportRequestError, legacy_task=task_names.IMPORT_DATASET)


def dataset_import_start(*, uploaded_file, name: str, fmt: str | None, media_template: str, description: str,
                         created_by, idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Stores the upload and queues its import. Returns (job, created): a request sent again with
    the same idempotency key gets the first job."""
    return operation_start(DATASET_IMPORT, params={"name": name, "format": fmt or None,
                                                   "media_template": media_template, "description": description},
                           inputs=_upload_inputs(uploaded_file), created_by=created_by,
                           idempotency_key=idempotency_key)


# --- import a run --------------------------------------------------------------------------------

RUN_PARAMS = {
    "name": Param(str, "", "the run's name (blank: from the file)", max_length=200),
    "format": Param(str, "", "the file's format (blank: guessed from the file name and contents)", choices=RUN_FORMATS),
    "max_depth": Param(int, None, f"line files: refuse ranks deeper than this (default REJUDGE_MAX_RUN_DEPTH, 1000); "
                       f"score matrices: keep each caption's top N (default all). {ALL_RANKS}: full rankings.",
                       ALL_RANKS, 2**31 - 1),
}


def _run_import_run(job: Job, progress) -> dict:
    p = job.params
    with upload_local_path(params=p) as path:
        outcome = run_import(dataset=Dataset.objects.get(pk=p["dataset_id"]), path=path, name=p.get("name") or None,
                             fmt=p.get("format") or None, uploader=job.created_by,
                             source_name=p.get("source_name"), max_depth=p.get("max_depth"), progress=progress)
    run = outcome.run
    return {"run_id": run.pk, "name": run.name, "created": outcome.created, "kind": run.kind, "depth": run.depth,
            "predictions": run.prediction_count, "captions": run.caption_count, "format": run.source_format}


RUN_IMPORT = Operation(
    name="import_run", title="Import a run", params=RUN_PARAMS, run=_run_import_run, target=Dataset,
    target_field="dataset_id", error=ImportRequestError, legacy_task=task_names.IMPORT_RUN)


def run_import_start(*, dataset: Dataset, uploaded_file, name: str | None, fmt: str | None, max_depth: int | None,
                     created_by, idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Stores the upload and queues its import into `dataset`. Returns (job, created)."""
    return operation_start(RUN_IMPORT, target=dataset, params={"name": name or None, "format": fmt or None,
                                                                   "max_depth": max_depth},
                           inputs=_upload_inputs(uploaded_file), created_by=created_by,
                           idempotency_key=idempotency_key)


# --- delete a dataset ----------------------------------------------------------------------------

#: Set-based, in the job's transaction, files removed after it commits (services/deletes.py).
DATASET_DELETE = delete_operation(Dataset, "dataset_id", name="delete_dataset")

OPERATIONS = (DATASET_IMPORT, RUN_IMPORT, DATASET_DELETE)
