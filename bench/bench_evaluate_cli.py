"""Benchmark: `manage.py evaluate` end to end against the official tools, on the same files.

Wall time of whole processes (interpreter start, imports, reading, scoring, printing), taken
interleaved so both sides see the same machine: after one warm-up of each, --repeat rounds of the
tool then ours, and per round the ratio ours / tool; printed are each side's median (min-max), the
median of the per-round ratios with their spread, and the load average before and after the case
(one tool timed five times and then the other let a changing load swing a ratio from 0.46x to 1.43x
within minutes, issue 40). Each case prints both command lines ($TMP: the synthetic files' folder),
and the header says whether our side runs from cached bytecode (with PYTHONDONTWRITEBYTECODE and
no cache the repository's modules are compiled on every run, about 20 ms of CPU; the installed
packages of the other side come compiled):

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
Goal (issue 40): ours at most 1.0x pytrec_eval on the TREC-sized files (issue 26: within 2x of each tool).

    .venv/bin/python bench/bench_evaluate_cli.py --sample-eval /path/sample_eval.pl [--trec-eval /path/trec_eval]
    .venv/bin/python bench/bench_evaluate_cli.py --cases trec-sized --repeat 15   (the issue-40 figure alone)
    (--trecvid-qrels F --trecvid-run R [--trecvid-run R2] / --trec-qrels F --trec-run R ... for your own files)
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import secrets
import shlex
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


CASES = ("trecvid-fixtures", "trecvid-sized", "trec-fixtures", "trec-sized")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(commands: list[list[str]], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of running the commands one after the other."""
    t, cpu = time.perf_counter(), _children_cpu()
    for command in commands:
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t, _children_cpu() - cpu


def interleaved(tool: list[list[str]], ours: list[list[str]], rounds: int, env: dict[str, str]
                ) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(tool's (wall, CPU) times, ours) over `rounds` rounds of tool then ours, after one warm-up of
    each: both sides of a round see the same load, so the round's ratio is what a changing load
    distorts least."""
    run_once(tool, env)
    run_once(ours, env)
    theirs, mine = [], []
    for _ in range(rounds):
        theirs.append(run_once(tool, env))
        mine.append(run_once(ours, env))
    return theirs, mine


def shown(times: list[float]) -> str:
    return f"{statistics.median(times):7.3f} s  ({min(times):.3f}-{max(times):.3f})"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def command_line(command: list[str], folder: Path) -> str:
    """A command as a shell would take it, the synthetic files' folder as $TMP and the pytrec_eval
    script by its name here."""
    return shlex.join("PYTREC_SCRIPT" if part == PYTREC_SCRIPT else part for part in command).replace(str(folder), "$TMP")


def bytecode_note(env: dict[str, str]) -> str:
    """Whether our side runs from cached bytecode: with PYTHONDONTWRITEBYTECODE and no cache the
    repository's modules are compiled on every run (~20 ms CPU of `evaluate` on this machine),
    while the installed packages (NumPy, pytrec_eval) come with theirs."""
    module = REPO / "annotation" / "services" / "evaluation" / "measures.py"
    cache = Path(importlib.util.cache_from_source(str(module)))
    if cache.is_file():
        # A .pyc's header: magic, flags, then the source's mtime and size it was compiled from.
        header, source = cache.read_bytes()[:16], module.stat()
        if (header[:4] == importlib.util.MAGIC_NUMBER and int.from_bytes(header[8:12], "little")
                == int(source.st_mtime) & 0xFFFFFFFF and int.from_bytes(header[12:16], "little") == source.st_size):
            return "the repository's modules run from cached bytecode (an up-to-date __pycache__)"
    if env.get("PYTHONDONTWRITEBYTECODE"):
        return "the repository's modules are compiled on every run (PYTHONDONTWRITEBYTECODE is set, no up-to-date __pycache__)"
    return "the repository's modules are compiled once, by the warm-up"


def compared(label: str, tool: list[list[str]], ours: list[list[str]], rounds: int, env: dict[str, str],
             folder: Path) -> None:
    for side, commands in (("tool", tool), ("ours", ours)):
        for command in commands:
            print(f"  {side}: {command_line(command, folder)}")
    before = load()
    theirs, mine = interleaved(tool, ours, rounds, env)
    print(f"  {label:<47}{shown([w for w, _ in theirs])}  CPU {shown([c for _, c in theirs])}")
    print(f"  {'manage.py evaluate (one process, all runs)':<47}{shown([w for w, _ in mine])}  CPU "
          f"{shown([c for _, c in mine])}")
    # CPU time (user + system) is what a busy machine distorts least; wall time is what a user waits.
    for what, index in (("wall", 0), ("CPU", 1)):
        ratios = [m[index] / t[index] for m, t in zip(mine, theirs)]
        print(f"  ours / tool ({what}), median of {rounds} interleaved rounds: {statistics.median(ratios):.2f}x "
              f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x)")
    print(f"  load average (1, 5, 15 min) {before} before, {load()} after")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample-eval", type=Path, metavar="PATH", help="NIST's sample_eval.pl (run with perl)")
    parser.add_argument("--trec-eval", type=Path, metavar="PATH",
                        help="a trec_eval binary; without it trec_eval's C core is timed through pytrec_eval")
    parser.add_argument("--trecvid-qrels", type=Path, metavar="FILE", help="sample_eval qrels (default: synthetic)")
    parser.add_argument("--trecvid-run", type=Path, action="append", default=[], metavar="FILE")
    parser.add_argument("--trec-qrels", type=Path, metavar="FILE", help="TREC qrels (default: synthetic)")
    parser.add_argument("--trec-run", type=Path, action="append", default=[], metavar="FILE")
    parser.add_argument("--repeat", type=int, default=9,
                        help="interleaved rounds (tool, then ours) after one warm-up of each (default 9)")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES),
                        help="which files to time (default: all four)")
    args = parser.parse_args()
    if bool(args.trecvid_qrels) != bool(args.trecvid_run) or bool(args.trec_qrels) != bool(args.trec_run):
        parser.error("give a qrels file together with at least one run file")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings", LOG_LEVEL="WARNING")
    env.setdefault("SECRET_KEY", secrets.token_urlsafe(50))  # a throwaway key: DEBUG stays off, as in production
    manage = [sys.executable, str(REPO / "manage.py"), "evaluate"]

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        cases = []
        if "trecvid-fixtures" in args.cases:
            cases.append(("TRECVID fixtures", "sample_eval",
                          (FIXTURES / "trecvid.qrels", [FIXTURES / "trecvid_run_a.txt", FIXTURES / "trecvid_run_b.txt"])))
        if "trecvid-sized" in args.cases:
            avs = (args.trecvid_qrels, args.trecvid_run) if args.trecvid_qrels else write_avs(folder)
            cases.append(("TRECVID AVS-sized", "sample_eval", avs))
        if "trec-fixtures" in args.cases:
            cases.append(("TREC fixtures", "qrels",
                          (FIXTURES / "trec.qrels", [FIXTURES / "trec_run_a.txt", FIXTURES / "trec_run_b.txt"])))
        if "trec-sized" in args.cases:
            trec = (args.trec_qrels, args.trec_run) if args.trec_qrels else write_trec(folder)
            cases.append(("TREC-sized", "qrels", trec))
        print(f"inputs ready in {time.perf_counter() - t:.1f} s; {args.repeat} interleaved rounds after one warm-up "
              f"of each side; {os.cpu_count()} cores; Python {sys.version.split()[0]}; {bytecode_note(env)}")
        for title, fmt, (qrels, runs) in cases:
            lines = sum(1 for _ in qrels.open())
            run_lines = sum(sum(1 for _ in run.open()) for run in runs)
            print(f"\n{title}: {qrels.name} ({lines:,} lines), {len(runs)} runs ({run_lines:,} lines)")
            ours = [*manage, *map(str, runs), "--judgments", str(qrels), "--judgments-format", fmt]
            if fmt == "sample_eval":
                ours += ["--output", "sample_eval"]
                if not args.sample_eval:
                    print("  sample_eval.pl: not timed (give --sample-eval PATH)")
                    continue
                tool = [["perl", str(args.sample_eval), "-q", str(qrels), str(r)] for r in runs]
                compared("sample_eval.pl -q (one process a run)", tool, [ours], args.repeat, env, folder)
                theirs = "".join(subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
                                 for command in tool)
                mine = subprocess.run(ours, env=env, check=True, capture_output=True, text=True).stdout
                print(f"  same output as sample_eval.pl, byte for byte: {theirs == mine}")
            else:
                ours += ["--output", "trec_eval", "--measures", *OUR_TREC_MEASURES]
                if args.trec_eval:
                    tool = [[str(args.trec_eval), "-q", *sum((["-m", m] for m in PYTREC_MEASURES), []),
                             str(qrels), str(r)] for r in runs]
                    compared("trec_eval -q (one process a run)", tool, [ours], args.repeat, env, folder)
                else:
                    tool = [[sys.executable, "-c", PYTREC_SCRIPT, str(qrels), ",".join(PYTREC_MEASURES),
                             *map(str, runs)]]
                    compared("pytrec_eval (trec_eval's C core; no CLI here)", tool, [ours], args.repeat, env, folder)


if __name__ == "__main__":
    main()
