"""Judging strategies replayed on MSR-VTT 1K-A and MSVD (issue 15): judge less, know more.

Over the real caption and clip ids of each dataset, builds several synthetic runs of different
quality and a seeded ground truth, pools their top 10, then replays the fully judged pool under
every judging strategy (200 seeded replays each by default, queries taking turns) and prints, per
dataset and strategy:

- the share of the pool's judgments needed to find 90% of its relevant pairs;
- at 30% of the judgments: every run's C@10 estimate error against the full-pool value (max over
  runs of the mean over replays, in points) and, for "sampled", the 95% interval coverage (share
  of replays whose interval covers the full-pool value, min over runs);
- Kendall's tau of the system ranking against the full-pool ranking at 10/30/50% of judgments;
- with ``--estimate-replays N``: estimate_metrics' (the report's) C@10, AP and nDCG@10 over N
  complete samples of the "sampled" design, per run: 95% interval coverage of the full-pool value,
  mean interval width and bias (mean estimate - full-pool value), in points, and the spread of the
  estimates over the samples divided by the mean reported se (1 when the se is right).

Curves (CSV and standalone SVG) go to ``--out`` (default /tmp/judging_bench).

Synthetic world (seeded): every caption's relevant clips are its original clip plus a
Poisson(``--extra-relevant``) number of other clips drawn at random. Run ``m`` scores a clip
``mu_m * relevant + noise``, the noise shared between runs for half its variance (runs make
correlated mistakes, as real models do), and lists its 10 best clips. Qualities ``mu`` spread
from strong to weak, so the runs' C@10 differ. MSVD has ~40 captions per clip: a seeded 1,000 of
its 27,763 captions are the queries (``--msvd-queries``).

    .venv/bin/python bench/bench_judging_simulation.py [--data DATASETS_DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.analysis.judging.estimates import estimate_metrics  # noqa: E402
from annotation.analysis.judging.simulation import curves_svg, simulate  # noqa: E402
from annotation.formats.judging_curves import curves_csv  # noqa: E402
from annotation.analysis.judging.strategies import (REPLAYABLE_STRATEGIES, StrategyParams,  # noqa: E402
                                                    inclusion_probabilities)

DEPTH = 10


#: Without --data the bench reads the repository's excerpts (30 MSR-VTT captions, 5 MSVD videos):
#: quick, and the same on every machine; --data DIR (the shared datasets' layout) for the full splits.
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "datasets"


def load_msrvtt(data: Path | None) -> tuple[list[str], list[str], dict[str, str]]:
    path = data / "msrvtt" / "msrvtt_1ka_test.csv" if data else FIXTURES / "msrvtt_1ka_head30.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for line, row in enumerate(rows, start=2):
        if not row.get("key") or not row.get("video_id"):
            raise ValueError(f"{path}, line {line}: missing key or video_id")
    captions = [r["key"] for r in rows]
    clips = sorted({r["video_id"] for r in rows})
    return captions, clips, {r["key"]: r["video_id"] for r in rows}


def load_msvd(data: Path | None, n_queries: int, seed: int) -> tuple[list[str], list[str], dict[str, str]]:
    path = data / "msvd" / "msvd_test.tsv" if data else FIXTURES / "msvd_test_head5.tsv"
    captions, original = [], {}
    clips = []
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if not line:
                continue
            if "\t" not in line:
                raise ValueError(f"{path}, line {line_no}: no tab between captions and video id")
            texts, video = line.rsplit("\t", 1)
            clips.append(video)
            for j, _ in enumerate(t for t in texts.split(", ") if t.strip()):
                key = f"{video}#{j}"
                captions.append(key)
                original[key] = video
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(captions), size=min(n_queries, len(captions)), replace=False))
    captions = [captions[i] for i in chosen]
    return captions, sorted(set(clips)), {c: original[c] for c in captions}


def synthetic_world(captions, clips, original, *, qualities, extra_relevant, seed):
    """Runs (run -> caption -> top-10 clip ids), truth over the pooled pairs, known originals."""
    rng = np.random.default_rng(seed)
    q_n, c_n = len(captions), len(clips)
    clip_index = {c: i for i, c in enumerate(clips)}
    relevant = np.zeros((q_n, c_n), dtype=bool)
    relevant[np.arange(q_n), [clip_index[original[c]] for c in captions]] = True
    extra = rng.poisson(extra_relevant, size=q_n)
    for qi, k in enumerate(extra):
        if k:
            relevant[qi, rng.choice(c_n, size=min(k, c_n - 1), replace=False)] = True
    shared = rng.standard_normal((q_n, c_n))
    rankings = {}
    for m, mu in enumerate(qualities):
        noise = np.sqrt(0.5) * shared + np.sqrt(0.5) * rng.standard_normal((q_n, c_n))
        score = mu * relevant + noise
        top = np.argsort(-score, axis=1)[:, :DEPTH]
        rankings[f"run{m + 1}_mu{mu:g}"] = {captions[qi]: [clips[c] for c in top[qi]] for qi in range(q_n)}
    truth = {}
    cap_index = {c: i for i, c in enumerate(captions)}
    for per_query in rankings.values():
        for q, items in per_query.items():
            for item in items:
                truth[(q, item)] = bool(relevant[cap_index[q], clip_index[item]])
    known = {q: {original[q]} for q in captions}
    return rankings, truth, known


def estimate_coverage(rankings, truth, known, params, replays, seed,
                      measures=("C@10", "AP", "nDCG@10"), confidence=0.95):
    """Coverage and mean width of estimate_metrics' intervals for every measure over ``replays``
    complete Poisson samples of the "sampled" design (expected size sample_rate of the pool),
    drawn directly (independent inclusions, pi from inclusion_probabilities): the report's path,
    where the simulation engine only follows C@K. Returns measure -> (runs, coverage, width, bias,
    spread ratio): bias = mean estimate - full-pool value; spread ratio = sd of the estimates over
    the samples / mean reported se."""
    runs = sorted(rankings)
    queries = sorted({q for r in runs for q in rankings[r]})
    pairs, pis = [], []
    for qi, q in enumerate(queries):
        index: dict[str, int] = {}
        lists = [np.asarray([index.setdefault(i, len(index)) for i in rankings[r].get(q, [])], dtype=np.int64)
                 for r in runs]
        items = list(index)
        kn = np.asarray([i in known.get(q, ()) for i in items])
        pi = inclusion_probabilities(lists, params=params, query_key=qi, n_pairs=len(items), known=kn)
        for item, p, k in zip(items, pi, kn):
            if not k:
                pairs.append((q, item))
                pis.append(float(p))
    pis = np.asarray(pis)
    full = {(e.run, e.measure): e.estimate for e in
            estimate_metrics(rankings, {pr: truth[pr] for pr in pairs}, {}, known_relevant=known,
                             measures=measures).runs}
    rng = np.random.default_rng(seed)
    hits = {key: [] for key in full}
    widths = {key: [] for key in full}
    estimates = {key: [] for key in full}
    ses = {key: [] for key in full}
    for _ in range(replays):
        take = rng.random(len(pairs)) < pis
        judged = {pairs[i]: truth[pairs[i]] for i in np.flatnonzero(take)}
        inclusion = {pairs[i]: pis[i] for i in np.flatnonzero(take)}
        for e in estimate_metrics(rankings, judged, inclusion, known_relevant=known, measures=measures,
                                  confidence=confidence).runs:
            hits[(e.run, e.measure)].append(e.ci_low - 1e-12 <= full[(e.run, e.measure)] <= e.ci_high + 1e-12)
            widths[(e.run, e.measure)].append(e.ci_high - e.ci_low)
            estimates[(e.run, e.measure)].append(e.estimate)
            ses[(e.run, e.measure)].append(e.se)
    return {m: (runs, [float(np.mean(hits[(r, m)])) for r in runs], [float(np.mean(widths[(r, m)])) for r in runs],
                [float(np.mean(estimates[(r, m)]) - full[(r, m)]) for r in runs],
                [float(np.std(estimates[(r, m)], ddof=1) / np.mean(ses[(r, m)])) if np.mean(ses[(r, m)]) > 0
                 and len(estimates[(r, m)]) > 1 else float("nan") for r in runs])
            for m in measures}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=None,
                    help="folder with msrvtt/msrvtt_1ka_test.csv and msvd/msvd_test.tsv (the full splits); "
                         "default: the repository's excerpts in tests/fixtures/datasets")
    ap.add_argument("--out", type=Path, default=Path("/tmp/judging_bench"))
    ap.add_argument("--replays", type=int, default=200)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--qualities", default="3.2,2.8,2.4,2.0,1.6,1.2",
                    help="signal strength of each synthetic run (one run per value)")
    ap.add_argument("--extra-relevant", type=float, default=4.0,
                    help="mean number of relevant clips per caption besides the original")
    ap.add_argument("--msvd-queries", type=int, default=1000)
    ap.add_argument("--warmup-depth", type=int, default=1)
    ap.add_argument("--sample-rate", type=float, default=0.3)
    ap.add_argument("--top-stratum-depth", type=int, default=1)
    ap.add_argument("--sample-weights", default="c_at_k", choices=("uniform", "ap_prior", "c_at_k"))
    ap.add_argument("--datasets", default="msrvtt,msvd")
    ap.add_argument("--estimate-replays", type=int, default=200,
                    help="complete samples drawn for estimate_metrics' C@10/AP/nDCG@10 coverage (0: skip)")
    ap.add_argument("--strategies", default=",".join(REPLAYABLE_STRATEGIES),
                    help="comma-separated subset of the strategies (default: all but active, which needs a "
                         "machine judge)")
    args = ap.parse_args()
    qualities = [float(x) for x in args.qualities.split(",")]
    params = StrategyParams(warmup_depth=args.warmup_depth, seed=args.seed, sample_rate=args.sample_rate,
                            top_stratum_depth=args.top_stratum_depth, sample_weights=args.sample_weights)
    checkpoints = sorted({0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0})
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"replays {args.replays}, seed {args.seed}, runs mu={qualities}, depth {DEPTH}, "
          f"warm-up depth {params.warmup_depth}, sampled: rate {params.sample_rate}, "
          f"top stratum depth {params.top_stratum_depth}, weights {params.sample_weights}")
    for name in args.datasets.split(","):
        t0 = time.perf_counter()
        if name == "msrvtt":
            captions, clips, original = load_msrvtt(args.data)
        elif name == "msvd":
            captions, clips, original = load_msvd(args.data, args.msvd_queries, args.seed)
        else:
            raise SystemExit(f"unknown dataset {name!r}")
        rankings, truth, known = synthetic_world(captions, clips, original, qualities=qualities,
                                                 extra_relevant=args.extra_relevant, seed=args.seed)
        share_rel = sum(truth.values()) / len(truth)
        result = simulate(rankings, truth, strategies=args.strategies.split(","), replays=args.replays,
                          seed=args.seed, checkpoints=checkpoints, params=params, known_relevant=known,
                          measure="C@10", depth=DEPTH,
                          # today's order is the random baseline: no warm-up
                          params_by_strategy={"pool_order": replace(params, warmup_depth=0)})
        elapsed = time.perf_counter() - t0
        print(f"\n== {name}: {len(captions)} queries, {len(clips)} clips, {result.n_pairs} pooled pairs, "
              f"{result.n_relevant} relevant ({100 * share_rel:.1f}%), {elapsed:.0f} s")
        print("   full-pool C@10: " + ", ".join(f"{r} {v:.3f}" for r, v in zip(result.runs, result.full_values)))
        c30 = checkpoints.index(0.3)
        cols = [checkpoints.index(x) for x in (0.1, 0.3, 0.5)]
        print(f"   {'strategy':<14} {'90% rel at':>10} {'rel@30%':>8} {'C@10 err@30% (pts, max run)':>28} "
              f"{'CI cover@30% (min run)':>23} {'tau@10%':>8} {'tau@30%':>8} {'tau@50%':>8}")
        for si, s in enumerate(result.strategies):
            cover = result.ci_coverage[si, c30]
            cover_s = f"{np.nanmin(cover):.3f}" if np.isfinite(cover).any() else "-"
            err_runs = result.metric_error[si, c30]
            found90 = f"{result.share_for_90[si]:.3f}" if np.isfinite(result.share_for_90[si]) else "never"
            print(f"   {s:<14} {found90:>10} {result.relevant_found[si, c30]:>8.3f} "
                  f"{100 * err_runs.max():>28.2f} {cover_s:>23} "
                  + " ".join(f"{result.kendall_tau[si, c]:>8.3f}" for c in cols))
        if "sampled" in result.strategies:
            sampled = result.strategies.index("sampled")
            print("   sampled @30%, per run: error (pts) / coverage / mean CI width (pts), "
                  "then the plain normal interval's coverage / width:")
            for ri, r in enumerate(result.runs):
                print(f"     {r:<12} C@10 {result.full_values[ri]:.3f}  "
                      f"err {100 * result.metric_error[sampled, c30, ri]:5.2f}  "
                      f"cover {result.ci_coverage[sampled, c30, ri]:.3f}  "
                      f"width {100 * result.ci_width[sampled, c30, ri]:5.2f}  |  normal: "
                      f"cover {result.ci_coverage_normal[sampled, c30, ri]:.3f}  "
                      f"width {100 * result.ci_width_normal[sampled, c30, ri]:5.2f}")
        if args.estimate_replays > 0:
            t1 = time.perf_counter()
            cov = estimate_coverage(rankings, truth, known, params, args.estimate_replays, args.seed)
            print(f"   estimate_metrics on {args.estimate_replays} complete samples of the sampled design "
                  f"(report path), coverage / mean width / bias (pts) / sd over samples:mean se, per run, "
                  f"{time.perf_counter() - t1:.0f} s:")
            for measure, (runs, cover, width, bias, spread) in cov.items():
                print(f"     {measure:<8} " + ", ".join(
                    f"{r.split('_')[0]} {c:.3f}/{100 * w:.2f}/{100 * d:+.2f}/{x:.2f}"
                    for r, c, w, d, x in zip(runs, cover, width, bias, spread)))
        (args.out / f"{name}_curves.csv").write_text(curves_csv(result), encoding="utf-8")
        for chart, svg in curves_svg(result).items():
            (args.out / f"{name}_{chart}.svg").write_text(svg, encoding="utf-8")
    print(f"\ncurves written to {args.out}")


if __name__ == "__main__":
    main()
