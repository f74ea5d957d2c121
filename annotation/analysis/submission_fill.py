"""Filling a submitted run's holes (issue 38): what a run submitted to a release would score if the
pairs of its ranking that the release never judged (its holes) had verdicts.

Two fillers, both over the run as ``analysis/submissions.py`` scores it (cut at the release's
leaderboard ``depth``; the answered queries the release's qrels judge, trec_eval's rule) and both
reporting the measures under the names ``analysis/leaderboard.py`` gives them (``measure_label``):

- :func:`machine_filled_measures`: a machine judge's verdicts taken as the holes' labels. The
  release's qrels merged with the verdicts (a release verdict is never overwritten) and scored by
  the leaderboard's own function (``clip_per_query``: the C trec_eval through pytrec_eval), so the
  trec_eval conventions are those of the release-scored measures.
- :func:`hole_fill_estimates`: the prediction-powered estimate (PPI++, ``judging/ppi.py``) of each
  measure with every hole judged, from the machine's probability on every hole and the human
  labels of a designed (Poisson) sample of the holes with known inclusion probabilities. The
  release's verdicts are labels with ``pi = 1``. Exactly unbiased at a fixed lambda whatever the
  machine gets wrong; the interval is the PPI report's, never wider than the human-only one on the
  same labels (``judging/estimates.py``). AP's and nDCG's (``rare_hits``) hull C@K's kind of
  rare-event interval (``ppi.rare_hit_interval``): a weak run's holes hold a few relevant pairs among
  thousands, a 20% sample often catches none, and the variance estimate then reads nothing (95%
  AP intervals covered 0.80 in bench_submissions before). With no human sample of the holes there is nothing to
  measure the machine's errors by: the machine's probabilities are taken as they are, and no
  interval is given.

What a hole is here: a pair (query, clip) of the scored run (cut at ``depth``, a repeated clip
counted once) on a query the release judges, with no verdict in the qrels. Every hole of the
scored run is filled, so the sample's frame must be all of them (each hole drawn with pi > 0):
a caller whose sample covers only each query's top K scores the run cut at K (``depth=K``).
A query the release never judged is not scored (as the release-scored measures leave it out), so
its pairs are neither holes nor filled; they are counted (``queries_unjudged``).

Plain functions over dicts; no Django. Ids are compared as strings (the files' external ids).
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from annotation.analysis.judging.estimates import estimate_metrics, str_pair_keys
from annotation.analysis.judging.ppi import ppi_estimates
from annotation.analysis.leaderboard import (clip_measure_names, clip_per_query, judged_cutoffs, judged_per_query,
                                             measure_label)

__all__ = ["machine_filled_measures", "hole_fill_estimates", "scored_holes", "NO_SAMPLE_NOTE", "NO_HOLES_NOTE"]

_RUN = "submission"

#: Why an estimate without a human sample of the holes has no interval.
NO_SAMPLE_NOTE = ("no human sample of the holes: the machine's verdicts are taken as they are (each hole counts "
                  "with the machine's probability of relevant; the estimate is the measure's expectation if those "
                  "probabilities are calibrated) and no interval is given, since nothing measures the machine's "
                  "errors on these pairs; judge a sample of the holes for an interval")
#: Why a run without holes has exact values.
NO_HOLES_NOTE = "no holes: the release judges every pair the run ranks, so the measures are exact (no estimate)"


def _scored(ranked: Mapping[Hashable, Sequence[Hashable]], qrels: Mapping[Hashable, Mapping[Hashable, int]],
            depth: int | None):
    """(ranked, qrels, queries) as strings: the run cut at ``depth`` (a repeat once, its first rank),
    the qrels, and the queries scored (answered and judged by the release), sorted."""
    if depth is not None and depth < 1:
        raise ValueError(f"depth must be a positive number of clips or None, not {depth!r}")
    runs = {}
    for q, clips in ranked.items():
        listed = list(dict.fromkeys(str(c) for c in clips))
        runs[str(q)] = listed if depth is None else listed[:depth]
    judged = {str(q): {str(c): g for c, g in (verdicts or {}).items()} for q, verdicts in qrels.items()}
    return runs, judged, sorted(q for q in runs if q in judged)


def scored_holes(ranked: Mapping[Hashable, Sequence[Hashable]], qrels: Mapping[Hashable, Mapping[Hashable, int]],
                 *, depth: int | None) -> list[tuple[str, str]]:
    """The holes the fillers fill, in query then rank order: the pairs of the run cut at ``depth``
    on the queries the release judges that have no verdict in ``qrels`` (string ids)."""
    runs, judged, queries = _scored(ranked, qrels, depth)
    return [(q, c) for q in queries for c in runs[q] if c not in judged[q]]


def _binary(value, pair) -> int:
    if isinstance(value, bool) or value in (0, 1):
        return int(value)
    raise ValueError(f"verdict of {pair!r} is {value!r}; must be 0 (not relevant) or 1 (relevant)")


def machine_filled_measures(ranked: Mapping[Hashable, Sequence[Hashable]],
                            qrels: Mapping[Hashable, Mapping[Hashable, int]],
                            verdicts: Mapping[tuple[Hashable, Hashable], int], *, ks: Sequence[int],
                            depth: int | None) -> dict:
    """The run's measures with the machine's ``verdicts`` ((query, clip) -> 0 | 1) as the labels of
    its holes: ``{"values": {measure name: mean over the scored queries}, "judged": {Judged@K name:
    mean}, "filled": holes given a verdict, "holes_left": holes the machine gave none (they count as
    not relevant, as in the release-scored measures), "holes": all holes, "verdicts_ignored":
    verdicts on pairs that are no hole of the scored run, "queries_scored", "queries_unjudged"}``.

    Names and values as ``submission_measures``' (``clip_measure_names(ks)`` labelled with the
    cut; a mean is None when no query is scored). ``ranked``: query -> clips in trec_eval's order."""
    runs, judged, queries = _scored(ranked, qrels, depth)
    given = {key: _binary(v, key) for key, v in str_pair_keys(verdicts, "verdict").items()}
    merged = {q: dict(judged[q]) for q in queries}
    filled = left = 0
    for q in queries:
        for c in runs[q]:
            if c in judged[q]:
                continue
            verdict = given.get((q, c))
            if verdict is None:
                left += 1
            else:
                merged[q][c] = verdict
                filled += 1
    names = clip_measure_names(ks)
    per_query = clip_per_query(runs, merged, queries, names)
    judged_at = judged_per_query(runs, merged, queries, judged_cutoffs(ks))
    return {
        "values": {measure_label(m, depth): (float(v.mean()) if queries else None) for m, v in per_query.items()},
        "judged": {measure_label(f"Judged@{k}", depth): (float(v.mean()) if queries else None)
                   for k, v in judged_at.items()},
        "filled": filled,
        "holes_left": left,
        "holes": filled + left,
        "verdicts_ignored": len(given) - filled,
        "queries_scored": len(queries),
        "queries_unjudged": sum(1 for q in runs if q not in judged),
    }


def hole_fill_estimates(ranked: Mapping[Hashable, Sequence[Hashable]],
                        qrels: Mapping[Hashable, Mapping[Hashable, int]],
                        predictions: Mapping[tuple[Hashable, Hashable], float],
                        sample_labels: Mapping[tuple[Hashable, Hashable], bool],
                        inclusion: Mapping[tuple[Hashable, Hashable], float], *, ks: Sequence[int],
                        depth: int | None, confidence: float = 0.95, fixed_lambda: float | None = None) -> dict:
    """PPI++ estimates of the run's measures with every hole judged (see module).

    ``predictions``: hole -> the machine's probability of relevant (a hole without one gets the
    mean of the holes' predictions, as ``ppi_estimates`` does; any value keeps the estimate
    unbiased); ``sample_labels``: hole -> the human label of each hole the design drew;
    ``inclusion``: hole -> its inclusion probability (a sampled hole missing from it has pi = 1, the
    estimators' convention: a census; the probabilities of holes the design did not draw may be
    given too, and a design that drew none of them is a sample, not "no sample"). Predictions and labels of pairs that are no hole are
    ignored (a release verdict stands) and counted. ``fixed_lambda``: no power tuning (tests).

    Returns ``{"values": {measure name: {"estimate", "ci_low", "ci_high", "se", "lambda",
    "human_estimate", "human_ci_low", "human_ci_high"}}, "counts": {"holes", "sampled",
    "holes_without_prediction", "labels_ignored", "queries_scored", "queries_unjudged"}, "estimator",
    "interval", "confidence", "note"}``. ``human_*``: the human-only Horvitz-Thompson estimate on
    the same labels (unsampled holes as not relevant in expectation 0, weighted by 1/pi). With no
    sampled hole (and some holes): the machine's probabilities as they are (PPI at lambda = 1 with
    nothing to rectify), every interval, se and human value None, and ``note`` says why ("no
    sample": no sampled hole and no inclusion probability below 1 given for a hole). Without
    holes: the exact values, a point interval, se 0. Means over no scored query are None."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    runs, judged, queries = _scored(ranked, qrels, depth)
    holes = {(q, c) for q in queries for c in runs[q] if c not in judged[q]}
    predictions = str_pair_keys(predictions, "prediction")
    labels = str_pair_keys(sample_labels, "sample label")
    inclusion = str_pair_keys(inclusion, "inclusion")
    sample = {key: bool(v) for key, v in labels.items() if key in holes}
    names = clip_measure_names(ks)
    counts = {"holes": len(holes), "sampled": len(sample),
              "holes_without_prediction": sum(1 for key in holes if key not in predictions),
              "labels_ignored": len(labels) - len(sample), "queries_scored": len(queries),
              "queries_unjudged": sum(1 for q in runs if q not in judged)}
    # The release's verdicts are labels drawn with certainty (pi = 1); the sampled holes keep theirs.
    # A not-relevant verdict on a clip the run does not rank changes none of its measures (AP and
    # nDCG count only relevant clips beyond the list), and leaving it out spares the estimator's
    # per-query walk over every clip (a release judges about twice as many clips as a run's top 10).
    labelled = {(q, c): g > 0 for q in queries for listed in (set(runs[q]),) for c, g in judged[q].items()
                if g > 0 or c in listed} | sample
    # The design's probabilities of the holes it did not draw are welcome (estimate_metrics reads
    # them for the weight of a hit no draw caught); a drawn hole without one was judged for certain.
    weights = {key: float(inclusion[key]) for key in holes if key in inclusion} | {
        key: float(inclusion.get(key, 1.0)) for key in sample}
    designed = bool(sample) or any(0.0 < p < 1.0 for p in weights.values())
    rankings = {_RUN: {q: runs[q] for q in queries}}
    hole_predictions = {key: float(v) for key, v in predictions.items() if key in holes}
    result = {"counts": counts, "confidence": confidence, "note": None}
    if not queries:
        result |= {"values": {measure_label(m, depth): _cell(None, None, None, None, None) for m in names},
                   "estimator": None, "interval": None, "note": "no query of the run is judged by the release"}
        return result
    if holes and not designed:
        report = ppi_estimates(rankings, hole_predictions, labelled, weights, measures=names, confidence=confidence,
                               fixed_lambda=1.0)
        result |= {"values": {measure_label(e.measure, depth): _cell(e.estimate, None, None, None, 1.0)
                              for e in report.runs},
                   "estimator": ("the machine's verdicts as they are: each measure's multilinear extension at the "
                                 "machine's probabilities on the holes (its expectation if they are calibrated "
                                 "and independent), the release's verdicts as they are"),
                   "interval": None, "note": NO_SAMPLE_NOTE}
        return result
    human = estimate_metrics(rankings, labelled, weights, measures=names, confidence=confidence)
    by_measure = {e.measure: e for e in human.runs}
    report = ppi_estimates(rankings, hole_predictions, labelled, weights, measures=names, confidence=confidence,
                           human_intervals={(e.run, e.measure): (e.ci_low, e.ci_high) for e in human.runs},
                           fixed_lambda=fixed_lambda, rare_hits=True)
    values = {}
    for e in report.runs:
        h = by_measure[e.measure]
        values[measure_label(e.measure, depth)] = _cell(e.estimate, e.ci_low, e.ci_high, e.se, e.lam) | {
            "human_estimate": h.estimate, "human_ci_low": h.ci_low, "human_ci_high": h.ci_high}
    result |= {"values": values, "estimator": report.estimator, "interval": report.interval,
               "design": report.design, "lambda_note": report.conventions.get("lambda"),
               "note": None if holes else NO_HOLES_NOTE}
    return result


def _cell(estimate, low, high, se, lam) -> dict:
    return {"estimate": None if estimate is None else float(estimate),
            "ci_low": None if low is None else float(low), "ci_high": None if high is None else float(high),
            "se": None if se is None else float(se), "lambda": None if lam is None else float(lam),
            "human_estimate": None, "human_ci_low": None, "human_ci_high": None}
