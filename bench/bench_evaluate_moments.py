"""Benchmark: `manage.py evaluate` on a QVHighlights-sized and a TVR-sized moment file, end to end.

QVHighlights val: 1,550 queries on ~150 s videos, 1 to 4 relevant windows each (2-second grid, as
the dataset), and a prediction file of 10 windows per query [start, end, score] with some windows
listed twice (the real val file has 81 such duplicates). TVR val: 10,895 queries over 2,179
videos and a submission of 100 predictions per query in each of VCMR, SVMR and VR (3.27 million
rows, the size the official evaluation reads). Both synthetic and seeded; give --ground-truth /
--predictions (QVHighlights) or --tvr-ground-truth / --tvr-predictions to time the real files.

Each file pair is scored twice: by `manage.py evaluate` in a fresh process (what a user waits
for: interpreter, Django and the imports included; peak RSS of that process), and in this process
through call_command after a first warm-up call (the reading and scoring alone). Goal: the
QVHighlights run under 5 s end to end. Nothing touches the database.

    .venv/bin/python bench/bench_evaluate_moments.py [--skip-tvr] [--keep DIR]
"""
from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _setup import REPO

QVH_QUERIES = 1550
QVH_VIDEO_SECONDS = 150
QVH_PREDICTIONS = 10
TVR_QUERIES = 10_895
TVR_VIDEOS = 2_179
TVR_PREDICTIONS = 100


def write_qvhighlights(folder: Path, rng: np.random.Generator) -> tuple[Path, Path, int]:
    """(ground truth, predictions, duplicated windows)."""
    gt, pred = folder / "qvh_val_gt.jsonl", folder / "qvh_val_pred.jsonl"
    duplicates = 0
    with gt.open("w") as g, pred.open("w") as p:
        for qid in range(QVH_QUERIES):
            # 1-4 disjoint windows on the 2-second grid: split the video into as many slots.
            n = int(rng.integers(1, 5))
            slot = QVH_VIDEO_SECONDS // n
            windows = []
            for k in range(n):
                length = 2 * int(rng.integers(1, min(slot // 2, 35)))  # up to ~70 s, every length bin
                start = k * slot + 2 * int(rng.integers(0, (slot - length) // 2 + 1))
                windows.append([start, start + length])
            g.write(json.dumps({"qid": qid, "query": f"query {qid}", "vid": f"video{qid % 500}_60.0_210.0",
                                "relevant_windows": windows}) + "\n")
            preds = []
            for _ in range(QVH_PREDICTIONS):
                if rng.random() < 0.6:  # a noisy copy of a true window
                    s, e = windows[int(rng.integers(n))]
                    s = float(np.clip(s + rng.normal(0, 4), 0, QVH_VIDEO_SECONDS - 2))
                    e = float(np.clip(e + rng.normal(0, 4), s + 2, QVH_VIDEO_SECONDS))
                else:
                    s = float(rng.uniform(0, QVH_VIDEO_SECONDS - 4))
                    e = float(rng.uniform(s + 2, QVH_VIDEO_SECONDS))
                preds.append([round(s, 4), round(e, 4), round(float(rng.random()), 4)])
            if rng.random() < 0.05:  # a window listed twice
                preds[-1] = list(preds[int(rng.integers(QVH_PREDICTIONS - 1))])
                duplicates += 1
            p.write(json.dumps({"qid": qid, "query": f"query {qid}", "vid": f"video{qid % 500}_60.0_210.0",
                                "pred_relevant_windows": preds}) + "\n")
    return gt, pred, duplicates


def write_tvr(folder: Path, rng: np.random.Generator) -> tuple[Path, Path]:
    gt, pred = folder / "tvr_val_gt.jsonl", folder / "tvr_val_pred.json"
    durations = rng.uniform(60, 150, TVR_VIDEOS)
    video_of = rng.integers(0, TVR_VIDEOS, TVR_QUERIES)
    types = np.array(["v", "t", "vt"])[rng.integers(0, 3, TVR_QUERIES)]
    with gt.open("w") as g:
        for q in range(TVR_QUERIES):
            v = int(video_of[q])
            s = float(rng.uniform(0, durations[v] - 10))
            e = float(min(durations[v], s + rng.uniform(2, 30)))
            g.write(json.dumps({"desc_id": q, "desc": f"description {q}", "vid_name": f"tvr_video_{v}",
                                "ts": [round(s, 2), round(e, 2)], "duration": round(float(durations[v]), 2),
                                "type": str(types[q])}) + "\n")
    with pred.open("w") as p:
        p.write('{"video2idx": ' + json.dumps({f"tvr_video_{v}": v for v in range(TVR_VIDEOS)}))
        for task in ("VCMR", "SVMR", "VR"):
            p.write(f', "{task}": [\n')
            for q in range(TVR_QUERIES):
                v = int(video_of[q])
                videos = rng.integers(0, TVR_VIDEOS, TVR_PREDICTIONS)
                if task == "SVMR":
                    videos[:] = v
                elif rng.random() < 0.4:
                    videos[int(rng.integers(0, 10))] = v
                starts = rng.uniform(0, 120, TVR_PREDICTIONS)
                ends = starts + rng.uniform(2, 30, TVR_PREDICTIONS)
                if task == "VR":
                    starts[:] = 0
                    ends[:] = 0
                scores = np.sort(rng.random(TVR_PREDICTIONS))[::-1]
                rows = ",".join(f"[{int(a)},{b:.2f},{c:.2f},{d:.4f}]" for a, b, c, d in zip(videos, starts, ends, scores))
                p.write(("," if q else "") + f'{{"desc_id": {q}, "predictions": [{rows}]}}\n')
            p.write("]")
        p.write("}\n")
    return gt, pred


def _env() -> dict[str, str]:
    import _setup  # noqa: F401 - sets SECRET_KEY and the other defaults benches run with

    env = dict(os.environ)
    env.setdefault("DATABASE_URL", _setup.DEFAULT_URL)  # never connected to: evaluate stores nothing
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    env.setdefault("LOG_LEVEL", "WARNING")
    return env


def time_subprocess(args: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB of the child, its stdout) of `manage.py evaluate ARGS`."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(REPO / "manage.py"), "evaluate", *args], env=_env(), cwd=REPO,
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"manage.py evaluate failed:\n{done.stderr}")
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, done.stdout


def time_in_process(args: list[str]) -> float:
    from django.core.management import call_command

    call_command("evaluate", *args, stdout=io.StringIO())  # warm-up: imports, first allocations
    started = time.perf_counter()
    call_command("evaluate", *args, stdout=io.StringIO())
    return time.perf_counter() - started


def bench(label: str, args: list[str], sizes: str) -> None:
    wall, rss, out = time_subprocess(args)
    warm = time_in_process(args)
    doc = json.loads(out.splitlines()[0])
    shown = ", ".join(f"{k} {v}" for k, v in list(doc["measures"].items())[:4])
    print(f"{label}: {sizes}")
    print(f"  manage.py evaluate, fresh process: {wall:.2f} s wall, peak RSS {rss:.0f} MB")
    print(f"  call_command in a warm process:   {warm:.2f} s")
    print(f"  {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ground-truth", type=Path, help="a QVHighlights ground truth (JSON Lines)")
    parser.add_argument("--predictions", type=Path, help="a QVHighlights prediction file (JSON Lines)")
    parser.add_argument("--tvr-ground-truth", type=Path)
    parser.add_argument("--tvr-predictions", type=Path)
    parser.add_argument("--skip-tvr", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="write the synthetic files here and keep them")
    args = parser.parse_args()
    for a, b in ((args.ground_truth, args.predictions), (args.tvr_ground_truth, args.tvr_predictions)):
        if (a is None) != (b is None):
            parser.error("give a ground truth and a prediction file together")

    os.environ.update(_env())
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)

        if args.ground_truth:
            gt, pred, sizes = args.ground_truth, args.predictions, "given files"
        else:
            started = time.perf_counter()
            gt, pred, duplicates = write_qvhighlights(folder, rng)
            sizes = (f"synthetic, {QVH_QUERIES} queries, {QVH_PREDICTIONS} windows each, {duplicates} listed twice "
                     f"(written in {time.perf_counter() - started:.1f} s)")
        sizes += f"; {pred.stat().st_size / 1e6:.1f} MB of predictions"
        bench("QVHighlights", [str(pred), "--judgments", str(gt), "--judgments-format", "qvhighlights",
                               "--output", "json"], sizes)

        if args.skip_tvr:
            return
        if args.tvr_ground_truth:
            gt, pred, sizes = args.tvr_ground_truth, args.tvr_predictions, "given files"
        else:
            started = time.perf_counter()
            gt, pred = write_tvr(folder, rng)
            sizes = (f"synthetic, {TVR_QUERIES} queries, {TVR_PREDICTIONS} rows each in VCMR, SVMR and VR "
                     f"(written in {time.perf_counter() - started:.1f} s)")
        sizes += f"; {pred.stat().st_size / 1e6:.0f} MB of predictions"
        bench("TVR", [str(pred), "--judgments", str(gt), "--judgments-format", "tvr", "--output", "json"], sizes)


if __name__ == "__main__":
    main()
