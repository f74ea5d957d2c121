"""The `ppi_estimates` report: prediction-powered (PPI++) estimates of each run's C@K, AP and
nDCG@K, and of the differences of adjacent runs, next to the human-only estimates on the same
labels (issue 25).

Inputs: the judging estimates' (the runs' top-k lists, every decided pair's label with the
inclusion probability the queue stored, the original positives: :func:`.estimates.pool_design`)
plus one machine judge's verdict on the pool's pairs (MachineJudgment: its score as the probability
of relevant when the file gives one, else 1 for 'relevant' and 0 for 'not relevant'). Machine
verdicts never become labels: they only enter the PPI estimator, whose estimate stays unbiased
whatever the machine gets wrong.

PPI, like the human-only estimator, needs every counted pair's inclusion probability: on a pool whose
design gives none (services/judging/design.py: bandit, move-to-front, an order stopped early...) the
report gives no estimate and no interval, says why, and gives the scenarios "unjudged = not
relevant" and "unjudged = relevant" (a machine judge cannot stand in for the missing design: its
errors could fall anywhere among the pairs the order left unjudged).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

from annotation.analysis.judging.estimates import estimate_metrics
from annotation.analysis.judging.ppi import ppi_estimates
from annotation.models import MachineJudge, MachineJudgment, Pool
from annotation.services.judging.estimates import (COUNT_WORDS, NO_ESTIMATOR, counts_note, cut_note,
                                                   estimator_counts, pool_design, scenario_rows)
from annotation.services.judging.inputs import refuse_moment_pool
from annotation.services.machine_judges.errors import MachineJudgeError
from annotation.services.machine_judges.lookup import judge_named


def ppi_measures(params: dict) -> list[str]:
    return [f"C@{k}" for k in params["ks"]] + ["AP", f"nDCG@{params['ndcg_k']}"]


def judge_predictions(*, judge: MachineJudge, captions: dict, clips: dict) -> dict[tuple[str, str], float]:
    """(caption, clip) external ids -> the judge's probability of relevant. A score outside [0, 1]
    (a grade, a logit) is refused: the estimator needs a probability."""
    out = {}
    rows = judge.judgments.values_list("caption_id", "clip_id", "label", "score", "source_record")
    for caption, clip, label, score, where in rows.order_by().iterator(chunk_size=20_000):
        if score is None:
            value = 1.0 if label == MachineJudgment.Label.RELEVANT else 0.0
        elif 0.0 <= score <= 1.0:
            value = float(score)
        else:
            raise MachineJudgeError(f"machine judge '{judge.name}': score {score!r} of ({captions.get(caption)}, "
                                    f"{clips.get(clip)}) ({where or 'no record'}) is not a probability in [0, 1]; "
                                    "PPI estimates need one (import the judgments without scores to use the labels)")
        out[(captions[caption], clips[clip])] = value
    return out


def ppi_estimates_compute(*, pool: Pool, params: dict, progress: Callable | None = None) -> dict:
    """The report's result: per run and measure the human-only and the PPI++ estimate with their
    intervals, lambda and the width ratio; the same for the differences of adjacent runs. Where
    the pool's design gives no interval: none of those, the reason and the two scenarios."""
    from annotation.analysis.judging.bounds import BOUNDS_NOTE

    step = progress or (lambda done, total=None, message="": None)
    refuse_moment_pool(pool)
    judge = judge_named(MachineJudge.objects.filter(pool=pool), params.get("judge"), f"pool '{pool.name}'")
    design = pool_design(pool=pool, depth=params.get("depth"))
    captions, clips, rankings, pairs = design.captions, design.clips, design.rankings, design.pairs
    known, judged, inclusion = design.known, design.judged, design.inclusion
    predictions = judge_predictions(judge=judge, captions=captions, clips=clips)
    step(1, 3)
    measures = ppi_measures(params)
    confidence = params["confidence"]
    what = design.design
    estimates, differences = [], []
    estimator, human_estimator, interval, conventions = NO_ESTIMATOR, NO_ESTIMATOR, None, {}
    if what.intervals:
        human = estimate_metrics(rankings, judged, inclusion, known_relevant=known, measures=measures,
                                 confidence=confidence)
        intervals = {(e.run, e.measure): (e.ci_low, e.ci_high) for e in human.runs}
        step(2, 3)
        report = ppi_estimates(rankings, predictions, judged, inclusion, known_relevant=known, measures=measures,
                               confidence=confidence, human_intervals=intervals)
        by_key = {(e.run, e.measure): e for e in human.runs}
        for e in report.runs:
            h = by_key[(e.run, e.measure)]
            human_width, width = h.ci_high - h.ci_low, e.ci_high - e.ci_low
            estimates.append({"run": e.run, "measure": e.measure,
                              "human_estimate": h.estimate, "human_se": h.se, "human_ci_low": h.ci_low,
                              "human_ci_high": h.ci_high, "ppi_estimate": e.estimate, "ppi_se": e.se,
                              "ppi_ci_low": e.ci_low, "ppi_ci_high": e.ci_high, "lambda": e.lam,
                              "width_ratio": width / human_width if human_width > 0 else None})
        differences = [asdict(d) for d in report.differences]
        estimator, human_estimator, interval, conventions = (report.estimator, human.estimator, report.interval,
                                                             report.conventions)
    step(3, 3)
    pool_keys = {(captions[c], clips[k]) for c, k in zip(pairs.caption.tolist(), pairs.clip.tolist())}
    counts = estimator_counts(design) | {
        "machine_judgments": len(predictions),
        "pool_pairs_with_a_machine_verdict": len(pool_keys & set(predictions))}
    machine = (f"machine judge '{judge.name}' has a verdict on {counts['pool_pairs_with_a_machine_verdict']} of "
               f"{counts['pooled']} pooled pairs")
    return {
        "estimator": estimator, "design": what.reason, "design_of_pool": what.to_dict(), "intervals": what.intervals,
        "next_time": what.next_time, "interval": interval, "bounds_note": BOUNDS_NOTE,
        "human_estimator": human_estimator, "conventions": conventions, "confidence": confidence,
        "judge": {"id": judge.pk, "name": judge.name, "model": judge.model_name,
                  "prompt_version": judge.prompt_version},
        "runs": [r.name for r in design.runs], "measures": measures, "estimates": estimates,
        "differences": differences, "bounds": scenario_rows(design, measures), "counts": counts,
        "depth": design.depth, "cut": cut_note(design.depth, measures),
        "note": (("PPI++ with " if what.intervals else "No PPI++ estimate; ") + f"{machine}. Design: {what.reason}. "
                 + (f"Next time: {what.next_time}. " if what.next_time else "") + counts_note(counts) + " "
                 + cut_note(design.depth, measures)),
    }


COUNT_WORDS_PPI = COUNT_WORDS | {"machine_judgments": "machine judgments of the judge",
                                 "pool_pairs_with_a_machine_verdict": "pooled pairs with a machine verdict"}


__all__ = ["ppi_estimates_compute", "COUNT_WORDS_PPI", "ppi_measures", "judge_predictions", "MachineJudgeError"]
