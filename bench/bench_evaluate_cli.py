"""Benchmark: `manage.py evaluate` end to end against the official tools, on the same files.

Wall time of whole processes (interpreter start, imports, reading, scoring, printing), like
hyperfine: one warm-up, then the median (and min-max) of --repeat runs, for each tool and ours:

  * TRECVID (sample_eval qrels): NIST's `sample_eval.pl -q QRELS RUN` (one process per run, as the
    tool takes one run) against `evaluate RUN... --judgments QRELS --judgments-format sample_eval
    --output sample_eval` (one process for all runs). Conventions: TRECVID's (the first 1,000 shots
    per topic, sample_eval's tie rule, AP scaled when R-hat > 1,000), every per-topic line printed.
  * TREC (5-column-free `topic 0 doc rel` qrels): `trec_eval -q QRELS RUN` per run against
    `evaluate RUN... --judgments QRELS --judgments-format qrels --output trec_eval`. Conventions:
    trec_eval's (relevant at rel >= 1, ties by descending doc id, every query printed). Without
    --trec-eval (the CLI is not installed here and cannot be downloaded) trec_eval's C core is timed
    through pytrec_eval in a fresh interpreter: parse both files, evaluate the same measures, print.

Files: the repository's fixtures (tests/fixtures/evaluation/trecvid*, trec*) and, unless given,
seeded synthetic files of the real sizes written to a temporary folder: TRECVID AVS (20 topics,
125,000-line stratified qrels as bench_trecvid_judgments.py, 2 runs x 20 x 1,000 shots) and TREC
(50 queries, 100,000-line qrels, 2 runs x 50 x 1,000 docs). Nothing is stored; no database is used.
Goal (issue 26): ours within 2x of each tool on the TREC-sized files.

    .venv/bin/python bench/bench_evaluate_cli.py --sample-eval /path/sample_eval.pl [--trec-eval /path/trec_eval]
    (--trecvid-qrels F --trecvid-run R [--trecvid-run R2] / --trec-qrels F --trec-run R ... for your own files)
"""
from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "evaluation"
SEED = 2021
AVS_TOPICS, TREC_QUERIES, DEPTH, RUNS = 20, 50, 1000, 2
# (pooled shots per topic, judged fraction, probability a judged shot is relevant): bench_trecvid_judgments.py's design
STRATA = ((250, 1.0, 0.4), (2000, 0.3, 0.12), (4000, 0.1, 0.03))
TREC_POOL = 2000  # judged docs per query: 50 x 2,000 = 100,000 qrels lines
PYTREC_MEASURES = ("map", "P_5", "P_10", "ndcg_cut_10", "recip_rank", "bpref")
# `evaluate`'s default qrels measures, by their ir_measures names (the same six as PYTREC_MEASURES)
OUR_TREC_MEASURES = ("AP", "P@5", "P@10", "nDCG@10", "RR", "bpref")

PYTREC_SCRIPT = """
import sys, pytrec_eval
qrels_path, measures, runs = sys.argv[1], sys.argv[2].split(','), sys.argv[3:]
with open(qrels_path) as f:
    qrels = pytrec_eval.parse_qrel(f)
evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(measures))
for path in runs:
    with open(path) as f:
        run = pytrec_eval.parse_run(f)
    out = []
    for q, values in sorted(evaluator.evaluate(run).items()):
        out.extend(f"{m:<22}\\t{q}\\t{v:.4f}" for m, v in sorted(values.items()))
    print("\\n".join(out))
"""


def write_avs(folder: Path) -> tuple[Path, list[Path]]:
    rng = np.random.default_rng(SEED)
    qrels = folder / "avs.sample_eval.qrels"
    pool = sum(n for n, _, _ in STRATA)
    truth: dict[int, dict[int, int]] = {}
    with qrels.open("w") as out:
        for t in range(AVS_TOPICS):
            topic = 1701 + t
            pooled = rng.choice(1_000_000, size=pool, replace=False)
            truth[topic] = {}
            start = 0
            for stratum, (n, judged, p_rel) in enumerate(STRATA, start=1):
                for shot in pooled[start:start + n]:
                    relevant = int(rng.random() < p_rel)
                    truth[topic][int(shot)] = relevant
                    out.write(f"{topic} 0 shot{shot:07d} {stratum} {relevant if rng.random() < judged else -1}\n")
                start += n
    return qrels, _write_runs(folder, "avs", truth, rng, 1_000_000)


def write_trec(folder: Path) -> tuple[Path, list[Path]]:
    rng = np.random.default_rng(SEED + 1)
    qrels = folder / "trec.qrels"
    truth: dict[int, dict[int, int]] = {}
    with qrels.open("w") as out:
        for q in range(TREC_QUERIES):
            topic = 401 + q
            docs = rng.choice(500_000, size=TREC_POOL, replace=False)
            grades = rng.choice(3, size=TREC_POOL, p=(0.85, 0.1, 0.05))
            truth[topic] = {int(d): int(g) for d, g in zip(docs, grades)}
            out.writelines(f"{topic} 0 doc{d:07d} {g}\n" for d, g in zip(docs, grades))
    return qrels, _write_runs(folder, "trec", truth, rng, 500_000)


def _write_runs(folder: Path, prefix: str, truth: dict[int, dict[int, int]], rng, collection: int) -> list[Path]:
    name = "shot" if prefix == "avs" else "doc"
    runs = []
    for r in range(RUNS):
        quality = 1.5 + r * 0.5
        path = folder / f"{prefix}_run{r + 1}.txt"
        with path.open("w") as out:
            for topic, judged in truth.items():
                pooled = np.fromiter(judged, dtype=np.int64)
                inside = rng.choice(pooled, size=int(DEPTH * 0.9), replace=False)
                outside = rng.choice(collection, size=DEPTH - len(inside), replace=False)
                candidates = np.unique(np.concatenate([inside, outside]))[:DEPTH]
                rel = np.array([judged.get(int(s), 0) for s in candidates])
                score = quality * rel + rng.normal(size=len(candidates))
                out.writelines(f"{topic} Q0 {name}{candidates[i]:07d} {rank} {score[i]:.6f} run{r + 1}\n"
                               for rank, i in enumerate(np.argsort(-score), start=1))
        runs.append(path)
    return runs


def timed(commands: list[list[str]], repeat: int, env: dict[str, str]) -> list[float]:
    """Wall seconds of running the commands one after the other, `repeat` times after one warm-up."""
    times = []
    for i in range(repeat + 1):
        t = time.perf_counter()
        for command in commands:
            subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
        if i:
            times.append(time.perf_counter() - t)
    return times


def shown(times: list[float]) -> str:
    return f"{statistics.median(times):7.3f} s  ({min(times):.3f}-{max(times):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample-eval", type=Path, metavar="PATH", help="NIST's sample_eval.pl (run with perl)")
    parser.add_argument("--trec-eval", type=Path, metavar="PATH",
                        help="a trec_eval binary; without it trec_eval's C core is timed through pytrec_eval")
    parser.add_argument("--trecvid-qrels", type=Path, metavar="FILE", help="sample_eval qrels (default: synthetic)")
    parser.add_argument("--trecvid-run", type=Path, action="append", default=[], metavar="FILE")
    parser.add_argument("--trec-qrels", type=Path, metavar="FILE", help="TREC qrels (default: synthetic)")
    parser.add_argument("--trec-run", type=Path, action="append", default=[], metavar="FILE")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per command after one warm-up (default 5)")
    args = parser.parse_args()
    if bool(args.trecvid_qrels) != bool(args.trecvid_run) or bool(args.trec_qrels) != bool(args.trec_run):
        parser.error("give a qrels file together with at least one run file")

    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings", LOG_LEVEL="WARNING")
    env.setdefault("SECRET_KEY", secrets.token_urlsafe(50))  # a throwaway key: DEBUG stays off, as in production
    manage = [sys.executable, str(REPO / "manage.py"), "evaluate"]

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        avs = (args.trecvid_qrels, args.trecvid_run) if args.trecvid_qrels else write_avs(folder)
        trec = (args.trec_qrels, args.trec_run) if args.trec_qrels else write_trec(folder)
        print(f"inputs ready in {time.perf_counter() - t:.1f} s; median of {args.repeat} runs after one warm-up")
        cases = [
            ("TRECVID fixtures", "sample_eval",
             (FIXTURES / "trecvid.qrels", [FIXTURES / "trecvid_run_a.txt", FIXTURES / "trecvid_run_b.txt"])),
            ("TRECVID AVS-sized", "sample_eval", avs),
            ("TREC fixtures", "qrels", (FIXTURES / "trec.qrels", [FIXTURES / "trec_run_a.txt", FIXTURES / "trec_run_b.txt"])),
            ("TREC-sized", "qrels", trec),
        ]
        for title, fmt, (qrels, runs) in cases:
            lines = sum(1 for _ in qrels.open())
            run_lines = sum(sum(1 for _ in run.open()) for run in runs)
            print(f"\n{title}: {qrels.name} ({lines:,} lines), {len(runs)} runs ({run_lines:,} lines)")
            ours = [*manage, *map(str, runs), "--judgments", str(qrels), "--judgments-format", fmt]
            if fmt == "sample_eval":
                if args.sample_eval:
                    tool = shown(timed([["perl", str(args.sample_eval), "-q", str(qrels), str(r)] for r in runs],
                                       args.repeat, env))
                    print(f"  sample_eval.pl -q (one process a run)          {tool}")
                    theirs = "".join(subprocess.run(["perl", str(args.sample_eval), "-q", str(qrels), str(r)], env=env,
                                                    check=True, capture_output=True, text=True).stdout for r in runs)
                    mine = subprocess.run([*ours, "--output", "sample_eval"], env=env, check=True, capture_output=True,
                                          text=True).stdout
                    print(f"  same output as sample_eval.pl, byte for byte: {theirs == mine}")
                else:
                    print("  sample_eval.pl: not timed (give --sample-eval PATH)")
            else:
                ours += ["--output", "trec_eval", "--measures", *OUR_TREC_MEASURES]
                if args.trec_eval:
                    commands = [[str(args.trec_eval), "-q", *sum((["-m", m] for m in PYTREC_MEASURES), []),
                                 str(qrels), str(r)] for r in runs]
                    print(f"  trec_eval -q (one process a run)               {shown(timed(commands, args.repeat, env))}")
                else:
                    command = [sys.executable, "-c", PYTREC_SCRIPT, str(qrels), ",".join(PYTREC_MEASURES), *map(str, runs)]
                    print(f"  pytrec_eval (trec_eval's C core; no CLI here)  {shown(timed([command], args.repeat, env))}")
            if fmt == "sample_eval":
                ours += ["--output", "sample_eval"]
            print(f"  manage.py evaluate (one process, all runs)     {shown(timed([ours], args.repeat, env))}")


if __name__ == "__main__":
    main()
