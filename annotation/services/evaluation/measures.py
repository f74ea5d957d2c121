"""Measure families: which measures score runs against a kind of judgments, under which names.

A family parses the names a user asks for (trec_eval's or ir_measures' spelling), scores one run
and returns values under the names the official tool prints, in its print order. Add a family
(moments, say) by writing a class with ``parse`` and ``score`` and registering it in registry.FAMILIES.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from annotation.analysis.judged import JUDGED_THRESHOLD, judged_name
from annotation.analysis.rank_order import trec_order, trec_top

from .conventions import Conventions
from .errors import EvaluationError
from .judgments import Judgments
from .runs import ScoredRun


@dataclass(frozen=True)
class RunScores:
    run: str
    tag: str
    per_query_names: tuple[str, ...]  # printed per query, in the tool's order
    all_names: tuple[str, ...]  # printed in the `all` rows, in the tool's order
    per_query: dict[str, dict[str, float]]  # query -> name -> value, queries in the tool's order
    all: dict[str, float]
    integer_names: frozenset[str] = field(default_factory=frozenset)
    unanswered: tuple[str, ...] = ()  # judged queries the run has no line for (skipped)
    without_judgments: tuple[str, ...] = ()  # run queries absent from the judgments (ignored)
    unanswered_rule: str = "skipped"  # what the measure family does with an unanswered query
    #: FIRE's B: each effectiveness measure (not the counts, not Judged@k) averaged over the same
    #: queries against the original positives alone (only when the judgments know them); A is ``all``.
    original: dict[str, float] | None = None
    #: Each measure cut at K (trec_eval family) -> (its Judged@K's name, the run's Judged@K over the
    #: same queries): printed beside it, so a run scored on holes says so (issue 38).
    judged: dict[str, tuple[str, float]] = field(default_factory=dict)
    #: Below it a measure is flagged not comparable with the leaderboard (analysis/judged.py).
    judged_threshold: float = JUDGED_THRESHOLD.default


# --------------------------------------------------------------------------------------------
# trec_eval measures through pytrec_eval (the C trec_eval), called as ir_measures' pytrec_eval
# provider calls it; Judged@k as ir_measures' judged provider computes it

#: trec_eval prints measures in the order of its measure table (measures.c), not the -m order.
TREC_EVAL_ORDER = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                   "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult",
                   "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut",
                   "map_cut", "relative_P", "success")

#: trec_eval root name -> (ir_measures name, needs a cutoff, takes a cutoff)
_TREC_ROOTS = {
    "map": ("AP", False, False), "map_cut": ("AP", True, True), "P": ("P", True, True),
    "recall": ("R", True, True), "ndcg": ("nDCG", False, False), "ndcg_cut": ("nDCG", True, True),
    "success": ("Success", True, True), "recip_rank": ("RR", False, False), "bpref": ("Bpref", False, False),
    "Rprec": ("Rprec", False, False), "infAP": ("infAP", False, False), "num_ret": ("NumRet", False, False),
    "num_rel": ("NumRel", False, False), "num_rel_ret": ("NumRet(rel=1)", False, False),
    "num_q": ("NumQ", False, False),
}
_INTEGER_ROOTS = {"num_ret", "num_rel", "num_rel_ret", "num_q"}
_SUMMARY_ONLY = {"num_q"}  # trec_eval prints no per-query line for it


#: ir_measures' names of the measures above without parameters, read without importing
#: ir_measures (about a tenth of a file-only `evaluate`); any other spelling goes to its parser.
_PLAIN_IR_NAME = re.compile(r"(AP|P|R|nDCG|Success|RR|Bpref|Rprec|infAP|Judged|NumRet|NumRel|NumQ)(?:@([1-9]\d*))?")


@dataclass(frozen=True)
class TrecMeasure:
    name: str  # as trec_eval -q prints it, which is also pytrec_eval's name for it (Judged@k, which
    # trec_eval lacks, keeps ir_measures' name)
    root: str
    cutoff: int | None

    @property
    def order(self) -> tuple[int, int]:
        rank = TREC_EVAL_ORDER.index(self.root) if self.root in TREC_EVAL_ORDER else len(TREC_EVAL_ORDER)
        return rank, self.cutoff or 0


def _trec_eval_spelling(text: str) -> tuple[str, int | None] | None:
    for root in sorted(_TREC_ROOTS, key=len, reverse=True):
        m = re.fullmatch(rf"{re.escape(root)}(?:[._](\d+))?", text)
        if m:
            return root, int(m.group(1)) if m.group(1) else None
    return None


def _ir_measures_spelling(text: str) -> tuple[str, int | None]:
    """(trec_eval root, cutoff) of a name in ir_measures' spelling; raises EvaluationError."""
    plain = _PLAIN_IR_NAME.fullmatch(text)
    if plain:
        return _from_ir_measures(plain.group(1), {"cutoff": int(plain.group(2))} if plain.group(2) else {}, text)
    import ir_measures

    try:
        parsed = ir_measures.parse_measure(text)
    except (ValueError, NameError, SyntaxError, TypeError, AttributeError) as exc:
        raise EvaluationError(f"unknown measure '{text}' (choose from {', '.join(TrecEvalMeasures.OFFERED)}, "
                              f"or trec_eval's names such as map, P_10, ndcg_cut_10)") from exc
    return _from_ir_measures(parsed.NAME, dict(parsed.params), parsed)


def _from_ir_measures(name: str, params: dict, measure) -> tuple[str, int | None]:
    cutoff = params.pop("cutoff", None)
    rel = params.pop("rel", None)
    if name == "NumRet" and rel == 1:
        return "num_rel_ret", None
    if rel not in (None, 1) or params:
        raise EvaluationError(f"measure {measure}: only the default parameters are supported (relevant at "
                              f"rel >= 1, as trec_eval counts by default)")
    by_ir = {"AP": "map_cut" if cutoff else "map", "P": "P", "R": "recall",
             "nDCG": "ndcg_cut" if cutoff else "ndcg", "Success": "success", "RR": "recip_rank",
             "Bpref": "bpref", "Rprec": "Rprec", "infAP": "infAP", "NumRet": "num_ret", "NumRel": "num_rel",
             "NumQ": "num_q", "Judged": "Judged"}
    if name not in by_ir:
        raise EvaluationError(f"measure {measure} is not offered (choose from {', '.join(TrecEvalMeasures.OFFERED)})")
    return by_ir[name], cutoff


class TrecEvalMeasures:
    name = "trec_eval"
    OFFERED = ("AP", "AP@k", "P@k", "R@k", "nDCG", "nDCG@k", "Success@k", "RR", "bpref", "Rprec", "infAP",
               "Judged@k", "NumRet", "NumRel", "NumRelRet", "NumQ")
    DEFAULT = ("AP", "P@5", "P@10", "nDCG@10", "RR", "bpref")

    def parse(self, names: Sequence[str] | None, conventions: Conventions) -> list[TrecMeasure]:
        chosen: dict[str, TrecMeasure] = {}
        for text in names or self.DEFAULT:
            text = text.strip()
            if text.lower() == "numrelret":
                text = "NumRet(rel=1)"
            spelled = _trec_eval_spelling(text)
            if spelled:
                root, cutoff = spelled
                ir_root, needs_cutoff, takes_cutoff = _TREC_ROOTS[root]
                if (cutoff is None and needs_cutoff) or (cutoff is not None and not takes_cutoff):
                    raise EvaluationError(f"measure '{text}': {root} {'needs a' if needs_cutoff else 'takes no'} cutoff")
            else:
                root, cutoff = _ir_measures_spelling(text)
                if root in ("P", "recall", "success", "Judged") and cutoff is None:
                    raise EvaluationError(f"measure '{text}' needs a cutoff, e.g. {text}@10")
            if cutoff is not None and cutoff < 1:
                raise EvaluationError(f"measure '{text}': the cutoff must be at least 1")
            if root == "Judged":
                measure = TrecMeasure(judged_name(cutoff), root, cutoff)
            else:
                measure = TrecMeasure(f"{root}_{cutoff}" if cutoff else root, root, cutoff)
            chosen.setdefault(measure.name, measure)
        return sorted(chosen.values(), key=lambda m: m.order)

    def score(self, run: ScoredRun, judgments: Judgments, conventions: Conventions,
              measures: list[TrecMeasure]) -> RunScores:
        qrels = judgments.qrels
        if judgments.originals is not None:
            qrels = with_originals(qrels, judgments.originals)
        queries = sorted(q for q in run.scores if q in qrels)
        if not queries:
            hint = f": {judgments.hint}" if judgments.hint else ""
            raise EvaluationError(f"{run.name}: no query of the run is in the judgments {judgments.name}{hint}")
        # Every line scored (trec's conventions): trec_eval takes the run's own scores and ranks
        # them itself, and only the top K of each query is sorted here, for Judged@K.
        ranked = None if conventions.max_result_size is None else run.truncated(conventions.max_result_size)
        # The Judged@K of every measure cut at K, computed with the measures (same queries, same
        # qrels, same ranking), whether or not Judged@K was asked for; only asked ones are printed
        # as measures.
        cut = {m.name: m.cutoff for m in measures
               if m.cutoff is not None and m.root != "Judged" and m.root not in _INTEGER_ROOTS}
        asked = {m.name for m in measures}
        extra = {judged_name(k): TrecMeasure(judged_name(k), "Judged", k)
                 for k in sorted(set(cut.values())) if judged_name(k) not in asked}
        per_query, all_values = _calc([*measures, *extra.values()], queries, qrels, ranked,
                                      scorers=judgments.scorers if qrels is judgments.qrels else None,
                                      scores=run.scores if ranked is None else None)
        judged = {name: (judged_name(k), all_values[judged_name(k)]) for name, k in cut.items()}
        for name in extra:
            del all_values[name]
        original = None
        if judgments.originals is not None:
            # B over the same queries as A, so C = A - B compares like with like. Counts and
            # Judged@k (how much of the list is judged, not how good it is) have no B.
            only = {q: {d: 1 for d in judgments.originals.get(q, ())} for q in queries}
            effectiveness = [m for m in measures if m.root not in _INTEGER_ROOTS and m.root != "Judged"]
            _, original = _calc(effectiveness, queries, only, ranked, scores=run.scores if ranked is None else None)
        per_names = tuple(m.name for m in measures if m.root not in _SUMMARY_ONLY)
        for q in queries:
            for name in list(per_query[q]):
                if name not in per_names:
                    del per_query[q][name]
        return RunScores(run.name, run.tag, per_names, tuple(m.name for m in measures), per_query, all_values,
                         frozenset(m.name for m in measures if m.root in _INTEGER_ROOTS),
                         tuple(sorted(q for q in qrels if q not in run.scores)),
                         tuple(sorted(q for q in run.scores if q not in qrels)), original=original, judged=judged)


def with_originals(qrels: dict, originals: dict[str, set[str]]) -> dict:
    """The qrels with every original positive relevant (grade at least 1) whatever the judgments
    say: FIRE's convention, the caption's own video stays relevant (methodology section 3)."""
    out = {q: dict(docs) for q, docs in qrels.items()}
    for q, docs in originals.items():
        judged = out.setdefault(q, {})
        for d in docs:
            judged[d] = max(judged.get(d, 1), 1)
    return out


def _calc(measures: list[TrecMeasure], queries: list[str], qrels: dict, ranked: dict[str, list[str]] | None, *,
          scorers: dict | None = None, scores: dict[str, dict[str, float]] | None = None
          ) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per-query values and means over ``queries`` (a query trec_eval gives no value for counts 0).

    What ir_measures.iter_calc gave, without its per-value objects (a fifth of a file-only
    `evaluate` on TREC-sized files): trec_eval's measures from one pytrec_eval evaluator at
    relevance level 1 (its pytrec_eval provider's one invocation for these measures), Judged@k as
    its judged provider computes it, and every query without a value for a measure given 0 (its
    measures' DEFAULT). With ``scorers`` (the judgments' cache) one evaluator on all of ``qrels``
    serves every run: trec_eval scores a query on its own judgments alone. Either ``ranked`` (a
    ranking cut at the conventions' depth) or ``scores`` (the run's own, every line scored) is
    given; scores go to trec_eval as they are: it orders them by the rule a ranking is made by
    (score descending, ties by doc id descending), and so does the top K taken for Judged@K."""
    # Otherwise ranks are already in trec_eval's order; strictly decreasing scores keep that order
    # in trec_eval and in the Judged@k rule alike.
    te_qrels = {q: qrels[q] for q in queries}
    per_query: dict[str, dict[str, float]] = {q: {} for q in queries}
    trec = [m for m in measures if m.root != "Judged" and not _beyond_trec_eval(m)]
    beyond = [m for m in measures if _beyond_trec_eval(m)]
    if beyond:
        if ranked is None:
            ranked = {q: trec_order(list(scores[q]), list(scores[q].values())) for q in queries}
        _calc_through_ir_measures(beyond, queries, te_qrels, ranked, per_query)
    if trec:
        if scores is not None:
            te_run = {q: scores[q] for q in queries}
        else:
            te_run = {q: dict(zip(ranked[q], range(len(ranked[q]), 0, -1))) for q in queries}
        names = frozenset(m.name for m in trec)
        evaluator = None if scorers is None else scorers.get(("pytrec_eval", names))
        if evaluator is None:
            evaluator = trec_eval_evaluator(qrels if scorers is not None else te_qrels, trec)
            if scorers is not None:
                scorers[("pytrec_eval", names)] = evaluator
        integer = {m.name for m in trec if m.root in _INTEGER_ROOTS}
        for q, values in evaluator.evaluate(te_run).items():
            if q in per_query:
                per_query[q].update({name: int(v) if name in integer else float(v) for name, v in values.items()})
    judged_at = [m for m in measures if m.root == "Judged"]
    if judged_at:
        depth = max(m.cutoff for m in judged_at)
        for q in queries:
            judged = te_qrels[q]
            if judged:
                ranking = ranked[q][:depth] if ranked is not None else trec_top(scores[q], depth)
                for m in judged_at:
                    top = ranking[:m.cutoff]
                    # ir_measures' rule: a list shorter than k is divided by its length.
                    per_query[q][m.name] = sum(d in judged for d in top) / min(m.cutoff, len(top))
    default = {m.name: 0 if m.root in _INTEGER_ROOTS else 0.0 for m in measures}
    for q in queries:
        values = per_query[q]
        if len(values) < len(default):
            per_query[q] = values = default | values
    all_values: dict[str, float] = {}
    for m in measures:
        values = [per_query[q].get(m.name, 0) for q in queries]
        all_values[m.name] = int(sum(values)) if m.root in _INTEGER_ROOTS else sum(values) / len(queries)
    return per_query, all_values


def trec_eval_evaluator(qrels: dict, measures: Sequence[TrecMeasure]):
    """trec_eval on ``qrels`` for ``measures`` (relevant at rel >= 1, every document scored), from
    pytrec_eval's C extension: what pytrec_eval.RelevanceEvaluator gives (its results are named
    alike, P_5, ndcg_cut_10 ...), without the Python wrapper, which imports NumPy to average (a
    third of a file-only `evaluate` on TREC-sized files; the means are taken in _calc). The
    wrapper's two steps are here: measures as trec_eval's -m spells them (P.5,10) and queries
    without judgments left out (pytrec_eval's issue 57)."""
    from pytrec_eval_ext import RelevanceEvaluator

    cutoffs: dict[str, set[int]] = {}
    for m in measures:
        cutoffs.setdefault(m.root, set()).update([m.cutoff] if m.cutoff else [])
    spelled = {f"{root}.{','.join(map(str, sorted(ks)))}" if ks else root for root, ks in cutoffs.items()}
    return RelevanceEvaluator(query_relevance={q: docs for q, docs in qrels.items() if docs}, measures=spelled,
                              relevance_level=1, judged_docs_only_flag=0)


def _beyond_trec_eval(measure: TrecMeasure) -> bool:
    """A cutoff on a measure trec_eval has none for (RR@10 in ir_measures' spelling): another of
    ir_measures' providers computes it."""
    return measure.root in _TREC_ROOTS and measure.cutoff is not None and not _TREC_ROOTS[measure.root][2]


def _calc_through_ir_measures(measures: list[TrecMeasure], queries: list[str], qrels: dict,
                              ranked: dict[str, list[str]], per_query: dict[str, dict[str, float]]) -> None:
    import ir_measures

    te_run = {q: {d: float(len(ranked[q]) - i) for i, d in enumerate(ranked[q])} for q in queries}
    by_measure = {ir_measures.parse_measure(f"{_TREC_ROOTS[m.root][0]}@{m.cutoff}"): m for m in measures}
    for metric in ir_measures.iter_calc(list(by_measure), qrels, te_run):
        m = by_measure[metric.measure]
        value = float(metric.value)
        per_query[metric.query_id][m.name] = int(value) if m.root in _INTEGER_ROOTS else value


# --------------------------------------------------------------------------------------------
# sample_eval.pl's measures on stratified judgments

class SampleEvalMeasures:
    name = "sample_eval"

    def offered(self, conventions: Conventions) -> tuple[str, ...]:
        from annotation.analysis import sample_eval as se  # NumPy: TREC qrels never need it

        return (*se.measure_names(conventions.max_result_size), "iprec@rec")

    def parse(self, names: Sequence[str] | None, conventions: Conventions) -> list[str]:
        offered = self.offered(conventions)
        if not names:
            return list(offered)
        aliases = {"xinfap": "infAP", "infap": "infAP", "infndcg": "infNDCG"}
        chosen = []
        for text in names:
            key = re.sub(r"^iP@(\d+)$", r"iP\1", text.strip())
            key = aliases.get(key.lower(), key)
            if key not in offered:
                raise EvaluationError(f"unknown measure '{text}' for sample_eval judgments (choose from "
                                      f"{', '.join(offered)})")
            if key not in chosen:
                chosen.append(key)
        return [name for name in offered if name in chosen]

    def score(self, run: ScoredRun, judgments: Judgments, conventions: Conventions, measures: list[str]) -> RunScores:
        from annotation.analysis import sample_eval as se

        try:
            result = se.sample_eval(run.ranked, judgments.qrels, max_result_size=conventions.max_result_size)
        except ValueError as exc:
            raise EvaluationError(f"{run.name}: {exc} ({judgments.name})") from exc
        per_names = tuple(n for n in result.names if n in measures)
        all_names = tuple(n for n in ("infAP", "infNDCG") if n in measures)
        if "iprec@rec" in measures:
            all_names += se.recall_names()
        all_names += tuple(n for n in result.names[2:] if n in measures)
        per_query = {t: {n: v[n] for n in per_names} for t, v in result.per_topic.items()}
        return RunScores(run.name, run.tag, per_names, all_names, per_query,
                         {n: result.all[n] for n in all_names}, frozenset({"num_ret"}),
                         result.topics_unanswered, result.topics_without_qrels)
