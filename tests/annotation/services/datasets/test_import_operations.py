"""The import operations' starts (services/datasets/operations.py): a request's mistakes are refused
before its upload is stored, and two copies of one request with the same idempotency key that race
past the look-up for the first job still make one job, the second copy's upload removed."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Job
from annotation.services.datasets import operations
from annotation.services.datasets.operations import ImportRequestError, dataset_import_start, run_import_start
from annotation.storage.files import stored_file_exists
from tests.factories import make_dataset, make_user

pytestmark = pytest.mark.django_db


def _file(name: str = "a.trec", content: bytes = b"q1 Q0 v1 1 0.9 sysA\n") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content)


@pytest.fixture
def stored(monkeypatch) -> list[str]:
    """The names of the uploads the starts store."""
    names: list[str] = []
    real = operations.upload_store

    def recording(*, uploaded_file):
        names.append(real(uploaded_file=uploaded_file))
        return names[-1]

    monkeypatch.setattr(operations, "upload_store", recording)
    return names


def test_a_copy_racing_past_the_look_up_gets_the_first_job_and_its_upload_is_removed(monkeypatch, stored):
    admin, dataset = make_user("admin"), make_dataset()
    first, created = run_import_start(dataset=dataset, uploaded_file=_file(), name=None, fmt=None, max_depth=None,
                                      created_by=admin, idempotency_key="k-race")
    assert created
    # The second copy's look-up ran before the first copy's job committed: it finds nothing.
    monkeypatch.setattr("annotation.services.operations.start.operation_existing", lambda **kwargs: None)
    again, created = run_import_start(dataset=dataset, uploaded_file=_file(), name=None, fmt=None, max_depth=None,
                                      created_by=admin, idempotency_key="k-race")
    assert (again.pk, created) == (first.pk, False)
    assert Job.objects.count() == 1
    kept, dropped = stored
    assert first.params["upload"] == kept and not stored_file_exists("uploads", dropped)


def test_a_bad_media_template_is_refused_naming_it_before_the_upload_is_stored(stored):
    with pytest.raises(ImportRequestError) as refused:
        dataset_import_start(uploaded_file=_file("m.jsonl"), name="d", fmt=None, media_template="../{video_id}.mp4",
                             description="", created_by=make_user("admin"))
    assert refused.value.param == "media_template"
    assert not stored and not Job.objects.exists()


def test_the_job_stores_the_parameters_the_import_reads():
    job, _ = run_import_start(dataset=make_dataset(), uploaded_file=_file(), name=None, fmt=None, max_depth=None,
                              created_by=make_user("admin"))
    assert job.kind == "import_run" and job.operation == "import_run"
    assert set(job.params) == {"upload", "dataset_id", "name", "format", "max_depth", "source_name"}
    assert (job.params["name"], job.params["format"], job.params["max_depth"]) == ("", "", None)
