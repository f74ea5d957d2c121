"""Throughput of a machine-judge run against the test server (tests/judge_server.py), and the
platform's own overhead per pair.

    .venv/bin/python bench/bench_machine_judge.py [--frames 8] [--concurrency 1 8 32] [--database-url URL]

A pool of every pair of the 12 demo clips and 20 demo captions (240 pairs) is judged once per
concurrency, each time under a model name of its own so that nothing comes from the cache, and
once more with everything cached. The overhead per pair is measured apart from the network:
cutting the frames (ffmpeg), building the request (base64 data URLs), and storing (the cache row
written on its own connection, and the verdict). The server runs on the same machine and spends
most of each request decoding the JPEGs and reading the pixels: the figures are the platform's
throughput against a fast judge, not a model's.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import REPO, django_for_bench  # noqa: E402



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--database-url", default=None,
                        help="Default: $DATABASE_URL, else a new database rejudge_bench_machine_judge_<pid>, dropped at exit.")
    args = parser.parse_args()
    media = Path(tempfile.mkdtemp(prefix="bench-judge-media-"))
    os.environ["MEDIA_ROOT"] = str(media)
    os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")
    django_for_bench(args.database_url, name="rejudge_bench_machine_judge")
    logging_quiet()

    from annotation.demo.scenes import SCENES, demo_captions
    from annotation.demo.video import render_clip
    from annotation.formats.judge_chat import chat_request
    from annotation.models import Caption, Clip, Dataset, JudgeCall, JudgeEndpoint, Pool, PooledPair
    from annotation.services.machine_judges.operations import machine_judge_run_here
    from annotation.services.machine_judges.runner.run import _Recorder, judge_run_pairs, pair_frames
    from tests.judge_server import JudgeServerProcess

    dataset = Dataset.objects.create(name=f"bench-judge-{uuid.uuid4().hex[:8]}")
    clips = []
    for scene in SCENES:
        render_clip(scene, media / "demo" / f"{scene.clip_id}.mp4")
        clips.append(Clip.objects.create(dataset=dataset, external_id=scene.clip_id, video_id=scene.clip_id,
                                         media=f"demo/{scene.clip_id}.mp4", duration=scene.seconds))
    pool = Pool.objects.create(dataset=dataset, name="bench")
    for c in demo_captions():
        caption = Caption.objects.create(dataset=dataset, external_id=c.caption_id, text=c.text)
        PooledPair.objects.bulk_create([PooledPair(pool=pool, caption=caption, clip=clip) for clip in clips])
    pairs = judge_run_pairs(pool=pool)
    server = JudgeServerProcess()
    tag = uuid.uuid4().hex[:6]
    print(f"machine judge throughput: {len(pairs)} pairs, {args.frames} frames per clip, test server on 127.0.0.1, "
          f"{os.cpu_count()} CPUs")
    print(f"{'concurrency':>11}  {'pairs/s':>8}  {'seconds':>8}  {'requests':>8}  {'agreement':>9}")
    try:
        last = None
        for concurrency in args.concurrency:
            endpoint = JudgeEndpoint.objects.create(name=f"bench-{tag}-c{concurrency}", base_url=server.url,
                                                    model=f"demo-vl+bench-{tag}-{concurrency}",
                                                    frames_per_clip=args.frames, concurrency=concurrency)
            started = time.perf_counter()
            job = machine_judge_run_here(endpoint=endpoint, pool=pool)
            seconds = time.perf_counter() - started
            assert job.status == "succeeded", job.message
            last = (endpoint, job)
            print(f"{concurrency:>11}  {len(pairs) / seconds:>8.1f}  {seconds:>8.1f}  {job.result['requests']:>8}  "
                  f"{_agreement(job):>9.3f}")
        endpoint, _ = last
        started = time.perf_counter()
        job = machine_judge_run_here(endpoint=endpoint, pool=pool)
        seconds = time.perf_counter() - started
        print(f"{'cached':>11}  {len(pairs) / seconds:>8.1f}  {seconds:>8.1f}  {job.result['requests']:>8}  "
              f"{_agreement(job):>9.3f}")

        sample = pairs[:24]
        t = time.perf_counter()
        frames = [pair_frames(p, args.frames) for p in sample]
        extract = (time.perf_counter() - t) / len(sample)
        t = time.perf_counter()
        for p, f in zip(sample, frames):
            chat_request(model="m", prompt_version="v1", caption=p.caption, frames_jpeg=f, temperature=0)
        build = (time.perf_counter() - t) / len(sample)
        recorder = _Recorder()
        t = time.perf_counter()
        for i, p in enumerate(sample):
            recorder.record({"model": f"bench-store-{tag}", "prompt_version": "v1", "sampling": "x",
                             "caption_id": p.caption_id, "clip_id": p.clip_id, "status": "ok", "relevant": True,
                             "score": 0.9, "score_source": "logprob", "requests": 1})
        store = (time.perf_counter() - t) / len(sample)
        recorder.close()
        JudgeCall.objects.filter(model=f"bench-store-{tag}").delete()
        print(f"overhead per pair ({len(sample)} pairs, one thread): frames {1000 * extract:.1f} ms "
              f"({statistics.mean(sum(map(len, f)) for f in frames) / 1024:.0f} KiB of JPEG), request building "
              f"{1000 * build:.2f} ms, cache row stored {1000 * store:.2f} ms")
    finally:
        server.stop()


def _agreement(job) -> float:
    from annotation.models import MachineJudgment
    from tests.annotation.demo_truth import true_answer

    rows = MachineJudgment.objects.filter(judge_id=job.result["judge_id"]).select_related("caption", "clip")
    return sum(r.label == true_answer(r.caption.text, r.clip.external_id) for r in rows) / max(1, len(rows))


def logging_quiet() -> None:
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
