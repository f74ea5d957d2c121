"""The `agreement` report kind: a pool's agreement (methodology section 5), in the layout FIRE reports it.

Inputs: the counted votes (relevant / not relevant) on the pool's 'pool' pairs, the pairs' states,
and raters' answers on gold and training pairs. Gold and training pairs never enter the pool
figures; they only give each rater's accuracy on known answers.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from annotation.analysis.agreement import agreement_report, rater_stats
from annotation.models import Pool, PooledPair
from annotation.selectors.reports import (disagreement_details, pool_known_answers, pool_other_labels_per_rater,
                                          pool_pairs, pool_votes, pseudonyms)
from annotation.services.aggregation.pool_labels import aggregation_section
from annotation.services.reports.kind import Param, ReportKind
from annotation.services.reports.tables import ReportTable, confidence_text, interval_words, measure_rows

DISAGREEMENTS_LISTED = 1000
UNRESOLVED_NOTE = ("Pairs that did not resolve (open, escalated, set aside, or a disagreement) count as not relevant "
                   "in the metrics report; a caption's original clip stays relevant whatever raters say.")


def _summary(pairs, votes_per_pair: np.ndarray, n_votes: int) -> dict:
    state = pairs.state
    count = {s: int((state == s).sum()) for s in PooledPair.State.values}
    resolved, disagreements = count[PooledPair.State.RESOLVED], count[PooledPair.State.DISAGREEMENT]
    judged = resolved + disagreements
    n = int(state.size)
    imported = pairs.from_imported
    return {
        "pairs": n,
        "labelled_pairs": int((votes_per_pair > 0).sum()),
        "multiply_labelled_pairs": int((votes_per_pair >= 2).sum()),
        "labels": n_votes,
        "resolved": resolved,
        # Two shares, each saying what it is out of: beside 178 open pairs, "resolved 100%" read as
        # the pool's progress when it was the share of decided pairs that reached a majority.
        "decided_pairs": judged,
        "resolved_percent_of_decided_pairs": 100.0 * resolved / judged if judged else None,
        "resolved_percent_of_all_pairs": 100.0 * resolved / n if n else None,
        "relevant": int((pairs.resolved == 1).sum()),
        "not_relevant": int((pairs.resolved == 0).sum()),
        "disagreements": disagreements,
        "open": count[PooledPair.State.OPEN],
        "escalated": count[PooledPair.State.ADJUDICATION],
        "set_aside": count[PooledPair.State.SET_ASIDE],
        "complete_percent": 100.0 * judged / n if n else None,
        "resolved_by_admin": int((pairs.by_admin & (state == PooledPair.State.RESOLVED)).sum()),
        "decided_by_imported_judgments": int(imported.sum()),
        "original_positive_pairs": int(pairs.is_original.sum()),
        "original_positives_judged_not_relevant": int((pairs.is_original & (pairs.resolved == 0)).sum()),
    }


def agreement_report_compute(*, pool: Pool, params: dict, progress: Callable | None = None) -> dict:
    step = progress or (lambda done, total: None)
    pairs = pool_pairs(pool=pool)
    votes = pool_votes(pool=pool)
    step(1, 4)
    unit = pairs.index_of(votes.pair)
    summary = _summary(pairs, np.bincount(unit, minlength=pairs.id.size), int(votes.pair.size))
    both = agreement_report(unit, votes.value, level="nominal", order=votes.sequence, n_boot=params["n_boot"],
                            seed=params["seed"], confidence=params["confidence"])
    step(2, 4)

    per_rater = {row["rater"]: row for row in rater_stats(unit, votes.rater, votes.value, resolved=pairs.resolved,
                                                          seconds=votes.seconds)}
    known_rater, given, expected = pool_known_answers(pool=pool)
    gold = {row["rater"]: row for row in rater_stats(np.arange(given.size), known_rater, given,
                                                     resolved=np.full(given.size, -1), gold=expected)}
    others = pool_other_labels_per_rater(pool=pool)
    rater_ids = sorted(set(per_rater) | set(gold) | set(others))
    names = pseudonyms(user_ids=rater_ids)
    raters = []
    for rater in rater_ids:
        own, known, other = per_rater.get(rater, {}), gold.get(rater, {}), others.get(rater, {})
        raters.append({
            "rater": names.get(rater),
            "labels": own.get("n_labels", 0),
            "compared": own.get("n_compared", 0),
            "agreement_with_resolved": own.get("agreement_with_resolved"),
            "gold_labels": known.get("n_gold", 0),
            "gold_accuracy": known.get("gold_accuracy"),
            "median_seconds": own.get("median_seconds"),
            "ambiguous": other.get("ambiguous", 0),
            "broken": other.get("broken", 0),
        })
    raters.sort(key=lambda r: (r["rater"] is None, r["rater"]))
    step(3, 4)

    listed = disagreement_details(pool=pool, limit=DISAGREEMENTS_LISTED)
    # Dawid-Skene's fit in the aggregation section is the report's peak: what only the figures
    # above read is let go first (at 1.1M pairs: the votes' order, times and pair positions, 32 MB).
    del unit
    votes = replace(votes, sequence=None, seconds=None)
    aggregation = aggregation_section(pool=pool, seed=params["seed"], pairs=pairs, votes=votes,
                                      models=("dawid_skene", "mace") if params.get("with_mace") else ("dawid_skene",))
    step(4, 4)
    return {
        "summary": summary,
        "agreement": {variant: result.to_dict(nan_as_none=True) for variant, result in both.items()},
        "agreement_note": ("'first_two' uses each pair's first two votes (the unbiased reliability sample); 'all' "
                           "adds the third vote asked only on disagreement, which biases alpha upwards."),
        "raters": raters,
        "rater_note": ("Agreement with the resolved label counts only pairs with two or more votes that resolved; "
                       "gold accuracy is over gold and training pairs with a known answer."),
        "disagreements": listed,
        "disagreements_listed": len(listed),
        "unresolved_note": UNRESOLVED_NOTE,
        # Dawid-Skene and MACE against strict majority over the same votes (services/aggregation).
        "aggregation": aggregation,
    }


def agreement_tables(result: dict, rater_names: dict | None = None) -> list[ReportTable]:
    def rater(pseudonym):
        return rater_names.get(pseudonym, pseudonym) if rater_names is not None else pseudonym

    agreement_rows = []
    for variant in ("first_two", "all"):
        a = result["agreement"][variant]
        agreement_rows.append([variant, a["n_units_multi"], a["n_pairable_labels"], a["percent_agreement"],
                               *a["percent_agreement_ci"], a["alpha"], *a["alpha_ci"], a["n_boot"], a["confidence"]])
    rater_columns = ["rater", "labels", "compared", "agreement_with_resolved", "gold_labels", "gold_accuracy",
                     "median_seconds", "ambiguous", "broken"]
    return [
        ReportTable("summary", "Pairs and resolution", ["measure", "value"], measure_rows(result["summary"])),
        ReportTable("agreement", "Agreement (nominal Krippendorff's alpha, bootstrap intervals)",
                    ["labels", "multiply_labelled_pairs", "pairable_labels", "percent_agreement", "percent_agreement_low",
                     "percent_agreement_high", "alpha", "alpha_low", "alpha_high", "bootstrap_replicates", "confidence"],
                    agreement_rows,
                    words=interval_words(f"{confidence_text(result['agreement']['first_two'].get('confidence'))} "
                                         f"bootstrap interval".lstrip(),
                                         {"percent_agreement": "Percent agreement", "alpha": "Alpha"})),
        ReportTable("raters", "Per rater", rater_columns,
                    [[rater(r["rater"]), *(r[c] for c in rater_columns[1:])] for r in result["raters"]]),
        ReportTable("disagreements", "Unresolved disagreements", ["pair_id", "caption_id", "caption", "clip_id", "votes"],
                    [[d["pair_id"], d["caption_id"], d["caption"], d["clip_id"],
                      "; ".join(f"{rater(v['rater'])}: {v['value']}" for v in d["votes"]) or "imported"]
                     for d in result["disagreements"]]),
    ]


KIND = ReportKind(
    name="agreement",
    title="Agreement",
    params={
        "n_boot": Param(int, 1000, "bootstrap replicates of the agreement intervals (0: no intervals)", 0, 20_000),
        "seed": Param(int, 0, "seed of the bootstrap and of Dawid-Skene's (and MACE's) fits"),
        "confidence": Param(float, 0.95, "level of the bootstrap intervals", 0, 1, open_interval=True),
        # crowd-kit's MACE has a fixed cost of seconds even on a small pool (~12 s for 40K labels).
        "with_mace": Param(int, 0, "1 adds MACE beside Dawid-Skene in the aggregation section", 0, 1),
    },
    compute=agreement_report_compute,
    tables=agreement_tables,
    names_raters=True,
)
