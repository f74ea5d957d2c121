"""A run of a registered machine judge over a pool's pairs or a judgment set's pairs (a job's work).

For each pair: N frames spread evenly over the clip's span (the pair's span in a moment pool, else
the clip's, else the whole video), sent with the caption as one chat-completions request (see
annotation/formats/judge_chat.py); the verdict and P(relevant) are read from the answer.

- **Cache.** A pair already answered for the same (model, prompt version, caption, clip, frame
  sampling spec) by any run is not sent again: its JudgeCall row is reused.
- **Resumable.** Each answer is written (JudgeCall) on a connection of its own as it arrives, so a
  worker killed mid-run keeps what it was paid for; the retried job finds those rows in the cache.
  (On SQLite, single-writer, the rows commit with the job instead.)
- **Budget.** Requests and tokens spent by the job's earlier attempts count; once the budget is
  spent nothing more is sent, the pairs answered so far are stored, and the run ends `stopped`.
- **Failures.** A pair whose answer carries no verdict is recorded as an error and the run goes
  on; when the server stops answering (UNREACHABLE_IN_A_ROW pairs in a row fail on the network) or
  refuses the endpoint (401/403/404), the job fails with the reason, keeping the answers cached.
- **Verdicts** become MachineJudgment rows of a new MachineJudge (one per run), never Label rows.
"""
from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from django.conf import settings
from django.db import IntegrityError, connection
from django.db.models import Sum
from django.db.models.functions import Coalesce

from annotation.formats.fields import media_problem
from annotation.formats.judge_chat import chat_request
from annotation.formats.video_frames import extract_frames, frame_times, sampling_spec, video_seconds
from annotation.models import Caption, Clip, Job, JudgeCall, JudgeEndpoint, MachineJudge, MachineJudgment, Pool, PooledPair
from annotation.models.reports import ImportedJudgment, JudgmentSet
from annotation.services.machine_judges.runner.client import Budget, CallOutcome, EndpointRefused, call_pair
from annotation.services.machine_judges.runner.endpoints import judge_endpoint_key
from annotation.services.storage import stored_file_local_path

UNREACHABLE_IN_A_ROW = 3  # pairs in a row lost to the network (after their retries): the server is gone
ERRORS_LISTED = 50


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
        clip = clips[clip_id]
        if start is None and clip.has_span:
            start, end = clip.start, clip.end
        if start is None and clip.duration:
            start, end = 0.0, clip.duration
        pairs.append(PairToJudge(caption_id, clip_id, captions[caption_id].text, captions[caption_id].external_id,
                                 clip.external_id, clip.media, start, end))
    return pairs


@contextmanager
def _video(media: str):
    """A path or URL ffmpeg can read for a clip's media."""
    prefix = "/" + settings.MEDIA_URL.strip("/") + "/"
    media = media[len(prefix):] if media.startswith(prefix) else media
    problem = "has no video" if not media else media_problem(media)
    if problem:
        raise JudgeRunError(f"the clip's media {problem}")
    if re.match(r"^https?://", media, re.IGNORECASE):
        yield media
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
    """Writes JudgeCall rows committed at once, on a thread (and so a connection) of its own."""

    def __init__(self) -> None:
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="judge-cache") if connection.vendor != "sqlite" else None

    def _create(self, fields: dict) -> None:
        try:
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
                     max_retries=endpoint.max_retries, rng=random.Random(seed))


def _spent_before(job: Job) -> tuple[int, int]:
    sums = JudgeCall.objects.filter(job=job).aggregate(
        requests=Coalesce(Sum("requests"), 0), tokens=Coalesce(Sum("prompt_tokens"), 0) + Coalesce(Sum("completion_tokens"), 0))
    return int(sums["requests"]), int(sums["tokens"])


def machine_judge_run(*, job: Job, endpoint: JudgeEndpoint, pool: Pool | None = None,
                      judgment_set: JudgmentSet | None = None, progress: Callable = lambda *a, **k: None) -> dict:
    """Runs the judge (see the module docstring) and returns the job's result."""
    target = pool if pool is not None else judgment_set
    pairs = judge_run_pairs(pool=pool, judgment_set=judgment_set)
    if not pairs:
        raise JudgeRunError(f"'{target}' has no pairs to judge")
    key = judge_endpoint_key(endpoint)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    n = endpoint.frames_per_clip
    cached = {(c.caption_id, c.clip_id, c.sampling): c for c in JudgeCall.objects.filter(
        status=JudgeCall.Status.OK, model=endpoint.model, prompt_version=endpoint.prompt_version,
        caption_id__in={p.caption_id for p in pairs}, sampling__in={p.spec(n) for p in pairs})}
    todo = [p for p in pairs if (p.caption_id, p.clip_id, p.spec(n)) not in cached]
    requests_before, tokens_before = _spent_before(job)
    budget = Budget(max_requests=endpoint.max_requests, max_tokens=endpoint.max_tokens, requests=requests_before,
                    tokens=tokens_before)
    total = len(pairs)
    tally = {"answered": 0, "errors": 0, "unsent": 0}
    errors: list[dict] = []
    recorder = _Recorder()
    started = time.monotonic()

    def report() -> None:
        done = total - len(todo) + tally["answered"] + tally["errors"]
        progress(done, total, f"{done} of {total} pairs ({total - len(todo)} cached) · {budget.requests} requests · "
                              f"{budget.tokens} tokens · {tally['errors']} errors")

    report()
    timeout = httpx.Timeout(endpoint.timeout_seconds, connect=min(10.0, endpoint.timeout_seconds))
    limits = httpx.Limits(max_connections=endpoint.concurrency, max_keepalive_connections=endpoint.concurrency)
    pool_threads = ThreadPoolExecutor(endpoint.concurrency, thread_name_prefix="judge")
    try:
        with httpx.Client(timeout=timeout, limits=limits) as client:
            queue = iter(enumerate(todo))
            running: dict[Future, PairToJudge] = {}
            unreachable_in_a_row = 0
            while True:
                while len(running) < endpoint.concurrency and not budget.spent:
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
                    outcome = future.result()  # EndpointRefused propagates: the run stops
                    if outcome.budget_stop and not outcome.requests:
                        tally["unsent"] += 1
                        continue
                    fields = {"model": endpoint.model, "prompt_version": endpoint.prompt_version,
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
                        if unreachable_in_a_row >= UNREACHABLE_IN_A_ROW:
                            raise JudgeRunError(
                                f"{endpoint.base_url} stopped answering ({UNREACHABLE_IN_A_ROW} pairs in a row lost "
                                f"after their retries: {outcome.error}); the {tally['answered']} answers received are "
                                "cached, and a retry of the job sends only the rest")
                report()
    except EndpointRefused as exc:
        raise JudgeRunError(str(exc)) from None
    finally:
        pool_threads.shutdown(wait=False, cancel_futures=True)
        recorder.close()
    seconds = time.monotonic() - started
    # Stopped early only when pairs were left unsent: a budget spent by the last pair stopped nothing.
    unsent = len(todo) - tally["answered"] - tally["errors"]
    stopped = (budget.spent or "stopped before every pair was sent") if unsent else ""
    judge = _store_verdicts(job=job, endpoint=endpoint, pool=pool, judgment_set=judgment_set, pairs=pairs, n=n)
    spent_requests, spent_tokens = _spent_before(job)
    counts = {"pairs": total, "cached": total - len(todo), "answered": tally["answered"], "errors": tally["errors"],
              "unjudged": total - judge.counts["judged"], "requests": spent_requests, "tokens": spent_tokens,
              "stopped": stopped}
    judge.counts |= counts
    judge.save(update_fields=["counts"])
    return {"judge_id": judge.pk, "name": judge.name, **judge.counts, "seconds": round(seconds, 3),
            "errors_listed": errors}


def _store_verdicts(*, job: Job, endpoint: JudgeEndpoint, pool, judgment_set, pairs: list[PairToJudge],
                    n: int) -> MachineJudge:
    target = pool if pool is not None else judgment_set
    answers = {(c.caption_id, c.clip_id, c.sampling): c for c in JudgeCall.objects.filter(
        status=JudgeCall.Status.OK, model=endpoint.model, prompt_version=endpoint.prompt_version,
        caption_id__in={p.caption_id for p in pairs})}
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


def machine_judge_run_work(job: Job, progress: Callable) -> dict:
    """The job's work, from its params (endpoint_id, and pool_id or judgment_set_id)."""
    p = job.params
    endpoint = JudgeEndpoint.objects.filter(pk=p["endpoint_id"]).first()
    if endpoint is None:
        raise JudgeRunError(f"the judge '{p.get('endpoint', p['endpoint_id'])}' was removed after the run was started")
    pool = Pool.objects.get(pk=p["pool_id"]) if p.get("pool_id") else None
    judgment_set = JudgmentSet.objects.get(pk=p["judgment_set_id"]) if p.get("judgment_set_id") else None
    return machine_judge_run(job=job, endpoint=endpoint, pool=pool, judgment_set=judgment_set, progress=progress)
