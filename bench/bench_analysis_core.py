"""Timing of the pure analysis code at FIRE scale (synthetic data, no Django, no database).

Default: ~550,000 pooled pairs from 3 runs (top-10 each), ~650,000 labels (every pair once, ~15%
a second label from another rater, a third label when the first two disagree), 1,000 bootstrap
replicates. Prints the figures and the wall time of each step.

    .venv/bin/python bench/bench_analysis_core.py [--pairs N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.analysis import agreement as A  # noqa: E402
from annotation.analysis import overlap as O  # noqa: E402
from annotation.analysis import retrieval_metrics as M  # noqa: E402
from annotation.analysis import sample_estimates as S  # noqa: E402

# 3 runs draw 10 of 25 candidates per caption: expected distinct pairs 25 (1 - 0.6^3) = 19.6
CANDIDATES, TOP, RUNS = 25, 10, ("run_a", "run_b", "run_c")
PAIRS_PER_CAPTION = CANDIDATES * (1 - (1 - TOP / CANDIDATES) ** len(RUNS))


class Timer:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float]] = []

    def __call__(self, name: str):
        timer = self

        class _T:
            def __enter__(self):
                self.t = time.perf_counter()

            def __exit__(self, *exc):
                timer.rows.append((name, time.perf_counter() - self.t))

        return _T()


def build(n_pairs: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_caps = int(round(n_pairs / PAIRS_PER_CAPTION))
    n_clips = max(1000, n_caps // 2)
    cand = rng.integers(0, n_clips, size=(n_caps, CANDIDATES))
    original = cand[:, 0]
    caps = list(range(n_caps))
    runs = {}
    keys_by_run = {}
    for r in RUNS:
        order = np.argsort(rng.random((n_caps, CANDIDATES)), axis=1)[:, :TOP]
        top = np.take_along_axis(cand, order, axis=1)
        runs[r] = {q: row for q, row in zip(caps, top.tolist())}
        keys_by_run[r] = (np.arange(n_caps)[:, None] * n_clips + top).ravel()
    all_keys = np.concatenate(list(keys_by_run.values()))
    pool_keys = np.unique(all_keys)
    in_top = np.stack([np.isin(pool_keys, k) for k in keys_by_run.values()], axis=1)
    pair_cap, pair_clip = pool_keys // n_clips, pool_keys % n_clips
    is_original = original[pair_cap] == pair_clip
    truth = is_original | (rng.random(pool_keys.size) < 0.15)

    # labels: everyone once, a random 15.4% twice (different raters), a third on disagreement
    n_units = pool_keys.size
    n_raters = 30
    accuracy = 0.9
    second = rng.random(n_units) < 0.154

    def label(units):
        t = truth[units].astype(np.int64)
        return np.where(rng.random(units.size) < accuracy, t, 1 - t)

    u1 = np.arange(n_units)
    v1 = label(u1)
    u2 = np.flatnonzero(second)
    v2 = label(u2)
    dis = u2[v1[u2] != v2]
    v3 = label(dis)
    unit = np.concatenate([u1, u2, dis])
    value = np.concatenate([v1, v2, v3])
    order = np.concatenate([np.zeros(u1.size), np.ones(u2.size), np.full(dis.size, 2)]).astype(np.int64)
    r1 = rng.integers(0, n_raters, n_units)
    rater = np.concatenate(
        [r1, (r1[u2] + 1 + rng.integers(0, n_raters - 2, u2.size)) % n_raters, (r1[dis] + n_raters // 2) % n_raters]
    )
    seconds = rng.gamma(2.0, 6.0, unit.size)
    gold = np.full(n_units, np.nan)
    g = rng.random(n_units) < 0.01
    gold[g] = truth[g]
    return dict(
        caps=caps, runs=runs, n_clips=n_clips, original=original, pool_keys=pool_keys, in_top=in_top,
        pair_cap=pair_cap, pair_clip=pair_clip, is_original=is_original, unit=unit, value=value,
        order=order, rater=rater, seconds=seconds, gold=gold, n_units=n_units, truth=truth,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=550_000)
    args = ap.parse_args()
    T = Timer()

    with T("build synthetic data"):
        d = build(args.pairs)
    print(f"pairs {d['n_units']:,}  labels {d['unit'].size:,}  captions {len(d['caps']):,}  runs {len(RUNS)}")

    with T("agreement, nominal, first-two + all, 1000 bootstrap each"):
        rep = A.agreement_report(d["unit"], d["value"], order=d["order"], level="nominal", n_boot=1000, seed=0)
    for k, r in rep.items():
        print(
            f"  {k:9s} units {r.n_units_multi:,}  agreement {r.percent_agreement:.4f} "
            f"[{r.percent_agreement_ci[0]:.4f}, {r.percent_agreement_ci[1]:.4f}]  "
            f"alpha {r.alpha:.4f} [{r.alpha_ci[0]:.4f}, {r.alpha_ci[1]:.4f}]"
        )
    with T("resolution"):
        res = A.resolve_majority(d["unit"], d["value"], n_units=d["n_units"])
    print(f"  resolved {res.percent_resolved:.2f}%  relevant {res.n_relevant:,}  unresolved {res.n_unresolved:,}")
    with T("per-rater stats (gold, seconds)"):
        raters = A.rater_stats(d["unit"], d["rater"], d["value"], resolved=res.resolved, gold=d["gold"], seconds=d["seconds"])
    print(f"  raters {len(raters)}  median agreement with resolved "
          f"{np.median([r['agreement_with_resolved'] for r in raters]):.3f}")

    with T("qrels and provenance dicts"):
        caps_arr, clips_arr = d["pair_cap"], d["pair_clip"]
        original = {q: {int(c)} for q, c in zip(d["caps"], d["original"])}
        pos = (res.resolved == 1) & ~d["is_original"]
        resolved_pos = set(zip(caps_arr[pos].tolist(), clips_arr[pos].tolist()))
        corrected = M.corrected_qrels(original, resolved_pos)
        provenance = {}
        for j, r in enumerate(RUNS):
            for q, c in zip(caps_arr[d["in_top"][:, j]].tolist(), clips_arr[d["in_top"][:, j]].tolist()):
                provenance.setdefault((q, c), set()).add(r)

    metrics = {}
    for backend in ("trec_eval", "numpy"):
        with T(f"metrics, {len(RUNS)} runs x original+corrected ({backend})"):
            for r in RUNS:
                metrics[(backend, r)] = (
                    M.evaluate_run(d["runs"][r], original, d["caps"], backend=backend),
                    M.evaluate_run(d["runs"][r], corrected, d["caps"], backend=backend),
                )
    for r in RUNS:
        orig_m, corr_m = metrics[("trec_eval", r)]
        t = M.abc_table(corr_m, orig_m)
        print(f"  {r}: C@1 {t['correct@1']['text']}  AP textbook {t['ap_textbook']['text']}  AP fire {t['ap_fire']['text']}")

    with T("leave-one-run-out (trec_eval)"):
        loro = M.leave_one_run_out(
            d["runs"], provenance=provenance, resolved_positives=resolved_pos,
            original_positives=original, captions=d["caps"],
        )
    for r, x in loro.items():
        print(f"  {r}: removed {x.n_positives_removed:,}  C@1 {100 * x.metrics.mean['correct@1']:.1f}")

    with T("Kendall tau (ap_textbook)"):
        kt = M.leaderboard_kendall_tau(
            {r: metrics[("trec_eval", r)][0].mean["ap_textbook"] for r in RUNS},
            {r: metrics[("trec_eval", r)][1].mean["ap_textbook"] for r in RUNS},
        )
    print(f"  tau {kt['tau']:.3f}")

    with T("overlap matrix top-10"):
        _, m10 = O.overlap_matrix(d["runs"], measure="topk", k=10)
    with T("overlap matrix RBO p=0.9"):
        _, mrbo = O.overlap_matrix(d["runs"], measure="rbo", p=0.9)
    print(f"  top-10 overlap a-b {m10[0, 1]:.3f}  RBO a-b {mrbo[0, 1]:.3f}")

    with T("sample estimates (5% sample)"):
        n = d["n_units"] // 20
        idx = S.draw_sample(d["n_units"], n, seed=0)
        fn = S.estimate_false_negatives(is_original=d["is_original"], sample_idx=idx, sample_relevant=d["truth"][idx])
        est = S.estimate_run_precision(
            in_run_topk=d["in_top"], is_original=d["is_original"], sample_idx=idx,
            sample_relevant=d["truth"][idx], run_names=list(RUNS),
        )
        need = S.required_sample_size(population_size=int((~d["is_original"]).sum()), half_width=0.01)
    true_fn = int((d["truth"] & ~d["is_original"]).sum())
    print(f"  false negatives {fn.total:,.0f} [{fn.total_low:,.0f}, {fn.total_high:,.0f}] (truth {true_fn:,})")
    print(f"  run_a P@10 {est['run_a']['precision']:.4f} "
          f"[{est['run_a']['precision_low']:.4f}, {est['run_a']['precision_high']:.4f}]")
    print(f"  +-1 point needs {need['n_required']:,} of {need['population_size']:,} pairs "
          f"(saves {100 * need['saved_fraction']:.1f}%)")

    print("\nstep timings (s)")
    analysis = 0.0
    for name, t in T.rows:
        print(f"  {t:7.2f}  {name}")
        if not name.startswith("build"):
            analysis += t
    print(f"  {analysis:7.2f}  total analysis (excluding synthetic data build)")


if __name__ == "__main__":
    main()
