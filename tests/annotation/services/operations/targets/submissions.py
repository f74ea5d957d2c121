"""Start targets of the submissions area's operation (see __init__.py). A submission takes an upload
(multipart), so it has no JSON start endpoint here; its declared fields are refused at the upload
endpoint by the same declarations (tests/api/test_submissions_api.py)."""
from django.utils import timezone


def _release(pool):
    from annotation.models import Release

    return Release.objects.create(name="bench", version=1, dataset=pool.dataset, archive="bench-v1.zip",
                                  pairs_file="bench-v1.pairs", bytes=0, sha256="0" * 64, created_at=timezone.now())


def _scored_submission(pool):
    from annotation.models import Submission

    return Submission.objects.create(release=_release(pool), name="model", run_file="submissions/x/run.trec",
                                     status=Submission.Status.SCORED, summary={}, holes={"k": 10, "pairs": []})


TARGETS = {"score_submission": lambda pool, runs, js: (_release(pool), {"name": "model"}),
           "accept_submission": lambda pool, runs, js: (_scored_submission(pool), {}),
           "fill_submission": lambda pool, runs, js: (_scored_submission(pool), {})}


def _rescore_url(pool, runs, js) -> str:
    from annotation.models import Submission

    return f"/api/v1/submissions/{Submission.objects.get(release__dataset=pool.dataset).pk}/rescore/"


ENDPOINTS = {"fill_submission": (_rescore_url, {}, lambda pool, runs, js: {})}
# The acceptance takes its judging settings flat, as the pool build does (api/views/submissions.py).
NOT_A_FIELD = {("accept_submission", "judging")}
