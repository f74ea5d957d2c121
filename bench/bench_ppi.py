"""Prediction-powered estimates on MSR-VTT 1K-A and MSVD (issue 25): how many human judgments a
machine judge saves for the same C@10 interval.

World: bench_judging_simulation's (real caption and clip ids, synthetic runs of different quality
whose scores share half their noise, a seeded truth, pools of the runs' top 10, original positives
relevant by convention). Simulated machine judges: ``f = sigmoid(b (2y - 1) + s + e)``, ``s`` the
pair's share of the runs' common noise (the noise that pushed a non-relevant clip into the runs'
top 10, or a relevant one down), ``e ~ N(0, 0.5^2)`` its own; ``b`` is set by bisection so that
Cohen's kappa of ``f >= 0.5`` against the truth over the pool is 0.4, 0.6 or 0.8. Its errors
therefore fall on the hard pairs, the ones that fooled the runs (the table prints the error rate
on the hardest quarter of each class against the rest), not on independent coin flips. With
``--calibration binned`` (default) the judge reports calibrated probabilities (the share of
relevant pairs among the pool's pairs in the same fortieth of its latent score, so the kappa is
set after calibration); ``raw`` keeps the sigmoid, which is over-confident on the hard negatives.

Designs (expected number of human judgments n = sum of pi over the pool pairs that are not
original positives, every one a complete Poisson sample):

- (a) human-only: the "sampled" judging design (c_at_k weights, top stratum depth 1; the queue's),
  estimated by the judging estimates' Horvitz-Thompson C@10 with its interval (normal widened by
  the Fay-Feuer gamma interval), as the judging_estimates report does;
- (b) PPI++ with a uniform sample (pi = rate for every pair);
- (c) PPI++ with the platform's "active" design (annotation.analysis.judging.strategies
  active_pool_scale and inclusion_probabilities(strategy="active"), as the pool build stores it):
  Neyman's allocation, pi proportional to the machine's uncertainty sqrt(f (1 - f)) times the
  pair's leverage on the runs' C@10 at the machine's beliefs, mixed with the uniform design
  (``active_uniform_share``, StrategyParams' default unless ``--active-uniform-share``), one
  scale over the whole pool, capped at 1; no top stratum unless ``--active-top-depth``;
- (d) PPI++ on (a)'s own design and sample: what the machine adds to today's queue.

PPI++ estimates are annotation.analysis.judging.ppi's (the report's), vectorised over queries with
its own functions (pooled_lambda, c_at_k_moments, c_at_k_hull); the interval falls back to the human-only one on the same
labels where it would be wider (as the report does). For each design the bench sweeps the sample
rate (``--width-replays`` samples per rate), finds the expected judgments at which every run's
mean 95% half-width is 2 points (``--target``; log-log interpolation), then draws ``--replays``
samples at that rate for the coverage of every run's interval (full-pool C@10 as the truth) and the
width ratio of PPI++ to human-only on the same labels.

    .venv/bin/python bench/bench_ppi.py [--data DATASETS_DIR] [--out DIR] [--replays 200] [--calibration raw]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_judging_simulation import DEPTH, load_msrvtt, load_msvd  # noqa: E402
from annotation.analysis.judging.estimates import estimate_metrics  # noqa: E402
from annotation.analysis.judging.ppi import c_at_k_floor, c_at_k_hull, c_at_k_moments, pooled_lambda  # noqa: E402
from annotation.analysis.judging.strategies import StrategyParams, active_pool_scale, inclusion_probabilities  # noqa: E402

K = 10
CONFIDENCE = 0.95
RATES = (0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)


def world(captions, clips, original, *, qualities, extra_relevant, seed):
    """Padded per-query arrays of the pool (the union of the runs' top 10): truth ``y`` (Q, N),
    ``known`` (original positive), ``shared`` (the runs' common noise of the pair), ``valid``,
    ``member`` (R, Q, N): in the run's top 10; and the rankings / truth for estimate_metrics."""
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
    tops = []
    for mu in qualities:
        noise = np.sqrt(0.5) * shared + np.sqrt(0.5) * rng.standard_normal((q_n, c_n))
        tops.append(np.argsort(-(mu * relevant + noise), axis=1)[:, :DEPTH])
    tops = np.stack(tops)                                     # (R, Q, DEPTH) clip indices
    items = [list(dict.fromkeys(tops[:, qi, :].ravel().tolist())) for qi in range(q_n)]
    n_max = max(len(i) for i in items)
    y = np.zeros((q_n, n_max))
    known = np.zeros((q_n, n_max), dtype=bool)
    s = np.zeros((q_n, n_max))
    valid = np.zeros((q_n, n_max), dtype=bool)
    member = np.zeros((len(qualities), q_n, n_max), dtype=bool)
    for qi, its in enumerate(items):
        n = len(its)
        y[qi, :n] = relevant[qi, its]
        s[qi, :n] = np.sqrt(0.5) * shared[qi, its]
        known[qi, :n] = np.asarray(its) == clip_index[original[captions[qi]]]
        valid[qi, :n] = True
        pos = {c: j for j, c in enumerate(its)}
        for r in range(len(qualities)):
            member[r, qi, [pos[c] for c in tops[r, qi, :K]]] = True
    order = [[np.asarray([its.index(c) for c in tops[r, qi]], dtype=np.int64) for r in range(len(qualities))]
             for qi, its in enumerate(items)]
    runs = [f"run{m + 1}_mu{mu:g}" for m, mu in enumerate(qualities)]
    rankings = {run: {captions[qi]: [clips[c] for c in tops[r, qi]] for qi in range(q_n)} for r, run in enumerate(runs)}
    keys = [[(captions[qi], clips[c]) for c in its] + [None] * (n_max - len(its)) for qi, its in enumerate(items)]
    known_rel = {captions[qi]: {original[captions[qi]]} for qi in range(q_n)}
    return {"y": y, "known": known, "common_noise": s, "valid": valid, "member": member, "runs": runs,
            "rankings": rankings, "keys": keys, "known_relevant": known_rel, "order": order}


def kappa(pred: np.ndarray, truth: np.ndarray) -> float:
    po = float((pred == truth).mean())
    p1, t1 = float(pred.mean()), float(truth.mean())
    pe = p1 * t1 + (1 - p1) * (1 - t1)
    return (po - pe) / (1 - pe)


def machine_judge(w, target: float, seed: int, calibration: str = "binned"):
    """Predictions f (Q, N) whose thresholded kappa over the pool (originals aside) is ``target``.
    ``calibration``: "raw" f = sigmoid(latent score); "binned" f = the share of relevant pairs among
    the pool's pairs in the same fortieth of the latent score (a calibrated judge: f is what PPI
    expects, a probability of relevant; the discrimination, hence kappa, is the latent score's)."""
    rng = np.random.default_rng(seed)
    e = 0.5 * rng.standard_normal(w["y"].shape)
    mask = w["valid"] & ~w["known"]
    truth = w["y"][mask] > 0
    sign = 2 * w["y"] - 1

    def make(b):
        z = b * sign + w["common_noise"] + e
        if calibration == "raw":
            return 1.0 / (1.0 + np.exp(-z))
        idx = np.digitize(z, np.quantile(z[mask], np.linspace(0, 1, 41)[1:-1]))
        rate = (np.bincount(idx[mask], weights=w["y"][mask], minlength=40)
                / np.maximum(np.bincount(idx[mask], minlength=40), 1))
        return rate[idx]

    lo, hi = 0.0, 20.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if kappa(make(mid)[mask] >= 0.5, truth) < target:
            lo = mid
        else:
            hi = mid
    f = make(hi)
    wrong = (f >= 0.5) != (w["y"] > 0)
    # hardness: how far the shared noise pushes the pair towards the wrong side, ranked within its
    # class (relevant pairs are rare: across classes the quartile would be the negatives')
    hard = -sign * w["common_noise"]
    hardest = np.zeros_like(mask)
    for cls in (0.0, 1.0):
        in_cls = mask & (w["y"] == cls)
        hardest |= in_cls & (hard >= np.quantile(hard[in_cls], 0.75))
    return f, kappa(f[mask] >= 0.5, truth), float(wrong[hardest].mean()), float(wrong[mask & ~hardest].mean())


def active_design(w, f, rate: float, *, seed: int, top_depth: int, uniform_share: float) -> np.ndarray:
    """The platform's "active" design (strategies.active_pool_scale, then each query's
    inclusion_probabilities(strategy="active", scale=...), as the pool build stores them): Neyman's
    allocation for the runs' C@10 mixed with the uniform design, one scale for the whole pool."""
    params = StrategyParams(seed=seed, sample_rate=rate, top_stratum_depth=top_depth, active_uniform_share=uniform_share)
    queries = []
    for qi in range(w["y"].shape[0]):
        n = int(w["valid"][qi].sum())
        queries.append((w["order"][qi], n, f[qi, :n], np.flatnonzero(w["known"][qi, :n])))
    scale = active_pool_scale(queries, params=params)
    pi = np.ones_like(w["y"])
    for qi, (lists, n, conf, known) in enumerate(queries):
        pi[qi, :n] = inclusion_probabilities(lists, params=params, query_key=qi, n_pairs=n, strategy="active",
                                             known=known, confidence=conf, scale=scale)
    return pi


def human_design(w, rate: float, seed: int) -> np.ndarray:
    params = StrategyParams(seed=seed, sample_rate=rate, top_stratum_depth=1, sample_weights="c_at_k")
    pi = np.ones_like(w["y"])
    for qi in range(w["y"].shape[0]):
        n = int(w["valid"][qi].sum())
        pi[qi, :n] = inclusion_probabilities(w["order"][qi], params=params, query_key=qi, n_pairs=n,
                                             known=np.flatnonzero(w["known"][qi, :n]))
    return pi


def replay(w, f, pi, rng, *, ppi: bool):
    """One complete Poisson sample: (human-only (mean, low, high), PPI (mean, low, high, lambda)) per
    run. Both intervals are ppi.c_at_k_hull's (at lambda = 0 the judging estimates' interval: the
    bench checks it against estimate_metrics)."""
    y, known, valid, member = w["y"], w["known"], w["valid"], w["member"]
    take = (rng.random(y.shape) < pi) & valid & ~known
    f = np.zeros_like(y) if f is None else f
    certain = known | (take & (pi >= 1.0))
    drawn = take & ~certain
    grid = np.array([0.0, pooled_lambda(f[drawn], y[drawn], pi[drawn])]) if ppi else np.zeros(1)
    lam = grid[:, None, None]
    r = y - lam * f
    x = np.where(drawn, lam * f + r / pi, np.where(certain, np.where(known, 1.0, y), lam * f))
    v = np.where(drawn, (1.0 - pi) / pi**2 * r * r, 0.0)
    x = np.where(valid, x, 0.0)
    est, var = c_at_k_moments(x, v, member, full=False)               # (G, Q, R)
    settled = ((member & (certain & ((y > 0) | known))[None]).any(axis=2)
               | ~(member & (valid & ~certain)[None]).any(axis=2)).T     # (Q, R)
    jump = np.where(drawn, (1.0 - lam * f) / pi, 0.0)                   # (G, Q, N)
    jump_sum = np.stack([np.where(member[k], jump, 0.0).sum(axis=-1) for k in range(member.shape[0])], axis=-1)
    jump_count = np.broadcast_to((member & drawn[None]).sum(axis=2).T, jump_sum.shape)
    fallback = jump[:, drawn].mean(axis=1) if drawn.any() else np.zeros(len(grid))
    q_n = y.shape[0]
    guess = np.where(certain, np.where(known, 1.0, y), np.where(drawn, y, f))
    floor = c_at_k_floor(f, np.where(valid, guess, 0.0), np.where(drawn, (1.0 - pi) / pi**2, 0.0), member, grid)
    low, high = c_at_k_hull(est, var, settled, jump_sum, jump_count, fallback, q_n, CONFIDENCE, floor)
    means = est.sum(axis=1) / q_n
    human = (means[0], low[0], high[0])
    if not ppi:
        return human, None
    m, lo, hi = means[1], low[1], high[1]
    wider = (hi - lo) > (human[2] - human[1])
    return human, (np.where(wider, human[0], m), np.where(wider, human[1], lo), np.where(wider, human[2], hi),
                   np.where(wider, 0.0, grid[1]))


def sweep(w, f, design, rates, replays, seed, full, target):
    """Per rate: expected judgments, mean half-width (max over runs); then the rate reaching target."""
    mask = w["valid"] & ~w["known"]
    rows = []
    for rate in rates:
        try:
            pi = design(rate)
        except ValueError:   # a rate below the design's top stratum alone: no design there
            continue
        n = float(pi[mask].sum())
        rng = np.random.default_rng(seed)
        halves = []
        for _ in range(replays):
            human, p = replay(w, f, pi, rng, ppi=f is not None)
            lo, hi = (human[1], human[2]) if p is None else (p[1], p[2])
            halves.append((hi - lo) / 2)
        rows.append((rate, n, float(np.max(np.mean(halves, axis=0)))))
    needed = None
    for (r0, n0, h0), (r1, n1, h1) in zip(rows, rows[1:]):
        if h0 > target >= h1:
            t = (np.log(target) - np.log(h0)) / (np.log(h1) - np.log(h0))
            needed = (float(np.exp(np.log(r0) + t * (np.log(r1) - np.log(r0)))),
                      float(np.exp(np.log(n0) + t * (np.log(n1) - np.log(n0)))))
            break
    if needed is None and rows and rows[0][2] <= target:
        needed = (rows[0][0], rows[0][1])
    return rows, needed


def coverage(w, f, pi, replays, seed, full):
    rng = np.random.default_rng(seed + 1)
    cover, ratio, lams, human_cover = [], [], [], []
    for _ in range(replays):
        human, p = replay(w, f, pi, rng, ppi=f is not None)
        human_cover.append((human[1] - 1e-12 <= full) & (full <= human[2] + 1e-12))
        if p is not None:
            cover.append((p[1] - 1e-12 <= full) & (full <= p[2] + 1e-12))
            hw = human[2] - human[1]
            ratio.append(np.where(hw > 0, (p[2] - p[1]) / np.where(hw > 0, hw, 1.0), 1.0))
            lams.append(p[3])
    out = {"human_cover": np.mean(human_cover, axis=0)}
    if cover:
        out |= {"cover": np.mean(cover, axis=0), "ratio_mean": float(np.mean(ratio)), "ratio_max": float(np.max(ratio)),
                "lambda": float(np.mean(lams))}
    return out


def check_against_report(w, pi, seed) -> float:
    """Max |difference| between this bench's vectorised human-only C@10 interval and
    estimate_metrics' on one sample (the report's path)."""
    rng = np.random.default_rng(seed + 7)
    y, known, valid = w["y"], w["known"], w["valid"]
    state = rng.bit_generator.state
    take = (rng.random(y.shape) < pi) & valid & ~known
    judged, inclusion = {}, {}
    for qi, qi_keys in enumerate(w["keys"]):
        for j, key in enumerate(qi_keys):
            if key is not None and take[qi, j]:
                judged[key] = bool(y[qi, j])
                inclusion[key] = float(pi[qi, j])
    rankings = {run: {q: items[:K] for q, items in per.items()} for run, per in w["rankings"].items()}
    report = {e.run: e for e in estimate_metrics(rankings, judged, inclusion, known_relevant=w["known_relevant"],
                                                 measures=(f"C@{K}",)).runs}
    rng.bit_generator.state = state
    human, _ = replay(w, None, pi, rng, ppi=False)
    return max(max(abs(report[run].estimate - human[0][r]), abs(report[run].ci_low - human[1][r]),
                   abs(report[run].ci_high - human[2][r])) for r, run in enumerate(w["runs"]))


def main() -> None:
    np.seterr(divide="ignore", invalid="ignore")   # pi = 0 pairs (never drawn) are masked out
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=None,
                    help="folder with msrvtt/msrvtt_1ka_test.csv and msvd/msvd_test.tsv (the full splits); "
                         "default: the repository's excerpts (bench_judging_simulation's loaders)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/ppi_bench"))
    ap.add_argument("--replays", type=int, default=200, help="samples for coverage at the rate reaching the target")
    ap.add_argument("--width-replays", type=int, default=20, help="samples per rate of the sweep")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--qualities", default="3.2,2.8,2.4,2.0,1.6,1.2")
    ap.add_argument("--extra-relevant", type=float, default=4.0)
    ap.add_argument("--msvd-queries", type=int, default=1000)
    ap.add_argument("--kappas", default="0.4,0.6,0.8")
    ap.add_argument("--target", type=float, default=0.02, help="C@10 interval half-width to reach")
    ap.add_argument("--datasets", default="msrvtt,msvd")
    ap.add_argument("--active-top-depth", type=int, default=0,
                    help="(c): the active design's top_stratum_depth (pairs at rank <= this judged with pi = 1)")
    ap.add_argument("--active-uniform-share", type=float, default=StrategyParams.active_uniform_share,
                    help="(c): the active design's active_uniform_share (its mixture with the uniform design)")
    ap.add_argument("--calibration", default="binned", choices=("binned", "raw"),
                    help="simulated judges' probabilities: calibrated (binned) or sigmoid of the latent score (raw)")
    args = ap.parse_args()
    qualities = [float(x) for x in args.qualities.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    curves = [["dataset", "judge_kappa", "design", "rate", "expected_judgments", "max_run_mean_half_width"]]
    summary = []
    print(f"judges' probabilities: {args.calibration}; "
          f"target C@10 half-width {args.target * 100:g} points, {args.replays} coverage replays, "
          f"{args.width_replays} per sweep rate, seed {args.seed}, runs mu={qualities}")
    for name in args.datasets.split(","):
        t0 = time.perf_counter()
        if name == "msrvtt":
            captions, clips, original = load_msrvtt(args.data)
        elif name == "msvd":
            captions, clips, original = load_msvd(args.data, args.msvd_queries, args.seed)
        else:
            raise SystemExit(f"unknown dataset {name!r}")
        w = world(captions, clips, original, qualities=qualities, extra_relevant=args.extra_relevant, seed=args.seed)
        mask = w["valid"] & ~w["known"]
        full = np.where((w["member"] & ((w["y"] > 0) | w["known"])[None]).any(axis=2), 1.0, 0.0).mean(axis=1)
        print(f"\n== {name}: {len(captions)} queries, {int(mask.sum())} pool pairs to judge "
              f"({100 * w['y'][mask].mean():.1f}% relevant); full-pool C@10: "
              + ", ".join(f"{r.split('_')[0]} {v:.3f}" for r, v in zip(w["runs"], full)))
        human_pi = {}

        def human(rate):
            if rate not in human_pi:
                human_pi[rate] = human_design(w, rate, args.seed)
            return human_pi[rate]

        print(f"   check: |bench - estimate_metrics| on one human-only sample (30%): "
              f"{check_against_report(w, human(0.3), args.seed):.2e}")
        rows_a, need_a = sweep(w, None, human, RATES, args.width_replays, args.seed, full, args.target)
        curves += [[name, "", "a_human_only", r, f"{n:.1f}", f"{h:.5f}"] for r, n, h in rows_a]
        cov_a = coverage(w, None, human(need_a[0]), args.replays, args.seed, full) if need_a else None
        print(f"   (a) human-only sampled design: {need_a[1]:.0f} judgments (rate {need_a[0]:.3f})" if need_a
              else "   (a) human-only: target not reached")
        if cov_a:
            print(f"       coverage over runs: min {cov_a['human_cover'].min():.3f} "
                  f"(" + ", ".join(f"{c:.3f}" for c in cov_a["human_cover"]) + ")")
        for target_kappa in (float(k) for k in args.kappas.split(",")):
            f, realised, err_hard, err_easy = machine_judge(w, target_kappa, args.seed + int(100 * target_kappa),
                                                            args.calibration)
            uniform = lambda rate: np.where(mask, rate, 1.0)  # noqa: E731
            active_pi_cache = {}

            def active(rate, f=f, cache=active_pi_cache):
                if rate not in cache:
                    cache[rate] = active_design(w, f, rate, seed=args.seed, top_depth=args.active_top_depth,
                                                uniform_share=args.active_uniform_share)
                return cache[rate]
            line = [name, target_kappa, realised, err_hard, err_easy, need_a, cov_a]
            for label, design in (("b_ppi_uniform", uniform), ("c_ppi_active", active), ("d_ppi_on_a", human)):
                rows, need = sweep(w, f, design, RATES, args.width_replays, args.seed, full, args.target)
                curves += [[name, f"{realised:.3f}", label, r, f"{n:.1f}", f"{h:.5f}"] for r, n, h in rows]
                cov = coverage(w, f, design(need[0]), args.replays, args.seed, full) if need else None
                line.append((need, cov))
            # never wider: PPI++ against human-only on the same labels, at (a)'s rate with a uniform sample
            summary.append(line)
            (_, _, _, _, _, _, _, (need_b, cov_b), (need_c, cov_c), (need_d, cov_d)) = line
            print(f"   judge kappa {realised:.3f} (target {target_kappa}): errors on the hardest quarter "
                  f"{100 * err_hard:.1f}%, on the rest {100 * err_easy:.1f}%")
            for label, need, cov in (("(b) PPI++ uniform", need_b, cov_b), ("(c) PPI++ active ", need_c, cov_c),
                                     ("(d) PPI++ on (a)", need_d, cov_d)):
                if need is None:
                    print(f"     {label}: target not reached")
                    continue
                print(f"     {label}: {need[1]:.0f} judgments (rate {need[0]:.3f}, "
                      f"{need[1] / need_a[1] if need_a else float('nan'):.2f} of (a)); coverage min over runs {cov['cover'].min():.3f} "
                      f"(human-only on the same labels {cov['human_cover'].min():.3f}); width / human-only "
                      f"mean {cov['ratio_mean']:.3f}, max {cov['ratio_max']:.3f}; mean lambda {cov['lambda']:.2f}")
        print(f"   {time.perf_counter() - t0:.0f} s")
    with (args.out / "ppi_curves.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(curves)
    print("\n| dataset | judge kappa | (a) human-only | (b) PPI++ uniform | (c) PPI++ active | (d) PPI++ on (a) "
          "| coverage min (a / b / c / d) | width vs human-only on the same labels, mean / max (b; d) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, _, realised, _, _, need_a, cov_a, (need_b, cov_b), (need_c, cov_c), (need_d, cov_d) in summary:
        def n_text(need):
            return f"{need[1]:.0f} ({need[1] / need_a[1]:.2f})" if need and need_a else "not reached"
        cov_a_min = f"{cov_a['human_cover'].min():.3f}" if cov_a else "–"
        print(f"| {name} | {realised:.2f} | {need_a[1]:.0f} |" if need_a else f"| {name} | {realised:.2f} | not reached |",
              end="")
        def c_text(cov):
            return f"{cov['cover'].min():.3f}" if cov else "–"

        def r_text(cov):
            return f"{cov['ratio_mean']:.2f} / {cov['ratio_max']:.2f}" if cov else "–"
        print(f" {n_text(need_b)} | {n_text(need_c)} | {n_text(need_d)} | "
              f"{cov_a_min} / {c_text(cov_b)} / {c_text(cov_c)} / {c_text(cov_d)} | {r_text(cov_b)}; {r_text(cov_d)} |")
    print(f"\ncurves written to {args.out / 'ppi_curves.csv'}")


if __name__ == "__main__":
    main()
