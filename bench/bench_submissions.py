"""A run submitted to a release, scored with its holes (issue 38), on MSR-VTT 1K-A and MSVD.

World (seeded, bench_judging_simulation's): real caption and clip ids; every caption's relevant
clips are its original clip plus a Poisson(``--extra-relevant``) number of others drawn at random;
a run scores a clip ``mu * relevant + noise`` and lists its best ``DEPTH`` (10). Three runs are
pooled at depth 10 (``--pooled`` qualities; their noises share half their variance, as the judging
benches' runs do) and released: the release's qrels are the truth of every pooled pair plus the
original positives. A fourth run, never pooled, is submitted at three qualities (``--submitted``:
better than, equal to and worse than the pooled runs); its noise leans on the pooled runs' by a
weight set by bisection so that the mean share of its top 10 the release judges is ``--overlap``
(default 0.5). Its holes: the pairs of its top 10 without a verdict.

For each submission the bench prints C@1, C@5, C@10 and AP (the release's leaderboard measures,
annotation.analysis.submissions / leaderboard) and the rank among the pooled runs they give:

- ``release``: against the release, holes as not relevant (submission_measures);
- ``machine k=...``: a simulated machine judge's verdicts on every hole (machine_filled_measures).
  bench_ppi's judges: ``f = calibrated sigmoid(b (2y - 1) + s + e)``, ``s`` the hole's share of the
  noise that put it in the run's top 10 (its errors sit on the hard pairs), ``b`` set so that the
  kappa of ``f >= 0.5`` against the truth over the holes is 0.4, 0.6 or 0.8; the verdict is ``f >= 0.5``;
- ``20% + machine k=...``: a uniform Poisson sample of the holes (pi = ``--sample``) judged by people,
  plus the machine's ``f`` on every hole: hole_fill_estimates (PPI++); over ``--replays`` samples the
  mean estimate, the share of 95% intervals that cover the truth (goal >= 0.93) and their mean width;
- ``truth``: every hole judged (the next release version).

Judged@10: the share of the run's top 10 with a verdict of any kind in that case (the machine's
counted; in the sampled case the human labels). Rank: 1 + the number of pooled runs scoring higher
(ties share the better rank), the pooled runs scored against the release (truth: with the holes
judged, which changes their AP only).

Then the time and peak memory of scoring one submission against a FIRE-scale release (27,750
queries, 555,000 judged pairs; synthetic ids; a run of depth ``--fire-depth``), in a child process
so its ru_maxrss is its own: submission_measures (1,000 bootstrap replicates), then
machine_filled_measures and hole_fill_estimates (a 20% sample of the top-10 holes, every hole
predicted; the run cut at 10 for the estimate, its sample's frame). Goal: under 30 s and 1 GB;
printed, never asserted.

    .venv/bin/python bench/bench_submissions.py --data DATASETS_DIR [--replays 200] [--overlap 0.5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_judging_simulation import DEPTH, load_msrvtt, load_msvd  # noqa: E402
from bench.bench_ppi import machine_judge  # noqa: E402
from annotation.analysis.leaderboard import clip_measure_names, clip_per_query  # noqa: E402
from annotation.analysis.submission_fill import hole_fill_estimates, machine_filled_measures  # noqa: E402
from annotation.analysis.submissions import submission_measures  # noqa: E402

KS = (1, 5, 10)
SHOWN = ("C@1", "C@5", "C@10", "AP")
CONFIDENCE = 0.95


def build_world(captions, clips, original, *, pooled, extra_relevant, seed):
    """The truth, the pooled runs' top 10, the release's qrels and what the submitted runs need."""
    rng = np.random.default_rng(seed)
    q_n, c_n = len(captions), len(clips)
    clip_index = {c: i for i, c in enumerate(clips)}
    relevant = np.zeros((q_n, c_n), dtype=bool)
    relevant[np.arange(q_n), [clip_index[original[c]] for c in captions]] = True
    for qi, k in enumerate(rng.poisson(extra_relevant, size=q_n)):
        if k:
            relevant[qi, rng.choice(c_n, size=min(k, c_n - 1), replace=False)] = True
    shared = rng.standard_normal((q_n, c_n))
    noises, tops = [], []
    for mu in pooled:
        noise = np.sqrt(0.5) * shared + np.sqrt(0.5) * rng.standard_normal((q_n, c_n))
        noises.append(noise)
        tops.append(np.argsort(-(mu * relevant + noise), axis=1)[:, :DEPTH])
    in_pool = np.zeros((q_n, c_n), dtype=bool)
    for top in tops:
        in_pool[np.arange(q_n)[:, None], top] = True
    in_pool[np.arange(q_n), [clip_index[original[c]] for c in captions]] = True
    qrels = {captions[qi]: {clips[c]: int(relevant[qi, c]) for c in np.flatnonzero(in_pool[qi])} for qi in range(q_n)}
    runs = {f"pooled_mu{mu:g}": ranked_of(top, captions, clips) for mu, top in zip(pooled, tops)}
    # The pooled runs' consensus noise: a submission leaning on it repeats their mistakes (and so
    # ranks what they ranked); one leaning away from it finds other clips.
    consensus = sum(noises) / np.sqrt(np.var(sum(noises)))
    return {"captions": captions, "clips": clips, "relevant": relevant, "in_pool": in_pool, "qrels": qrels,
            "runs": runs, "consensus": consensus, "rng": rng}


def ranked_of(top, captions, clips):
    return {captions[qi]: [clips[c] for c in top[qi]] for qi in range(len(captions))}


def submitted_run(world, mu, overlap, seed):
    """(top (Q, 10) clip indices, noise (Q, C), realised overlap): a run of quality ``mu`` whose noise
    is ``rho consensus + sqrt(1 - rho^2) own``, rho in [-1, 1] set by bisection so that the mean share
    of its top 10 inside the pool is ``overlap`` (the nearest end when out of reach)."""
    own = np.random.default_rng(seed).standard_normal(world["relevant"].shape)
    rows = np.arange(len(world["captions"]))[:, None]

    def make(rho):
        noise = rho * world["consensus"] + np.sqrt(1 - rho * rho) * own
        top = np.argsort(-(mu * world["relevant"] + noise), axis=1)[:, :DEPTH]
        return top, noise, float(world["in_pool"][rows, top].mean())

    lo, hi = -1.0, 1.0
    for _ in range(20):
        mid = (lo + hi) / 2
        if make(mid)[2] < overlap:
            lo = mid
        else:
            hi = mid
    return make((lo + hi) / 2)


def holes_world(world, top, noise):
    """bench_ppi's per-query padded arrays over the submitted run's holes, for its machine_judge:
    truth ``y``, ``valid``, ``known`` (none), ``common_noise`` (the part of the run's noise with the
    variance of bench_ppi's: what pushed the pair into the top 10, or a relevant one down), and the
    hole keys."""
    q_n = len(world["captions"])
    rows = np.arange(q_n)[:, None]
    is_hole = ~world["in_pool"][rows, top]
    n_max = max(int(is_hole.sum(axis=1).max()), 1)
    y = np.zeros((q_n, n_max))
    s = np.zeros((q_n, n_max))
    valid = np.zeros((q_n, n_max), dtype=bool)
    keys = []
    for qi in range(q_n):
        cs = top[qi][is_hole[qi]]
        n = len(cs)
        y[qi, :n] = world["relevant"][qi, cs]
        s[qi, :n] = np.sqrt(0.5) * noise[qi, cs]
        valid[qi, :n] = True
        keys.append([(world["captions"][qi], world["clips"][c]) for c in cs])
    return {"y": y, "common_noise": s, "valid": valid, "known": np.zeros_like(valid), "keys": keys}


def measures_of(ranked, qrels):
    """Means of C@K and AP over the queries the qrels judge (every query here), trec_eval's."""
    queries = sorted(q for q in ranked if q in qrels)
    per = clip_per_query(ranked, qrels, queries, clip_measure_names(KS))
    return {m: float(per[m].mean()) for m in SHOWN}


def judged_at_10(ranked, qrels) -> float:
    return float(np.mean([sum(c in qrels.get(q, {}) for c in clips[:10]) / min(10, len(clips))
                          for q, clips in ranked.items()]))


def rank_among(value: float, others: list[float]) -> int:
    return 1 + sum(o > value + 1e-12 for o in others)


def run_dataset(name, captions, clips, original, args):
    t0 = time.perf_counter()
    pooled = [float(x) for x in args.pooled.split(",")]
    world = build_world(captions, clips, original, pooled=pooled, extra_relevant=args.extra_relevant, seed=args.seed)
    qrels = world["qrels"]
    pooled_release = {run: measures_of(ranked, qrels) for run, ranked in world["runs"].items()}
    n_pairs = sum(len(v) for v in qrels.values())
    print(f"\n== {name}: {len(captions)} queries, {len(clips)} clips; release: {n_pairs} judged pairs "
          f"({100 * np.mean([g for v in qrels.values() for g in v.values()]):.1f}% relevant) from "
          f"{len(pooled)} runs pooled at depth {DEPTH}")
    print("   pooled runs against the release: " + "; ".join(
        f"{run} " + ", ".join(f"{m} {v[m]:.3f}" for m in SHOWN) for run, v in pooled_release.items()))
    rows = []
    coverage_kappas = {float(k) for k in (args.coverage_kappas or args.kappas).split(",")}
    for label, mu in zip(("better", "equal", "worse"), (float(x) for x in args.submitted.split(","))):
        if label not in args.qualities.split(","):
            continue
        top, noise, realised = submitted_run(world, mu, args.overlap, args.seed + int(100 * mu))
        ranked = ranked_of(top, captions, clips)
        hw = holes_world(world, top, noise)
        holes = [k for ks in hw["keys"] for k in ks]
        cap_index = {c: i for i, c in enumerate(captions)}
        clip_index = {c: i for i, c in enumerate(clips)}
        truth_labels = {k: int(world["relevant"][cap_index[k[0]], clip_index[k[1]]]) for k in holes}
        full = {q: dict(v) for q, v in qrels.items()}
        for (q, c), y in truth_labels.items():
            full[q][c] = y
        pooled_truth = {run: measures_of(r, full) for run, r in world["runs"].items()}
        release = submission_measures(ranked, qrels, ks=KS, holes_k=DEPTH, depth=None, replicates=200,
                                      seed=args.seed, confidence=CONFIDENCE)
        release_values = {m: release["values"][m]["value"] for m in SHOWN}
        truth = measures_of(ranked, full)
        head = (f"{label} (mu {mu:g}): overlap with the pool {realised:.2f} (asked {args.overlap:g}); "
                f"{len(holes)} holes in its top 10, {100 * np.mean(list(truth_labels.values())):.1f}% relevant")
        print("   " + head)
        cases = [("release (holes not relevant)", release_values, release["judged"]["Judged@10"], None, pooled_release),
                 ("truth (all holes judged)", truth, 1.0, None, pooled_truth)]
        if len(set(truth_labels.values())) < 2:
            print("     every hole has the same truth: a judge's kappa is undefined, no machine case (a larger world "
                  "needed: --data)")
        for kappa_target in (float(k) for k in args.kappas.split(",") if len(set(truth_labels.values())) > 1):
            f, realised_kappa, err_hard, err_easy = machine_judge(hw, kappa_target, args.seed + int(100 * kappa_target),
                                                                  "binned")
            predictions = {k: float(f[qi, j]) for qi, ks in enumerate(hw["keys"]) for j, k in enumerate(ks)}
            verdicts = {k: int(p >= 0.5) for k, p in predictions.items()}
            filled = machine_filled_measures(ranked, qrels, verdicts, ks=KS, depth=None)
            cases.append((f"machine kappa {realised_kappa:.2f} (hard-pair errors {100 * err_hard:.0f}% / rest "
                          f"{100 * err_easy:.0f}%)", {m: filled["values"][m] for m in SHOWN},
                          filled["judged"]["Judged@10"], None, pooled_release))
            if kappa_target not in coverage_kappas:
                continue
            sampled = coverage(ranked, qrels, predictions, truth_labels, truth, args, args.seed + int(1000 * mu))
            judged_sampled = judged_at_10(ranked, qrels) + args.sample * (1 - judged_at_10(ranked, qrels))
            cases.append((f"{100 * args.sample:g}% sample + machine kappa {realised_kappa:.2f}",
                          {m: sampled[m]["mean"] for m in SHOWN}, judged_sampled, sampled, pooled_release))
        for case, values, judged, cov, against in cases:
            ranks = {m: rank_among(values[m], [v[m] for v in against.values()]) for m in SHOWN}
            rows.append((name, label, case, values, judged, cov, ranks))
            extra = ("; coverage " + ", ".join(f"{m} {cov[m]['cover']:.3f}" for m in SHOWN)
                     + "; mean width " + ", ".join(f"{m} {cov[m]['width']:.3f}" for m in SHOWN)) if cov else ""
            print(f"     {case}: " + ", ".join(f"{m} {values[m]:.3f}" for m in SHOWN)
                  + f"; Judged@10 {judged:.2f}; rank " + "/".join(str(ranks[m]) for m in SHOWN) + extra)
    print(f"   {time.perf_counter() - t0:.0f} s")
    return rows


def coverage(ranked, qrels, predictions, truth_labels, truth, args, seed):
    """``--replays`` uniform Poisson samples of the holes (pi = ``--sample``): hole_fill_estimates'
    mean estimate, interval coverage of the truth and mean width per measure."""
    rng = np.random.default_rng(seed)
    keys = list(truth_labels)
    pi = {k: args.sample for k in keys}
    stats = {m: {"est": [], "cover": [], "width": []} for m in SHOWN}
    for replay in range(args.replays):
        if replay and replay % 10 == 0:
            print(f"       ... {replay} of {args.replays} samples", flush=True)
        take = rng.random(len(keys)) < args.sample
        labels = {k: bool(truth_labels[k]) for k, t in zip(keys, take) if t}
        out = hole_fill_estimates(ranked, qrels, predictions, labels, pi, ks=KS, depth=None, confidence=CONFIDENCE)
        for m in SHOWN:
            cell = out["values"][m]
            stats[m]["est"].append(cell["estimate"])
            stats[m]["cover"].append(cell["ci_low"] - 1e-12 <= truth[m] <= cell["ci_high"] + 1e-12)
            stats[m]["width"].append(cell["ci_high"] - cell["ci_low"])
    return {m: {"mean": float(np.mean(s["est"])), "cover": float(np.mean(s["cover"])),
                "width": float(np.mean(s["width"]))} for m, s in stats.items()}


# ------------------------------------------------------------------ FIRE scale, in a child process

def fire_child(queries: int, pairs: int, depth: int, seed: int) -> dict:
    """Scores one synthetic submission against a synthetic FIRE-scale release; returns the times and
    this process's peak RSS."""
    rng = np.random.default_rng(seed)
    per_query = pairs // queries
    pool_clips = 400
    t0 = time.perf_counter()
    qrels, ranked, predictions, labels, inclusion = {}, {}, {}, {}, {}
    for q in range(queries):
        query = f"q{q}"
        judged = rng.choice(pool_clips, size=per_query, replace=False)
        qrels[query] = {f"c{c}": int(rng.random() < 0.1) for c in judged}
        qrels[query][f"c{judged[0]}"] = 1
        order = rng.permutation(pool_clips)[:depth]
        ranked[query] = [f"c{c}" for c in order]
    build = time.perf_counter() - t0
    t1, c1 = time.perf_counter(), time.process_time()
    result = submission_measures(ranked, qrels, ks=KS, holes_k=DEPTH, depth=None, replicates=1000, seed=seed,
                                 confidence=CONFIDENCE)
    scored, scored_cpu = time.perf_counter() - t1, time.process_time() - c1
    for q, c in result["hole_pairs"]:
        p = float(rng.random())
        predictions[(q, c)] = p
        inclusion[(q, c)] = 0.2
        if rng.random() < 0.2:
            labels[(q, c)] = bool(rng.random() < p)
    t2, c2 = time.perf_counter(), time.process_time()
    filled = machine_filled_measures(ranked, qrels, {k: int(p >= 0.5) for k, p in predictions.items()}, ks=KS,
                                     depth=DEPTH)
    machine, machine_cpu = time.perf_counter() - t2, time.process_time() - c2
    t3, c3 = time.perf_counter(), time.process_time()
    estimate = hole_fill_estimates(ranked, qrels, predictions, labels, inclusion, ks=KS, depth=DEPTH,
                                   confidence=CONFIDENCE)
    ppi, ppi_cpu = time.perf_counter() - t3, time.process_time() - c3
    return {"queries": queries, "pairs": sum(len(v) for v in qrels.values()), "run_lines": queries * depth,
            "holes_top10": result["holes"]["total"], "filled": filled["filled"], "sampled": estimate["counts"]["sampled"],
            "build_s": build, "submission_measures_s": scored, "machine_filled_s": machine, "hole_fill_s": ppi,
            "cpu_s": {"submission_measures": scored_cpu, "machine_filled": machine_cpu, "hole_fill": ppi_cpu},
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def fire_scale(args) -> dict:
    cmd = [sys.executable, __file__, "--fire-child", "--fire-queries", str(args.fire_queries), "--fire-pairs",
           str(args.fire_pairs), "--fire-depth", str(args.fire_depth), "--seed", str(args.seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    np.seterr(divide="ignore", invalid="ignore")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=None,
                    help="folder with msrvtt/msrvtt_1ka_test.csv and msvd/msvd_test.tsv (the full splits); "
                         "default: the repository's excerpts (bench_judging_simulation's loaders)")
    ap.add_argument("--replays", type=int, default=200, help="human samples of the holes per submission and judge")
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--pooled", default="2.8,2.4,2.0", help="qualities (mu) of the three pooled runs")
    ap.add_argument("--submitted", default="3.2,2.4,1.6", help="qualities of the better, equal and worse submission")
    ap.add_argument("--qualities", default="better,equal,worse",
                    help="which of the three submissions to run (a subset of better,equal,worse)")
    ap.add_argument("--overlap", type=float, default=0.5, help="mean share of the submission's top 10 in the pool")
    ap.add_argument("--sample", type=float, default=0.2, help="inclusion probability of each hole in the human sample")
    ap.add_argument("--kappas", default="0.4,0.6,0.8", help="the simulated machine judges' target kappas")
    ap.add_argument("--coverage-kappas", default=None,
                    help="the judges (of --kappas) whose human sample + machine estimate is replayed (default: all; "
                         "each replay is one hole_fill_estimates call, about 0.6 s of CPU at 1,000 queries)")
    ap.add_argument("--extra-relevant", type=float, default=4.0)
    ap.add_argument("--msvd-queries", type=int, default=1000)
    ap.add_argument("--datasets", default="msrvtt,msvd")
    ap.add_argument("--fire-queries", type=int, default=27_750)
    ap.add_argument("--fire-pairs", type=int, default=555_000)
    ap.add_argument("--fire-depth", type=int, default=100, help="clips the FIRE-scale submission ranks per query")
    ap.add_argument("--skip-fire", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: 5 replays, one judge, 200 MSVD queries, a 2,775-query FIRE-scale run")
    ap.add_argument("--fire-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fire_child:
        print(json.dumps(fire_child(args.fire_queries, args.fire_pairs, args.fire_depth, args.seed)))
        return
    if args.quick:
        args.replays, args.kappas, args.msvd_queries = 5, "0.6", 200
        args.fire_queries, args.fire_pairs = 2_775, 55_500
    print(f"seed {args.seed}; pooled mu {args.pooled}; submitted mu {args.submitted} (better, equal, worse); "
          f"overlap {args.overlap:g}; human sample pi {args.sample:g}; {args.replays} replays; judges kappa {args.kappas}")
    rows = []
    for name in filter(None, args.datasets.split(",")):
        if name == "msrvtt":
            captions, clips, original = load_msrvtt(args.data)
        elif name == "msvd":
            captions, clips, original = load_msvd(args.data, args.msvd_queries, args.seed)
        else:
            raise SystemExit(f"unknown dataset {name!r}")
        rows += run_dataset(name, captions, clips, original, args)
    print("\n| dataset | submitted | case | C@1 | C@5 | C@10 | AP | Judged@10 | rank C@1/C@5/C@10/AP "
          "| 95% coverage C@1/C@5/C@10/AP |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, label, case, values, judged, cov, ranks in rows:
        cover = " / ".join(f"{cov[m]['cover']:.3f}" for m in SHOWN) if cov else "–"
        print(f"| {name} | {label} | {case} | " + " | ".join(f"{values[m]:.3f}" for m in SHOWN)
              + f" | {judged:.2f} | " + "/".join(str(ranks[m]) for m in SHOWN) + f" | {cover} |")
    low = [cov[m]["cover"] for *_, cov, _ in rows if cov for m in SHOWN]
    if low:
        print(f"\nlowest coverage over every sampled cell: {min(low):.3f} (goal >= 0.93)")
    if not args.skip_fire:
        fire = fire_scale(args)
        total = fire["submission_measures_s"] + fire["machine_filled_s"] + fire["hole_fill_s"]
        print(f"\nFIRE scale: {fire['queries']} queries, {fire['pairs']} judged pairs, a run of {fire['run_lines']} "
              f"lines, {fire['holes_top10']} holes in its top 10 ({fire['sampled']} sampled): submission_measures "
              f"{fire['submission_measures_s']:.1f} s, machine_filled_measures {fire['machine_filled_s']:.1f} s, "
              f"hole_fill_estimates {fire['hole_fill_s']:.1f} s; total {total:.1f} s wall (goal < 30 s), "
              f"{sum(fire['cpu_s'].values()):.1f} s CPU (" + ", ".join(f"{k} {v:.1f}" for k, v in fire["cpu_s"].items())
              + f"); peak RSS of the scoring process {fire['peak_rss_mb']:.0f} MB (goal < 1024 MB; building the "
              f"inputs took {fire['build_s']:.1f} s); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
