"""The metrics report of a pool (methodology section 6): every run scored with original and with
corrected positives, how alike the runs rank, how much each run owes to its own pool
contributions, where the extra positives are, and whether the leaderboard changes.

Positives: a caption's original clip, plus (corrected) every pool pair resolved relevant. Pairs
that did not resolve count as not relevant. Every caption row of the dataset is averaged in,
duplicated texts included, and a caption a run did not answer scores 0.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from annotation.analysis.overlap import mean_overlap
from annotation.analysis.retrieval_metrics import (abc_table, corrected_qrels, evaluate_run, format_abc,
                                                   leaderboard_kendall_tau, leave_one_run_out, metric_names,
                                                   positives_by_caption_length)
from annotation.models import Pool
from annotation.selectors.reports import dataset_captions, pool_pairs, pool_provenance, pool_runs, run_rankings
from annotation.services.reports.kind import Param, ReportKind, pool_depth
from annotation.services.reports.tables import ReportTable, measure_rows

AP_VARIANTS = {
    "ap_textbook": "AP dividing by all positives of the caption (trec_eval's map): a positive the list misses lowers it",
    "ap_fire": "AP dividing by the positives retrieved in the list (FIRE's variant): only their order counts",
}


def metric_label(name: str) -> str:
    if name.startswith("correct@"):
        return "C@" + name.split("@", 1)[1]
    return {"ap_textbook": "AP (textbook)", "ap_fire": "AP (FIRE)"}.get(name, name)


def _length_points(length: np.ndarray, positives: np.ndarray) -> list[list[int]]:
    """[length, positives, captions] for every combination that occurs (the scatter's points)."""
    if length.size == 0:
        return []
    combos, counts = np.unique(np.stack([length, positives], axis=1), axis=0, return_counts=True)
    return [[int(a), int(b), int(n)] for (a, b), n in zip(combos, counts)]


def metrics_report_compute(*, pool: Pool, params: dict, progress: Callable | None = None) -> dict:
    step = progress or (lambda done, total: None)
    depth, ks, decimals = params["depth"], params["ks"], params["decimals"]
    names_in_order = metric_names(ks)
    caption_ids, texts, originals = dataset_captions(dataset_id=pool.dataset_id)
    captions = caption_ids.tolist()
    original_qrels = {q: {c} for q, c in zip(captions, originals.tolist()) if c >= 0}
    pairs = pool_pairs(pool=pool)
    relevant = pairs.resolved == 1
    resolved_positives = list(zip(pairs.caption[relevant].tolist(), pairs.clip[relevant].tolist()))
    corrected = corrected_qrels(original_qrels, resolved_positives)
    runs_in_pool = pool_runs(pool=pool)
    rankings = {run.name: run_rankings(run=run, depth=depth) for run in runs_in_pool}
    total_steps = 2 * len(rankings) + 4
    done = 0
    step(done, total_steps)

    per_run: dict[str, dict] = {}
    original_means: dict[str, dict[str, float]] = {}
    corrected_means: dict[str, dict[str, float]] = {}
    for name, ranking in rankings.items():
        original = evaluate_run(ranking, original_qrels, captions, ks=ks, depth=depth)
        fixed = evaluate_run(ranking, corrected, captions, ks=ks, depth=depth)
        original_means[name], corrected_means[name] = original.mean, fixed.mean
        answered = sum(1 for q in captions if ranking.get(q))
        per_run[name] = {"captions_answered": answered, "captions_missing": len(captions) - answered,
                         "metrics": {m: {"original": original.mean[m], "corrected": fixed.mean[m], **cell}
                                     for m, cell in abc_table(fixed, original, decimals=decimals).items()}}
        done += 1
        step(done, total_steps)

    run_names = list(rankings)
    overlaps = []
    for i, run_a in enumerate(run_names):
        for run_b in run_names[i + 1:]:
            a, b = rankings[run_a], rankings[run_b]
            overlaps.append({"run_a": run_a, "run_b": run_b,
                             "topk": mean_overlap(a, b, measure="topk", k=params["overlap_k"]),
                             "rbo": mean_overlap(a, b, measure="rbo", p=params["rbo_p"], depth=depth)})
    done += 1
    step(done, total_steps)

    prov_pair, prov_run, _ = pool_provenance(pool=pool, relevant_only=True)
    run_name_by_id = {run.pk: run.name for run in runs_in_pool}
    provenance: dict[tuple[int, int], set[str]] = {}
    at = pairs.index_of(prov_pair)
    for q, c, run_id in zip(pairs.caption[at].tolist(), pairs.clip[at].tolist(), prov_run.tolist()):
        provenance.setdefault((q, c), set()).add(run_name_by_id.get(run_id, str(run_id)))
    loro = leave_one_run_out(rankings, provenance=provenance, resolved_positives=resolved_positives,
                             original_positives=original_qrels, captions=captions, ks=ks, depth=depth)
    leave_one_out = {}
    for name, result in loro.items():
        mean = result.metrics.mean
        leave_one_out[name] = {
            "positives_removed": result.n_positives_removed,
            "mean": mean,
            # A = with every label, B = only labels of pairs other runs proposed, C = what the run's
            # own contributions add (how much a run outside the pool would be under-rated).
            "metrics": {m: format_abc(corrected_means[name][m], mean[m], decimals=decimals) for m in names_in_order},
        }
        done += 1
        step(done, total_steps)

    by_length = positives_by_caption_length(dict(zip(captions, texts)), corrected, captions=captions)
    tau = {m: leaderboard_kendall_tau({r: original_means[r][m] for r in run_names},
                                      {r: corrected_means[r][m] for r in run_names}) for m in names_in_order}
    done += 1
    step(done, total_steps)

    n_original = sum(len(v) for v in original_qrels.values())
    n_corrected = sum(len(v) for v in corrected.values())
    return {
        "metrics": names_in_order,
        "metric_labels": {m: metric_label(m) for m in names_in_order},
        "ap_variants": AP_VARIANTS,
        "runs": run_names,
        "per_run": per_run,
        "overlap": {"k": params["overlap_k"], "rbo_p": params["rbo_p"], "rbo_depth": depth, "pairs": overlaps,
                    "captions": "the captions both runs answered"},
        "leave_one_run_out": leave_one_out,
        "positives_by_length": {"by_length": by_length.by_length, "points": _length_points(by_length.length,
                                                                                          by_length.n_positives),
                                "spearman_rho": by_length.spearman_rho, "spearman_p": by_length.spearman_p},
        "kendall_tau": tau,
        "labels": {
            "captions": len(captions),
            "captions_without_original": len(captions) - len(original_qrels),
            "captions_without_positives": int((by_length.n_positives == 0).sum()),
            "original_positives": n_original,
            "positives_added": n_corrected - n_original,
            "corrected_positives": n_corrected,
            "pool_pairs": int(pairs.id.size),
            "pairs_resolved_relevant": int(relevant.sum()),
            "pairs_unresolved": int((pairs.resolved < 0).sum()),
            "note": ("A = corrected positives, B = original positives only, C = A - B, in percent. Unresolved pool "
                     "pairs count as not relevant; original clips stay relevant whatever raters say."),
        },
    }


def metrics_tables(result: dict) -> list[ReportTable]:
    metrics, labels, runs = result["metrics"], result["metric_labels"], result["runs"]
    per_run = result["per_run"]
    numbers = [[run, m, cell["original"], cell["corrected"], cell["a"], cell["b"], cell["c"]]
               for run in runs for m, cell in per_run[run]["metrics"].items()]
    overlap = [[o["run_a"], o["run_b"], o["topk"], o["rbo"]] for o in result["overlap"]["pairs"]]
    loro = result["leave_one_run_out"]
    return [
        ReportTable("metrics", "Metrics: A (B + C) = corrected (original + gain), in percent",
                    ["run"] + [labels[m] for m in metrics] + ["captions_answered"],
                    [[run] + [per_run[run]["metrics"][m]["text"] for m in metrics] + [per_run[run]["captions_answered"]]
                     for run in runs]),
        ReportTable("metric_values", "Metric values (0-1) and A, B, C in percent",
                    ["run", "metric", "original", "corrected", "a", "b", "c"], numbers),
        ReportTable("overlap", f"Overlap between runs (top-{result['overlap']['k']} and RBO "
                               f"p={result['overlap']['rbo_p']})",
                    ["run_a", "run_b", "topk_overlap", "rbo"], overlap),
        ReportTable("leave_one_run_out", "Leave one run out: A (B + C) = all labels (labels of pairs other runs "
                                         "proposed + the run's own contributions)",
                    ["run", "positives_removed"] + [labels[m] for m in metrics],
                    [[run, loro[run]["positives_removed"]] + [loro[run]["metrics"][m]["text"] for m in metrics]
                     for run in runs]),
        ReportTable("positives_by_length", "Positives per caption by caption length (words)",
                    ["length", "captions", "total_positives", "mean_positives", "median_positives"],
                    [[b["length"], b["n_captions"], b["total_positives"], b["mean_positives"], b["median_positives"]]
                     for b in result["positives_by_length"]["by_length"]]),
        ReportTable("kendall_tau", "Leaderboard agreement, original vs corrected (Kendall's tau-b)",
                    ["metric", "tau", "p_value", "runs"],
                    [[labels[m], t["tau"], t["p_value"], t["n_runs"]] for m, t in result["kendall_tau"].items()]),
        ReportTable("labels", "Positives", ["measure", "value"], measure_rows(result["labels"])),
    ]


KIND = ReportKind(
    name="metrics",
    title="Retrieval metrics",
    params={
        "depth": Param(int, pool_depth, "ranks of each run scored (default: the pool's depth)", 1, 1000),
        "ks": Param(list, [1, 5, 10], "the cut-offs k of C@k", 1, 1000),
        "decimals": Param(int, 1, "decimals of A and B in the 'A (B + C)' texts", 0, 4),
        "overlap_k": Param(int, 10, "the k of the top-k overlap between runs", 1, 1000),
        "rbo_p": Param(float, 0.9, "persistence p of rank-biased overlap", 0, 1, open_interval=True),
    },
    compute=metrics_report_compute,
    tables=metrics_tables,
    # Not a choice, but stored so that a reader of the report knows which AP each figure is.
    fixed_params={"ap_variants": list(AP_VARIANTS)},
)
