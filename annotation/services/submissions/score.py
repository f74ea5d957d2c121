"""Scoring one submission: its run file read by the evaluation reader (services/evaluation/runs.py,
which names file, line and field of every problem), checked against the release's dataset and the
declared depth, and scored against the release's qrels.txt by analysis/submissions.py, with the
release's leaderboard settings (its cut-offs, bootstrap and depth)."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from annotation.analysis.submissions import submission_measures
from annotation.formats.errors import FileIssue, ImportRejected, IssueCollector
from annotation.formats.qrels import qrels_dict
from annotation.formats.runs import read_trec
from annotation.formats.text_lines import LineSource
from annotation.models import Caption, Clip, Release, Submission
from annotation.services.evaluation.release_qrels import release_qrels_write
from annotation.services.evaluation.runs import ScoredRun, read_trec_run
from annotation.services.reports.kinds import corrected_leaderboard as leaderboard_kind
from annotation.services.submissions.storage import SUBMISSIONS
from annotation.storage import stored_file_local_path

#: The leaderboard settings a submission is scored with when the release names none (its own were
#: left out): the corrected leaderboard's declared defaults.
_LEADERBOARD_SETTINGS = ("ks", "replicates", "seed", "confidence")


def release_leaderboard_settings(release: Release) -> dict:
    """The cut-offs, bootstrap and depth the release's leaderboard scored its runs with."""
    stored = (release.counts or {}).get("leaderboard_params") or {}
    declared = leaderboard_kind.KIND.params
    settings = {name: stored.get(name, declared[name].default) for name in _LEADERBOARD_SETTINGS}
    settings["depth"] = stored.get("depth")
    return settings


def release_qrels(release: Release) -> dict[str, dict[str, int]]:
    """qrels.txt of the release's archive as `{caption id: {clip id: relevance}}` (external ids),
    the file researchers download, read out by the one reader of it (evaluation/release_qrels.py)."""
    with tempfile.TemporaryDirectory(prefix="rejudge-qrels-") as folder:
        return qrels_dict(release_qrels_write(slug=release.slug, folder=Path(folder))) or {}


def submission_run_read(path: Path, *, release: Release, max_depth: int, display: str) -> ScoredRun:
    """The run file, read and checked: raises ImportRejected naming file, line and field of each
    problem (a malformed line, a caption or clip the release's dataset does not hold, a query
    ranked deeper than `max_depth`)."""
    try:
        run = read_trec_run(path)
    except ImportRejected as exc:
        raise ImportRejected([FileIssue(display, i.line, i.field, i.message) for i in exc.issues],
                             truncated=exc.truncated) from None
    captions = set(Caption.objects.filter(dataset_id=release.dataset_id).values_list("external_id", flat=True))
    clips = set(Clip.objects.filter(dataset_id=release.dataset_id).values_list("external_id", flat=True))
    issues = IssueCollector(display)
    if any(q not in captions for q in run.ranked) or any(c not in clips for docs in run.ranked.values() for c in docs):
        # A second pass finds the lines: the fast reader keeps none.
        for row in read_trec(LineSource(path, IssueCollector(display)), IssueCollector(display)):
            if row.caption_id not in captions:
                issues.add(row.line, "query_id", f"caption '{row.caption_id}' is not a query of release "
                                                 f"{release.slug} (dataset {release.dataset.name})")
            elif row.clip_id not in clips:
                issues.add(row.line, "doc_id", f"clip '{row.clip_id}' is not a clip of release {release.slug} "
                                               f"(dataset {release.dataset.name})")
    for q, docs in run.ranked.items():
        if len(docs) > max_depth:
            issues.add(None, "doc_id", f"query '{q}' ranks {len(docs)} clips; at most max_depth = {max_depth} "
                                       f"are scored (submit the run cut at that depth)")
    issues.raise_if_any()
    return run


@dataclass
class SubmissionScored:
    """A submission's run scored, nothing written yet: what the fill reads and the row stores."""

    ranked: dict
    qrels: dict
    settings: dict
    holes_k: int
    summary: dict
    hole_pairs: list


def submission_scored(submission: Submission, *, max_depth: int, holes_k: int, progress=None) -> SubmissionScored:
    """Reads the submission's run and the release's qrels.txt and scores the one against the other
    (writes nothing: the job's first phase calls it outside its transaction)."""
    step = progress or (lambda done, total=None, message="": None)
    release = submission.release
    step(0, 3, "reading the run")
    with stored_file_local_path(SUBMISSIONS, submission.run_file) as path:
        run = submission_run_read(path, release=release, max_depth=max_depth,
                                  display=submission.source_name or path.name)
    step(1, 3, "reading the release's qrels.txt")
    qrels = release_qrels(release)
    step(2, 3, "scoring")
    settings = release_leaderboard_settings(release)
    result = submission_measures(run.ranked, qrels, holes_k=holes_k, **settings)
    pairs = result.pop("hole_pairs")
    summary = {"release": release.slug, "scored_against": f"qrels.txt of release {release.slug}",
               "leaderboard_settings": settings, **result}
    step(3, 3, "scored")
    return SubmissionScored(run.ranked, qrels, settings, holes_k, summary, pairs)


def submission_scored_save(submission: Submission, scored: SubmissionScored, *, fill: dict | None = None) -> dict:
    """Stores the scores (and the fill) on the row: status `scored`, or `accepted` as it was (a
    rescore of an accepted submission). Returns the summary (without the hole pairs, which the row
    keeps)."""
    summary = scored.summary | ({"fill": fill} if fill is not None else {})
    submission.summary = summary
    submission.holes = {"k": scored.holes_k, "pairs": scored.hole_pairs}
    if submission.status != Submission.Status.ACCEPTED:
        submission.status = Submission.Status.SCORED
    submission.save(update_fields=["summary", "holes", "status"])
    return summary


def submission_score(submission: Submission, *, max_depth: int, holes_k: int, progress=None) -> dict:
    """Scores the submission's run against its release and stores the result on the row, without
    a fill (the operations add it: operations.py)."""
    return submission_scored_save(submission, submission_scored(submission, max_depth=max_depth, holes_k=holes_k,
                                                                progress=progress))
