"""A machine judge measured against people (the `machine_judge` report's figures), against the
pool's resolved labels or the judgment set's verdicts:
- Cohen's kappa with a 95% bootstrap percentile interval over pairs, and the confusion matrix,
  over the pairs with both a resolved human label and a machine label;
- per-query disagreement (captions sorted by how many of their pairs the two disagree on);
- Kendall's tau-b and tau_AP (Yilmaz, Aslam & Robertson 2008; machine ranking against human)
  between the runs ranked by mean AP (trec_eval's `map` at the pool depth, or a set judge's `depth`,
  default SET_DEPTH, through pytrec_eval, the
  metrics report's `ap_textbook`, every caption of the dataset averaged in) with human and with
  machine judgments, with bootstrap percentile intervals over captions. Both qrels keep every
  caption's original clip as relevant (FIRE's convention); the human qrels add the pairs people
  resolved relevant, the machine qrels the pairs the machine judged relevant.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict

import numpy as np

from annotation.analysis.machine_agreement import (cohen_kappa, relevance_probability, reliability,
                                                   system_rank_correlation)
from annotation.analysis.retrieval_metrics import corrected_qrels, evaluate_run
from annotation.models import Caption, MachineJudge, MachineJudgment, Run
from annotation.models.judgment_sets import ImportedJudgment
from annotation.selectors.reports import dataset_captions, pool_pairs, pool_runs, run_rankings

MEASURE = "AP (trec_eval map at the pool depth, every caption averaged in)"
QUERIES_LISTED = 1000
CALIBRATION_BINS = 10  # equal-width bins of the reliability curve (the report's calibration_bins default)
SET_DEPTH = 10


def _human_labels(judge: MachineJudge) -> dict[tuple[int, int], int]:
    """(caption, clip) -> 1 relevant / 0 not relevant, from people only: the pool's resolved pairs,
    or the judgment set's verdicts (a 'disagreement' verdict is no label)."""
    if judge.pool_id is not None:
        pairs = pool_pairs(pool=judge.pool)
        keep = pairs.resolved >= 0
        return {(int(q), int(c)): int(r) for q, c, r in zip(pairs.caption[keep], pairs.clip[keep], pairs.resolved[keep])}
    rows = (ImportedJudgment.objects.filter(judgment_set=judge.judgment_set,
                                            label__in=[ImportedJudgment.Label.RELEVANT, ImportedJudgment.Label.NOT_RELEVANT])
            .values_list("caption_id", "clip_id", "label"))
    return {(q, c): int(label == ImportedJudgment.Label.RELEVANT) for q, c, label in rows}


def _runs(judge: MachineJudge) -> list[Run]:
    if judge.pool_id is not None:
        return pool_runs(pool=judge.pool)
    # Every ranked clip run of the dataset: a set has no runs of its own, and moment runs rank spans.
    return list(Run.objects.filter(dataset_id=judge.dataset_id, kind=Run.Kind.CLIP).order_by("name"))


def machine_judge_result(*, judge: MachineJudge, depth: int, n_boot: int = 1000, seed: int = 0,
                         confidence: float = 0.95, calibration_bins: int = CALIBRATION_BINS) -> dict:
    machine, score = {}, {}
    for q, c, label, value in judge.judgments.values_list("caption_id", "clip_id", "label", "score"):
        machine[(q, c)] = int(label == MachineJudgment.Label.RELEVANT)
        score[(q, c)] = math.nan if value is None else value
    human = _human_labels(judge)
    both = sorted(set(machine) & set(human))
    h = np.array([human[k] for k in both], dtype=np.int64)
    m = np.array([machine[k] for k in both], dtype=np.int64)
    kappa = cohen_kappa(h, m, n_boot=n_boot, seed=seed, confidence=confidence)
    # The datasets hold no query type (annotation/models/datasets.py), so no per-type curves.
    calibration = reliability(relevance_probability(m.astype(bool), np.array([score[k] for k in both], dtype=np.float64)),
                              h, n_bins=calibration_bins) | {
        "probability": "the machine's probability of relevance: its score's distance from 0.5 as certainty, its "
                       "verdict as the side (a verdict without a score in [0, 1] counts as certain)",
        "with_score": int(sum(math.isfinite(score[k]) for k in both)),
        "by_query_type": None, "query_type_note": "the dataset has no query types"}

    by_query: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # compared, disagree, human rel, machine rel
    for (q, _), hv, mv in zip(both, h.tolist(), m.tolist()):
        cell = by_query[q]
        cell[0] += 1
        cell[1] += int(hv != mv)
        cell[2] += hv
        cell[3] += mv
    caption_ext = dict(Caption.objects.filter(pk__in=list(by_query)).values_list("id", "external_id"))
    per_query = sorted(({"caption_id": caption_ext.get(q, str(q)), "pairs": v[0], "disagreements": v[1],
                         "disagreement_rate": v[1] / v[0], "human_relevant": v[2], "machine_relevant": v[3]}
                        for q, v in by_query.items()), key=lambda r: (-r["disagreements"], -r["disagreement_rate"],
                                                                      str(r["caption_id"])))

    caption_ids, _, originals = dataset_captions(dataset_id=judge.dataset_id)
    captions = caption_ids.tolist()
    original_qrels = {q: {c} for q, c in zip(captions, originals.tolist()) if c >= 0}
    human_qrels = corrected_qrels(original_qrels, [k for k, v in human.items() if v == 1])
    machine_qrels = corrected_qrels(original_qrels, [k for k, v in machine.items() if v == 1])
    runs = _runs(judge)
    names, human_ap, machine_ap = [], [], []
    for run in runs:
        ranking = run_rankings(run=run, depth=depth)
        names.append(run.name)
        human_ap.append(evaluate_run(ranking, human_qrels, captions, depth=depth).per_caption["ap_textbook"])
        machine_ap.append(evaluate_run(ranking, machine_qrels, captions, depth=depth).per_caption["ap_textbook"])
    shape = (len(names), len(captions))
    ranks = system_rank_correlation(names, np.array(human_ap).reshape(shape), np.array(machine_ap).reshape(shape),
                                    measure=MEASURE, n_boot=n_boot, seed=seed, confidence=confidence)
    return {
        "judge": {"id": judge.pk, "name": judge.name, "kind": judge.kind, "model": judge.model_name,
                  "prompt_version": judge.prompt_version, "pool_id": judge.pool_id,
                  "judgment_set_id": judge.judgment_set_id, "judgments": len(machine)},
        "human_labels": ("the pool's resolved labels (people only)" if judge.pool_id is not None
                         else "the judgment set's verdicts"),
        "pairs_compared": len(both),
        "machine_pairs_without_human_label": len(set(machine) - set(human)),
        "kappa": asdict(kappa) | {"interval_method": "bootstrap percentile over pairs"},
        "calibration": calibration,
        "confusion_note": "rows: human label, columns: machine label; 0 not relevant, 1 relevant",
        "per_query": per_query[:QUERIES_LISTED],
        "queries_with_disagreement": sum(1 for r in per_query if r["disagreements"]),
        "queries_listed": min(len(per_query), QUERIES_LISTED),
        "system_ranking": asdict(ranks) | {"interval_method": "bootstrap percentile over captions",
                                           "depth": depth,
                                           "tau_ap_reference": "Yilmaz, Aslam & Robertson, SIGIR 2008; machine "
                                                               "ranking scored against the human one"},
    }
