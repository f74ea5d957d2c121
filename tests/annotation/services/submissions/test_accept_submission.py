"""An admin's acceptance of a submission to the hand-worked release (tests/annotation/services/
reports/test_report_metrics.py): its holes become the queued pairs of a pool seeded from the
release's verdicts, and once people judged them the next version ranks the run with Judged@10 = 1,
its provenance in pseudonyms, and `release diff` names the submission as the reason of each pair
it added. Numbers are worked by hand below."""
from __future__ import annotations

import csv
import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Job, JudgmentSet, Pool, PooledPair, PoolMembership, Run, Submission
from annotation.services.exports.labels import EXPORTS
from annotation.services.releases.create import ReleaseError, release_create
from annotation.services.releases.diff import release_diff
from annotation.services.submissions.accept import SubmissionAcceptError, submission_accept_start
from annotation.services.submissions.operations import submission_start
from annotation.storage import stored_file_chunks
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.annotation.services.submissions.test_score_submission import RUN_S, _trec
from tests.factories import label_pair, make_user, unique

pytestmark = pytest.mark.django_db

# Run S's top 10 (all it ranks): q1 [v4 v2 v3], q2 [v4 v5 v2], q3 [v1 v3]: 8 pairs. The release
# judges 4 of them (q1 v2 rel, q1 v3 not, q2 v2 rel, q3 v3 rel); the 4 others are its holes
# (q2 v4 is a disagreement in the release, so no verdict).
HOLES = {("q1", "v4"), ("q2", "v4"), ("q2", "v5"), ("q3", "v1")}
SEEDED = {("q1", "v2"): "relevant", ("q1", "v3"): "not_relevant", ("q2", "v2"): "relevant",
          ("q3", "v3"): "relevant"}
# What people say of the holes.
HOLE_VERDICTS = {("q1", "v4"): "relevant", ("q2", "v4"): "not_relevant", ("q2", "v5"): "relevant",
                 ("q3", "v1"): "not_relevant"}


@pytest.fixture
def scored(tmp_path, django_capture_on_commit_callbacks):
    pool = example_pool(tmp_path)
    release = release_create(allow_unresolved=True, pools=[pool], name="example-fire")
    researcher = make_user("researcher")
    with django_capture_on_commit_callbacks(execute=True):
        submission, _ = submission_start(release=release, uploaded_file=SimpleUploadedFile("s.trec", _trec(RUN_S).encode()),
                                         name="model-s", submitted_by=researcher)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SCORED
    return submission


def _accept(submission, captured, admin=None, **kwargs):
    admin = admin or make_user("admin")
    with captured(execute=True):
        job, created = submission_accept_start(submission=submission, accepted_by=admin, **kwargs)
    job.refresh_from_db()
    submission.refresh_from_db()
    return job, created, admin


def _pairs(pool) -> dict[tuple[str, str], PooledPair]:
    return {(p.caption.external_id, p.clip.external_id): p
            for p in PooledPair.objects.filter(pool=pool, role="pool").select_related("caption", "clip")}


def test_accepting_queues_exactly_the_holes_in_a_pool_seeded_from_the_release(scored,
                                                                             django_capture_on_commit_callbacks):
    job, created, admin = _accept(scored, django_capture_on_commit_callbacks, idempotency_key="accept-1")
    assert created and job.status == Job.Status.SUCCEEDED, job.errors
    assert scored.status == Submission.Status.ACCEPTED and scored.accepted_by == admin and scored.accepted_at
    pool = scored.pool
    pairs = _pairs(pool)
    assert set(pairs) == HOLES | set(SEEDED)
    assert {k for k, p in pairs.items() if p.state == PooledPair.State.OPEN} == HOLES
    assert {k: p.resolved_label for k, p in pairs.items() if p.state == PooledPair.State.RESOLVED} == SEEDED
    assert all(p.vote_count == 0 for p in pairs.values())  # seeded, no rater's effort
    assert job.result["queued"] == 4 and job.result["resolved_from_release"] == 4
    # The run: named after the submission, its source naming it; the seeds: a seeding judgment set.
    run = Run.objects.get(pk=job.result["run_id"])
    assert run.name == "model-s" and run.source_name.startswith(f"submission {scored.pk} to example-fire@v1")
    assert list(pool.runs.all()) == [run] and pool.depth == 10
    seeds = JudgmentSet.objects.get(name=f"example-fire@v1 verdicts for submission {scored.pk}")
    assert seeds.seeds_pools and seeds.counts["relevant"] == 3 and seeds.counts["not_relevant"] == 1
    # The release's rater may judge the holes.
    assert PoolMembership.objects.filter(pool=pool).count() == 1
    # The same request again (same key): the first job; without a key: refused, already accepted.
    again, created_again, _ = _accept(scored, django_capture_on_commit_callbacks, admin=admin,
                                      idempotency_key="accept-1")
    assert again.pk == job.pk and not created_again
    with pytest.raises(SubmissionAcceptError, match="already accepted"):
        _accept(scored, django_capture_on_commit_callbacks, admin=admin)


def test_a_sampled_design_is_taken_when_asked_and_the_release_pools_otherwise(scored,
                                                                             django_capture_on_commit_callbacks):
    job, _, _ = _accept(scored, django_capture_on_commit_callbacks,
                        judging={"strategy": "sampled", "sample_rate": 0.5})
    assert job.status == Job.Status.SUCCEEDED, job.errors
    pool = scored.pool
    assert pool.judging_strategy == "sampled" and pool.judging_sample_rate == 0.5
    pairs = _pairs(pool)
    # Each hole is in the sample (open) or not, with its inclusion probability from the design;
    # the release's verdicts stay as seeded.
    assert {pairs[k].state for k in HOLES} <= {PooledPair.State.OPEN, PooledPair.State.NOT_SAMPLED}
    assert all(0 < pairs[k].inclusion_probability <= 1 for k in HOLES)
    assert {k: pairs[k].resolved_label for k in SEEDED} == SEEDED


def test_refusals_name_why(scored, django_capture_on_commit_callbacks, tmp_path):
    with pytest.raises(SubmissionAcceptError) as refused:
        _accept(scored, django_capture_on_commit_callbacks, judging={"strategy": "no-such"})
    assert refused.value.param == "judging" and "strategy" in str(refused.value)
    pending = Submission.objects.create(release=scored.release, name="later", run_file="x", holes=None)
    with pytest.raises(SubmissionAcceptError, match="not scored yet"):
        _accept(pending, django_capture_on_commit_callbacks)
    assert not Job.objects.filter(operation="accept_submission").exists()


def _archive(release, name: str) -> str:
    data = b"".join(stored_file_chunks(EXPORTS, release.archive))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return archive.read(f"{release.folder}/{name}").decode()


def test_the_next_version_ranks_the_run_with_its_holes_judged(scored, django_capture_on_commit_callbacks):
    admin = make_user("admin")
    job, _, _ = _accept(scored, django_capture_on_commit_callbacks, admin=admin)
    pool = scored.pool
    pairs = _pairs(pool)
    first_pool = Pool.objects.get(name="example pool", dataset=pool.dataset)
    # Until the holes are judged, the next version is refused, naming the submission's pool.
    with pytest.raises(ReleaseError, match=r"pool 'model-s: holes \(submission \d+ to example-fire@v1\)': 4 of 8"):
        release_create(pools=[first_pool], name="example-fire")
    rater = PoolMembership.objects.get(pool=pool).rater
    for key, verdict in HOLE_VERDICTS.items():
        label_pair(rater, pairs[key], client_id=unique("c"), value=verdict, seconds=3.0)
    v2 = release_create(pools=[first_pool], name="example-fire", allow_unresolved=True)
    assert v2.version == 2
    assert [s.get("submission", {}).get("model") for s in v2.sources] == [None, "model-s"]
    rows = {r["run"]: r for r in v2.leaderboard["runs"]}
    assert set(rows) == {"A", "B", "model-s"}
    s = rows["model-s"]
    measure = {m.split(" ")[0]: m for m in v2.leaderboard["measures"]}
    judged = {j.split(" ")[0]: v for j, v in s["judged"].items()}
    assert judged["Judged@10"] == 1.0 and judged["Judged@1"] == 1.0
    # Corrected, by hand: q1's top is v4 (now relevant), q2's v4 (not), q3's v1 (not): C@1 = 1/3;
    # each query has a relevant clip within 5 (q1 v4, q2 v5, q3 v3): C@5 = 1.
    assert s["corrected"][measure["C@1"]]["value"] == pytest.approx(1 / 3)
    assert s["corrected"][measure["C@5"]]["value"] == pytest.approx(1.0)
    # Provenance, people in the release's pseudonyms: the submitter and the admin are p01 and p02.
    p = s["provenance"]
    assert p["kind"] == "submitted run" and p["model"] == "model-s" and p["submission"] == scored.pk
    assert p["submitted_to"] == "example-fire@v1" and (p["by"], p["accepted_by"]) == ("p01", "p02")
    assert p["holes"] == 4 and p["accepted_at"]
    assert rows["A"]["provenance"]["kind"] == "pooled run"
    text = _archive(v2, "leaderboard.json") + _archive(v2, "leaderboard.csv")
    assert scored.submitted_by.username not in text and admin.username not in text
    table = list(csv.DictReader(io.StringIO(_archive(v2, "leaderboard.csv"))))
    assert {(r["run"], r["provenance"], r["provenance_by"]) for r in table} == {
        ("A", "pooled run", ""), ("B", "pooled run", ""), ("model-s", "submitted run", "p01")}
    # The diff: the four holes added, each because of the submission.
    v1 = scored.release
    diff = release_diff(old=v1, new=v2)
    assert diff["counts"] == {"added": 4, "changed": 0, "removed": 0}
    assert {(a["query_id"], a["clip_id"], a["new_relevance"], a["reason"]) for a in diff["added"]} == {
        ("q1", "v4", 1, "submission model-s"), ("q2", "v4", 0, "submission model-s"),
        ("q2", "v5", 1, "submission model-s"), ("q3", "v1", 0, "submission model-s")}


def test_a_failed_acceptance_leaves_nothing_behind(scored, django_capture_on_commit_callbacks):
    """The job's transaction holds every step: the pool cannot be built (its name is taken), so the
    run imported and the seeding judgment set made before it are gone too, and the submission can
    be accepted once the name is free."""
    name = f"model-s: holes (submission {scored.pk} to example-fire@v1)"
    taken = Pool.objects.create(dataset=scored.release.dataset, name=name)
    runs, sets = Run.objects.count(), JudgmentSet.objects.count()
    job, _, _ = _accept(scored, django_capture_on_commit_callbacks)
    assert job.status == Job.Status.FAILED and "already exists" in (job.message or str(job.errors))
    assert (Run.objects.count(), JudgmentSet.objects.count()) == (runs, sets)
    assert scored.status == Submission.Status.SCORED and scored.pool is None
    taken.delete()
    job, _, _ = _accept(scored, django_capture_on_commit_callbacks)
    assert job.status == Job.Status.SUCCEEDED and scored.pool.name == name
