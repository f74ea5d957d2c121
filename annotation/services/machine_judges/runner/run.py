"""A run of a registered machine judge over a pool's pairs or a judgment set's pairs (a job's work).

For each pair: N frames spread evenly over the clip's span (the pair's span in a moment pool, else
the clip's, else the whole video), sent with the caption as one chat-completions request (see
annotation/formats/judge_chat.py); the verdict and P(relevant) are read from the answer.

- **Cache.** A pair already answered for the same (endpoint that answered: normalised base URL and
  key variable, model, prompt version, caption, clip, frame sampling spec) by any run is not sent
  again: its JudgeCall row is reused. Another server's answers are never taken for this one's.
- **Resumable.** The job asks in two phases: the asking (MachineJudgeRunJob.ask) runs after the
  job is claimed but outside its transaction, and writes each answer (JudgeCall) in a short
  transaction of its own as it arrives, on PostgreSQL and SQLite alike; only the verdicts
  (MachineJudge, its MachineJudgment rows) commit with the job. So a run that fails or a worker
  killed mid-run keeps every answer it was paid for, and the retried job finds them in the cache.
  (Asked inside a transaction, on PostgreSQL the answers are written on a connection of their
  own; on SQLite, single-writer, they can only commit with that transaction.)
- **Budget.** Requests and tokens spent by the job's earlier attempts count; once the budget is
  spent nothing more is sent, the pairs answered so far are stored, and the run ends `stopped`.
- **Failures.** A pair whose answer carries no verdict, is too large or too slow (client.py), or
  holds anything unusable (judge_chat.py: NaN or overflowing log-probabilities, nesting no parser
  takes) is recorded as that pair's error with its reason and the run goes on; usage counts that
  are no small whole numbers are ignored and noted in the result's `notes`; when the server stops
  answering (UNREACHABLE_IN_A_ROW pairs in a row fail on the network) or refuses the endpoint
  (401/403/404), the job fails with the reason, keeping the answers cached.
- **Verdicts** become MachineJudgment rows of a new MachineJudge (one per run), never Label rows.
"""
from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Sum
from django.db.models.functions import Coalesce

from annotation.analysis.storable_text import media_problem
from annotation.formats.judge_chat import chat_request, prompt_retired
from annotation.formats.video_frames import extract_frames, frame_times, sampling_spec, video_seconds
from annotation.models import Caption, Clip, Job, JudgeCall, JudgeEndpoint, MachineJudge, MachineJudgment, Pool, PooledPair
from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet
from annotation.services.machine_judges.runner.client import (Budget, CallOutcome, EndpointRefused,
                                                               call_pair, judge_client)
from annotation.services.machine_judges.keys import mask_keys
from annotation.services.machine_judges.runner.endpoints import judge_endpoint_identity, judge_endpoint_key, \
    judge_network_backend
from annotation.services.outbound import downloaded
from annotation.storage import stored_file_local_path

UNREACHABLE_IN_A_ROW = 3  # pairs in a row lost to the network (after their retries): the server is gone
ERRORS_LISTED = 50
NOTES_LISTED = 20


class JudgeRunError(RuntimeError):
    """A run that cannot go on; the message says why (never the key)."""


@dataclass(frozen=True)
class PairToJudge:
    caption_id: int
    clip_id: int
    caption: str
    caption_external: str
    clip_external: str
    media: str
    start: float | None
    end: float | None

    def spec(self, frames: int) -> str:
        if self.start is None:
            return f"even:{frames}@full;" + sampling_spec(n=frames, start=0, end=1).split(";", 1)[1]
        return sampling_spec(n=frames, start=self.start, end=self.end)


def judge_run_pairs(*, pool: Pool | None = None, judgment_set: JudgmentSet | None = None) -> list[PairToJudge]:
    """The pairs a run judges, in a fixed order. Raises JudgeRunError for a pool that pairs one
    caption and clip over several spans (a MachineJudge holds one verdict per caption–clip)."""
    if pool is not None:
        rows = (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
                .values_list("caption_id", "clip_id", "start", "end").order_by("id"))
    else:
        rows = (ImportedJudgment.objects.filter(judgment_set=judgment_set).order_by("caption_id", "clip_id")
                .values_list("caption_id", "clip_id").distinct())
        rows = [(c, v, None, None) for c, v in rows]
    pairs, seen = [], set()
    rows = list(rows)
    clips = {c.pk: c for c in Clip.objects.filter(pk__in={r[1] for r in rows})}
    captions = {c.pk: c for c in Caption.objects.filter(pk__in={r[0] for r in rows})}
    for caption_id, clip_id, start, end in rows:
        if (caption_id, clip_id) in seen:
            raise JudgeRunError(f"caption {captions[caption_id].external_id} and clip {clips[clip_id].external_id} are "
                                "pooled over several spans; a machine judge holds one verdict per caption–clip pair")
        seen.add((caption_id, clip_id))
        pairs.append(pair_to_judge(captions[caption_id], clips[clip_id], start, end))
    return pairs


def pair_to_judge(caption: Caption, clip: Clip, start: float | None = None, end: float | None = None) -> PairToJudge:
    """A caption and clip as the judge is asked them: the pair's own span, else the clip's span,
    else the clip's whole duration (else the whole file)."""
    if start is None and clip.has_span:
        start, end = clip.start, clip.end
    if start is None and clip.duration:
        start, end = 0.0, clip.duration
    return PairToJudge(caption.pk, clip.pk, caption.text, caption.external_id, clip.external_id, clip.media, start, end)


@contextmanager
def _video(media: str):
    """A path or URL ffmpeg can read for a clip's media."""
    prefix = "/" + settings.MEDIA_URL.strip("/") + "/"
    media = media[len(prefix):] if media.startswith(prefix) else media
    problem = "has no video" if not media else media_problem(media)
    if problem:
        raise JudgeRunError(f"the clip's media {problem}")
    if re.match(r"^https?://", media, re.IGNORECASE):
        with downloaded(media) as path:  # through the outbound policy: ffmpeg reads local files only
            yield path
        return
    with stored_file_local_path("media", media) as path:
        yield path


def pair_frames(pair: PairToJudge, n: int) -> list[bytes]:
    with _video(pair.media) as video:
        start, end = pair.start, pair.end
        if start is None:
            start, end = 0.0, video_seconds(video)
        return extract_frames(video, frame_times(start, end, n))


class _Recorder:
    """Writes JudgeCall rows, each committed at once: in a transaction of its own when no
    transaction is open, else (PostgreSQL) on a thread, and so a connection, of its own."""

    def __init__(self) -> None:
        own_connection = connection.in_atomic_block and connection.vendor != "sqlite"
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="judge-cache") if own_connection else None

    def _create(self, fields: dict) -> None:
        try:
            # A savepoint inside an open transaction: a refused row must not break the rest of it.
            with transaction.atomic():
                JudgeCall.objects.create(**fields)
        except IntegrityError:
            # An ok row for the same key landed meanwhile (another run): the cache has the answer.
            if fields.get("status") != JudgeCall.Status.OK:
                raise

    def record(self, fields: dict) -> None:
        if self._writer is None:
            self._create(fields)
        else:
            self._writer.submit(self._create, fields).result()

    def close(self) -> None:
        if self._writer is not None:
            # The writer thread's own connection: `connection` resolves per thread, so inside it.
            self._writer.submit(lambda: connection.close()).result()
            self._writer.shutdown()


def _ask(*, pair: PairToJudge, endpoint: JudgeEndpoint, client: httpx.Client, headers: dict, budget: Budget,
         seed: int) -> CallOutcome:
    if budget.spent:
        return CallOutcome(error=budget.spent, budget_stop=True)
    try:
        frames = pair_frames(pair, endpoint.frames_per_clip)
    except Exception as exc:  # noqa: BLE001 - one clip's missing file is that pair's error, not the run's
        return CallOutcome(error=f"frames: {exc}")
    body = chat_request(model=endpoint.model, prompt_version=endpoint.prompt_version, caption=pair.caption,
                        frames_jpeg=frames, temperature=endpoint.temperature)
    return call_pair(client=client, base_url=endpoint.base_url, headers=headers, body=body, budget=budget,
                     max_retries=endpoint.max_retries, rng=random.Random(seed),
                     timeout_seconds=endpoint.timeout_seconds, max_bytes=settings.REJUDGE_JUDGE_ANSWER_MAX_BYTES)


def judge_run_check(endpoint: JudgeEndpoint) -> None:
    """What refuses a run of the endpoint before it starts (checked again when it runs): a retired
    prompt version. Raises JudgeRunError naming the field. (A concurrency above the ceiling cannot
    be stored: the database's check constraint, and migration 0017 lowered older judges to it.)"""
    retired = prompt_retired(endpoint.prompt_version)
    if retired:
        raise JudgeRunError(f"prompt_version: '{endpoint.prompt_version}' is retired ({retired}); change the "
                            f"judge's prompt_version to a current one")


def _usable(call: JudgeCall) -> bool:
    # An ok row whose score is no probability (a NaN stored before answers were checked: NULL on
    # SQLite, NaN on PostgreSQL) is no answer.
    return call.score is not None and math.isfinite(call.score) and 0.0 <= call.score <= 1.0


def judge_cached_answers(endpoint: JudgeEndpoint, pairs: list[PairToJudge], n: int) -> dict[tuple, JudgeCall]:
    """The cache: (caption, clip, sampling) -> the ok JudgeCall answering it for this endpoint."""
    rows = JudgeCall.objects.filter(
        status=JudgeCall.Status.OK, answered_by=judge_endpoint_identity(endpoint), model=endpoint.model,
        prompt_version=endpoint.prompt_version,
        caption_id__in={p.caption_id for p in pairs}, sampling__in={p.spec(n) for p in pairs})
    return {(c.caption_id, c.clip_id, c.sampling): c for c in rows if _usable(c)}


def _spent_before(job: Job) -> tuple[int, int]:
    sums = JudgeCall.objects.filter(job=job).aggregate(
        requests=Coalesce(Sum("requests"), 0), tokens=Coalesce(Sum("prompt_tokens"), 0) + Coalesce(Sum("completion_tokens"), 0))
    return int(sums["requests"]), int(sums["tokens"])


@dataclass
class _Asked:
    """What the asking phase leaves for the storing phase."""
    pairs: list[PairToJudge]
    cached: int
    answered: int
    errors: int
    errors_listed: list[dict]
    notes: list[str]
    usage_ignored: int
    stopped: str
    seconds: float


def judge_pairs_ask(*, job: Job, endpoint: JudgeEndpoint, pairs: list[PairToJudge], progress: Callable) -> _Asked:
    """Asks the server every pair not in the cache and records each answer as it arrives."""
    judge_run_check(endpoint)
    key = judge_endpoint_key(endpoint)
    network = judge_network_backend(endpoint)  # the key's hosts and the outbound policy, checked on the worker
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    n = endpoint.frames_per_clip
    cached = judge_cached_answers(endpoint, pairs, n)
    todo = [p for p in pairs if (p.caption_id, p.clip_id, p.spec(n)) not in cached]
    requests_before, tokens_before = _spent_before(job)
    budget = Budget(max_requests=endpoint.max_requests, max_tokens=endpoint.max_tokens, requests=requests_before,
                    tokens=tokens_before)
    total = len(pairs)
    tally = {"answered": 0, "errors": 0, "unsent": 0, "usage_ignored": 0}
    errors: list[dict] = []
    notes: dict[str, int] = {}
    recorder = _Recorder()
    started = time.monotonic()

    def report() -> None:
        done = total - len(todo) + tally["answered"] + tally["errors"]
        progress(done, total, f"{done} of {total} pairs ({total - len(todo)} cached) · {budget.requests} requests · "
                              f"{budget.tokens} tokens · {tally['errors']} errors")

    report()
    pool_threads = ThreadPoolExecutor(endpoint.concurrency, thread_name_prefix="judge")
    try:
        with judge_client(timeout_seconds=endpoint.timeout_seconds, concurrency=endpoint.concurrency,
                          network_backend=network) as client:
            queue = iter(enumerate(todo))
            running: dict[Future, PairToJudge] = {}
            unreachable_in_a_row = 0
            stop: Exception | None = None  # what ends the run, once the pairs in flight are recorded
            while True:
                while stop is None and len(running) < endpoint.concurrency and not budget.spent:
                    item = next(queue, None)
                    if item is None:
                        break
                    i, pair = item
                    running[pool_threads.submit(_ask, pair=pair, endpoint=endpoint, client=client, headers=headers,
                                                budget=budget, seed=job.pk * 1_000_003 + i)] = pair
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    pair = running.pop(future)
                    try:
                        outcome = future.result()
                    except Exception as exc:  # noqa: BLE001 - EndpointRefused, or anything: the run stops,
                        stop = stop or exc    # and the answers of the pairs still in flight are kept
                        continue
                    outcome.error = mask_keys(outcome.error, also=(key,))
                    if outcome.budget_stop and not outcome.requests:
                        tally["unsent"] += 1
                        continue
                    for note in outcome.notes:
                        if note in notes or len(notes) < NOTES_LISTED:
                            notes[note] = notes.get(note, 0) + 1
                    tally["usage_ignored"] += bool(outcome.notes)
                    fields = {"answered_by": judge_endpoint_identity(endpoint), "model": endpoint.model,
                              "prompt_version": endpoint.prompt_version,
                              "sampling": pair.spec(n), "caption_id": pair.caption_id, "clip_id": pair.clip_id,
                              "endpoint": endpoint, "job": job, "requests": outcome.requests}
                    if outcome.verdict is not None:
                        v = outcome.verdict
                        recorder.record(fields | {"status": JudgeCall.Status.OK, "relevant": v.relevant,
                                                  "score": v.score, "score_source": v.score_source,
                                                  "prompt_tokens": v.prompt_tokens,
                                                  "completion_tokens": v.completion_tokens})
                        tally["answered"] += 1
                        unreachable_in_a_row = 0
                    else:
                        recorder.record(fields | {"status": JudgeCall.Status.ERROR, "error": outcome.error[:2000],
                                                  "prompt_tokens": outcome.tokens})
                        tally["errors"] += 1
                        if len(errors) < ERRORS_LISTED:
                            errors.append({"caption": pair.caption_external, "clip": pair.clip_external,
                                           "error": outcome.error[:500]})
                        unreachable_in_a_row = unreachable_in_a_row + 1 if outcome.unreachable else 0
                        if unreachable_in_a_row >= UNREACHABLE_IN_A_ROW and stop is None:
                            stop = JudgeRunError(
                                f"{endpoint.base_url} stopped answering ({UNREACHABLE_IN_A_ROW} pairs in a row lost "
                                f"after their retries: {outcome.error}); the answers received are cached, and a "
                                "retry of the job sends only the rest")
                report()
            if stop is not None:
                raise stop
    except EndpointRefused as exc:
        raise JudgeRunError(mask_keys(str(exc), also=(key,))) from None
    finally:
        pool_threads.shutdown(wait=False, cancel_futures=True)
        recorder.close()
    # Stopped early only when pairs were left unsent: a budget spent by the last pair stopped nothing.
    unsent = len(todo) - tally["answered"] - tally["errors"]
    return _Asked(pairs=pairs, cached=total - len(todo), answered=tally["answered"], errors=tally["errors"],
                  errors_listed=errors, usage_ignored=tally["usage_ignored"],
                  notes=[f"{note} ({count} answer{'s' if count > 1 else ''})" for note, count in notes.items()],
                  stopped=(budget.spent or "stopped before every pair was sent") if unsent else "",
                  seconds=time.monotonic() - started)


def _store(*, job: Job, endpoint: JudgeEndpoint, pool, judgment_set, asked: _Asked) -> dict:
    """The run's MachineJudge from the answers in the cache, and the job's result."""
    n = endpoint.frames_per_clip
    judge = _store_verdicts(job=job, endpoint=endpoint, pool=pool, judgment_set=judgment_set, pairs=asked.pairs, n=n)
    spent_requests, spent_tokens = _spent_before(job)
    total = len(asked.pairs)
    counts = {"pairs": total, "cached": asked.cached, "answered": asked.answered, "errors": asked.errors,
              "unjudged": total - judge.counts["judged"], "requests": spent_requests, "tokens": spent_tokens,
              "usage_ignored": asked.usage_ignored, "stopped": asked.stopped}
    judge.counts |= counts
    judge.save(update_fields=["counts"])
    return {"judge_id": judge.pk, "name": judge.name, **judge.counts, "seconds": round(asked.seconds, 3),
            "errors_listed": asked.errors_listed, "notes": asked.notes}


def _store_verdicts(*, job: Job, endpoint: JudgeEndpoint, pool, judgment_set, pairs: list[PairToJudge],
                    n: int) -> MachineJudge:
    target = pool if pool is not None else judgment_set
    answers = judge_cached_answers(endpoint, pairs, n)
    judge = MachineJudge.objects.create(
        dataset_id=target.dataset_id, pool=pool, judgment_set=judgment_set, name=f"{endpoint.name} · job {job.pk}"[:200],
        model_name=endpoint.model, prompt_version=endpoint.prompt_version, source_name=endpoint.base_url[:500],
        checksum="", endpoint=endpoint, job=job, created_by=job.created_by)
    rows, by_label, by_source = [], {"relevant": 0, "not_relevant": 0}, {}
    for pair in pairs:
        answer = answers.get((pair.caption_id, pair.clip_id, pair.spec(n)))
        if answer is None:
            continue
        label = MachineJudgment.Label.RELEVANT if answer.relevant else MachineJudgment.Label.NOT_RELEVANT
        by_label[label] += 1
        by_source[answer.score_source] = by_source.get(answer.score_source, 0) + 1
        rows.append(MachineJudgment(judge=judge, caption_id=pair.caption_id, clip_id=pair.clip_id, label=label,
                                    score=answer.score, score_source=answer.score_source,
                                    source_record=f"call {answer.pk}" + ("" if answer.job_id == job.pk else " (cached)")))
    MachineJudgment.objects.bulk_create(rows, batch_size=5000)
    judge.counts = {"judged": len(rows), **by_label, "score_sources": by_source, "frames_per_clip": n}
    return judge


def _job_targets(job: Job) -> tuple[JudgeEndpoint, Pool | None, JudgmentSet | None]:
    p = job.params
    endpoint = JudgeEndpoint.objects.filter(pk=p["endpoint_id"]).first()
    if endpoint is None:
        raise JudgeRunError(f"the judge '{p.get('endpoint', p['endpoint_id'])}' was removed after the run was started")
    pool = Pool.objects.get(pk=p["pool_id"]) if p.get("pool_id") else None
    judgment_set = JudgmentSet.objects.get(pk=p["judgment_set_id"]) if p.get("judgment_set_id") else None
    return endpoint, pool, judgment_set


class MachineJudgeRunJob:
    """The job's work in two phases for job_execute: `ask` (its `outside`: after the claim, outside
    the job's transaction, every answer committed as it arrives) and `store` (its `work`: the
    verdicts, committed with the job). A failure in either fails the job; the answers stay."""

    def __init__(self) -> None:
        self._asked: _Asked | None = None
        self._asked_endpoint: JudgeEndpoint | None = None

    def ask(self, job: Job, progress: Callable) -> None:
        endpoint, pool, judgment_set = _job_targets(job)
        pairs = judge_run_pairs(pool=pool, judgment_set=judgment_set)
        if not pairs:
            raise JudgeRunError(f"'{pool if pool is not None else judgment_set}' has no pairs to judge")
        self._asked = judge_pairs_ask(job=job, endpoint=endpoint, pairs=pairs, progress=progress)
        self._asked_endpoint = endpoint

    def store(self, job: Job, progress: Callable) -> dict:
        if self._asked is None or self._asked_endpoint is None:
            raise RuntimeError("MachineJudgeRunJob.store runs after ask")
        _, pool, judgment_set = _job_targets(job)  # the judge still exists (else JudgeRunError)
        # The endpoint as it was asked: a PATCH of its URL, key variable, model or prompt since
        # then must not give this run the answers cached for the new values (another server's).
        return _store(job=job, endpoint=self._asked_endpoint, pool=pool, judgment_set=judgment_set,
                      asked=self._asked)
