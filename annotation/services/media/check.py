"""The media check: every clip of a dataset read with the project's ffmpeg, its findings stored.

Each distinct media reference is read once (segments share their source video): it must exist and
be readable (a URL fetched through the outbound policy), be a container and codecs browsers play
(formats/media_files.py), have its index at the front and a duration; then each clip's span (or
its stored duration) must lie inside that duration. The latest finding of each clip is one
ClipMediaCheck row; a clip with any problem has failed the check (pools refuse it unless told to
skip it: pools/build.py). Each problem names a fix; `preparable` ones prepare_media fixes.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

from django.db import transaction
from django.db.models import Count, F, Max, Q
from django.utils import timezone

from annotation.formats import media_files as mf
from annotation.models import Clip, ClipMediaCheck, Dataset, Job
from annotation.services.media.files import MISSING, NO_MEDIA, REFUSED, MediaUnavailable, media_local_path

UNREADABLE = "unreadable"
SPAN_PAST_END = "span_past_end"
#: A span may end this much past the duration ffmpeg reads (container rounding) and still count as inside.
SPAN_TOLERANCE_SECONDS = 0.1

PREPARE = "prepare_media converts it (manage.py prepare_media or 'Prepare playable copies' on the dataset page)"
#: code -> (what is wrong, the fix, whether prepare_media fixes it)
PROBLEMS: dict[str, tuple[str, str, bool]] = {
    NO_MEDIA: ("no media reference", "re-import the dataset with a media template that names each clip's file", False),
    MISSING: ("file missing", "copy the file into MEDIA_ROOT under this path (or into the media bucket), or correct "
              "the media template; then check again", False),
    REFUSED: ("media URL not fetched", "correct the URL, or let the outbound policy reach its host "
              "(REJUDGE_OUTBOUND_ALLOW, REJUDGE_OUTBOUND_PORTS); then check again", False),
    UNREADABLE: ("not a readable video", "replace the file with an undamaged video; then check again", False),
    mf.CONTAINER: ("container browsers do not play", PREPARE, True),
    mf.VIDEO_CODEC: ("video codec browsers do not play", PREPARE, True),
    mf.AUDIO_CODEC: ("audio codec browsers do not play", PREPARE, True),
    mf.NO_VIDEO: ("no video stream", "replace the file with one that has a picture", False),
    mf.INDEX_AT_END: ("MP4 index at the end (cannot start until fully loaded)",
                      "prepare_media moves the index to the front (no re-encoding)", True),
    mf.NO_DURATION: ("no duration in the file", PREPARE, True),
    SPAN_PAST_END: ("span past the end of the video", "correct the clip's start and end (or stored duration) in the "
                    "dataset file, or replace the file with the whole video", False),
}


def _problem(code: str, detail: str = "") -> dict:
    what, fix, preparable = PROBLEMS[code]
    return {"code": code, "message": f"{what}: {detail}" if detail else what, "fix": fix, "preparable": preparable}


def media_read(media: str) -> tuple[mf.MediaInfo | None, list[dict]]:
    """What one media reference is and its problems as a file (not yet any clip's span)."""
    try:
        with media_local_path(media) as path:
            info = mf.media_info(path)
    except MediaUnavailable as exc:
        return None, [_problem(exc.code, str(exc))]
    except mf.MediaError as exc:
        return None, [_problem(UNREADABLE, str(exc))]
    detail = {mf.CONTAINER: info.container, mf.VIDEO_CODEC: info.video_codec or "",
              mf.AUDIO_CODEC: ", ".join(c for c in info.audio_codecs if c not in mf.BROWSER_AUDIO_CODECS)}
    return info, [_problem(code, detail.get(code, "")) for code in mf.playback_problems(info)]


def span_problems(clip: Clip, info: mf.MediaInfo | None) -> list[dict]:
    """The clip's span (or stored duration) against the file's duration."""
    if info is None or info.duration is None:
        return []
    limit = info.duration + SPAN_TOLERANCE_SECONDS
    if clip.has_span and clip.end > limit:
        return [_problem(SPAN_PAST_END, f"ends at {clip.end:g} s, the video lasts {info.duration:g} s")]
    if not clip.has_span and clip.duration and clip.duration > limit:
        return [_problem(SPAN_PAST_END, f"the clip's stored duration is {clip.duration:g} s, the video lasts "
                                        f"{info.duration:g} s")]
    return []


def clip_findings(clip: Clip, info: mf.MediaInfo | None, problems: list[dict]) -> ClipMediaCheck:
    problems = problems + span_problems(clip, info)
    return ClipMediaCheck(
        clip=clip, media=clip.media, checked_at=timezone.now(), playable=not problems,
        container=info.container if info else "", video_codec=(info.video_codec or "") if info else "",
        audio_codecs=",".join(info.audio_codecs) if info else "", duration=info.duration if info else None,
        index_at_front=info.index_at_front if info else None, problems=problems)


def _store(findings: list[ClipMediaCheck]) -> None:
    with transaction.atomic():
        ClipMediaCheck.objects.filter(clip__in=[f.clip for f in findings]).delete()
        ClipMediaCheck.objects.bulk_create(findings)


def clips_media_check(clips, *, progress: Callable | None = None) -> None:
    """Checks `clips` (a queryset or list), each distinct media read once; stores the findings."""
    by_media: dict[str, list[Clip]] = defaultdict(list)
    for clip in clips:
        by_media[clip.media].append(clip)
    total, done = len(by_media), 0
    for media, group in by_media.items():
        info, problems = media_read(media)
        # Stored per media: a long check leaves what it found so far, and a retry starts over cheaply.
        _store([clip_findings(clip, info, problems) for clip in group])
        done += 1
        if progress:
            progress(done, total, "")


def dataset_media_check(dataset: Dataset, *, progress: Callable | None = None) -> dict:
    """Checks every clip of `dataset`; returns its summary (media_check_summary)."""
    clips_media_check(dataset.clips.order_by("pk"), progress=progress)
    return media_check_summary(dataset)


def media_check_summary(dataset: Dataset) -> dict:
    """How many clips were checked, play, failed (and how many of those prepare_media fixes), were
    never checked or changed media since, and how often each problem was found. Counted in the
    database; only the failed clips' problems are read."""
    checks = ClipMediaCheck.objects.filter(clip__dataset=dataset)
    figures = checks.aggregate(checked=Count("pk"), playable=Count("pk", filter=Q(playable=True)),
                               stale=Count("pk", filter=~Q(media=F("clip__media"))), last=Max("checked_at"))
    counts: Counter = Counter()
    preparable = 0
    for problems in checks.filter(playable=False).values_list("problems", flat=True).iterator(chunk_size=2000):
        preparable += all(p["preparable"] for p in problems)
        counts.update(p["code"] for p in problems)
    total, checked, playable = dataset.clip_count, figures["checked"], figures["playable"]
    return {"dataset_id": dataset.pk, "clips": total, "checked": checked, "unchecked": max(0, total - checked),
            "changed_since": figures["stale"], "playable": playable, "failed": checked - playable,
            "preparable": preparable, "problems": dict(sorted(counts.items())),
            "checked_at": figures["last"].isoformat() if figures["last"] else None}


def media_problem_rows(dataset: Dataset, *, limit: int | None = None) -> list[dict]:
    """One row per problem of a clip that failed: clip id, problem, fix (the dataset page's and the
    API's table), in clip order."""
    rows = []
    checks = (ClipMediaCheck.objects.filter(clip__dataset=dataset, playable=False)
              .select_related("clip").order_by("clip__external_id"))
    for check in checks if limit is None else checks[:limit]:  # each failed check has a problem at least
        for problem in check.problems:
            rows.append({"clip_id": check.clip.external_id, "media": check.clip.media, "code": problem["code"],
                         "problem": problem["message"], "fix": problem["fix"], "preparable": problem["preparable"]})
            if limit is not None and len(rows) >= limit:
                return rows
    return rows


def unplayable_clip_ids(dataset: Dataset) -> list[int]:
    """Primary keys of the clips whose latest check failed."""
    return list(ClipMediaCheck.objects.filter(clip__dataset=dataset, playable=False).values_list("clip_id", flat=True))


def dataset_media_state(dataset: Dataset, *, limit: int | None = 1000) -> dict:
    """What the dataset page and the API show: the summary of the latest check (a check job's, or
    the check a prepare job ends with; None before any), the problems table (at most `limit` rows;
    `truncated` says when more) and the latest check and prepare jobs. The summary is the job's
    stored one, so a page of a million-clip dataset reads no clip; the table is read only when
    the summary says clips failed. `pools_without_failed_clips`: the pools built leaving the clips
    that failed out (skip_unplayable), each with how many and which (the newest 20)."""
    latest, summary, summary_at = {}, None, None
    for operation in ("check_media", "prepare_media"):
        jobs = Job.objects.filter(operation=operation, params__dataset_id=dataset.pk).order_by("-created_at", "-id")
        job = jobs.first()
        latest[operation] = None if job is None else {
            "id": job.pk, "status": job.status, "progress_done": job.progress_done,
            "progress_total": job.progress_total, "created_at": job.created_at.isoformat()}
        done = jobs.filter(status=Job.Status.SUCCEEDED).exclude(finished_at=None).first()
        if done is not None and (summary_at is None or done.finished_at > summary_at):
            summary = done.result.get("check") if operation == "prepare_media" else done.result
            summary_at = done.finished_at
    skipped = [_left_out(job) for job in _builds_leaving_clips_out().filter(params__dataset_id=dataset.pk)[:20]]
    rows = []
    if summary and summary.get("failed"):
        rows = media_problem_rows(dataset, limit=None if limit is None else limit + 1)
    return {"summary": summary, "problems": rows[:limit] if limit is not None else rows,
            "truncated": limit is not None and len(rows) > limit, "check_job": latest["check_media"],
            "prepare_job": latest["prepare_media"], "pools_without_failed_clips": skipped}


def _builds_leaving_clips_out():
    """Pools built leaving failed clips out (pools/build.py skip_unplayable): their build jobs say which."""
    return Job.objects.filter(operation="build_pool", status=Job.Status.SUCCEEDED,
                              result__skipped_unplayable__count__gt=0).order_by("-created_at", "-id")


def _left_out(job: Job) -> dict:
    return {"pool_id": job.result.get("pool_id"), "pool": job.result.get("name"),
            "count": job.result["skipped_unplayable"]["count"], "clip_ids": job.result["skipped_unplayable"]["clip_ids"]}


def pool_clips_left_out(pool) -> dict | None:
    """How many and which clips the pool's build left out because they failed the media check
    (None when it left none out)."""
    job = _builds_leaving_clips_out().filter(result__pool_id=pool.pk).first()
    return None if job is None else _left_out(job)
