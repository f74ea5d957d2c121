"""Scoring a TREC run file against a release's qrels, locally, with ir_measures (pytrec_eval, the
C trec_eval), under trec_eval's conventions: the numbers the platform's ``evaluate`` prints.

``Success@K`` is the benchmarks' C@K (R@K of text-to-video retrieval: 1 when a relevant clip is in
the first K), and ``C@K`` is accepted as its name.

Every measure cut at K comes with the run's Judged@K (ir_measures' Judged@k: the share of the run's
top K with a verdict in the release, divided by the list's length when shorter than K), and is
flagged "not comparable with the leaderboard (Judged@K < 0.9)" when that share is below the
threshold: a clip nobody judged counts as not relevant, so a run the release's pool never saw is
scored on holes (issue 38).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence, Union

from .errors import RejudgeError, RunFileError, require
from .local import LocalRelease, open_release

DEFAULT_MEASURES = ("Success@1", "Success@5", "Success@10", "AP", "nDCG@10")

#: The platform's JUDGED_THRESHOLD (annotation/analysis/judged.py), which this package cannot
#: import; a test keeps the two equal. Averages of shares may miss it by a rounding error, so a
#: Judged@K within _TOLERANCE of it counts as at the threshold (comparable), as on the platform.
JUDGED_THRESHOLD = 0.9
_TOLERANCE = 1e-9

CONVENTIONS = ("trec_eval 9, default options (computed by ir_measures / pytrec_eval): every retrieved document "
               "scored, no cutoff; relevant at rel >= 1 (nDCG gains are the grades); ties: score descending, then "
               "document id descending (the rank column is ignored); a judged query the run did not answer: "
               "skipped (not averaged); run queries without judgments: ignored; means over the remaining queries")

_C_AT = re.compile(r"^C@(\d+)$", re.IGNORECASE)


@dataclass
class Evaluation:
    run: str
    tag: str
    measures: dict  # name as asked -> mean over ``queries``
    per_query: dict  # query -> name -> value
    queries: list
    unanswered: list = field(default_factory=list)  # judged queries the run has no line for (skipped)
    without_judgments: list = field(default_factory=list)  # run queries the qrels lack (ignored)
    conventions: str = CONVENTIONS
    #: each measure cut at K (name as asked) -> {"judged_measure": "Judged@K", "judged": share,
    #: "comparable": bool, "note": the flag naming the threshold, or None}
    judged: dict = field(default_factory=dict)
    judged_threshold: float = JUDGED_THRESHOLD

    def as_dict(self) -> dict:
        return {"run": self.run, "tag": self.tag, "measures": self.measures, "num_q": len(self.queries),
                "unanswered": self.unanswered, "without_judgments": self.without_judgments,
                "conventions": self.conventions, "judged": self.judged, "judged_threshold": self.judged_threshold,
                "per_query": self.per_query}

    @property
    def not_comparable(self) -> dict:
        """The measures flagged not comparable with the leaderboard -> the flag."""
        return {name: j["note"] for name, j in self.judged.items() if j["note"]}

    def frame(self):
        """Per-query values as a DataFrame (one row per query, one column per measure)."""
        pd = require("pandas", "Evaluation.frame()")
        return pd.DataFrame.from_dict(self.per_query, orient="index")[list(self.measures)]

    def table(self) -> str:
        width = max(len(n) for n in self.measures)
        lines = []
        for name, value in self.measures.items():
            line = f"{name:<{width}}  {value:.4f}"
            judged = self.judged.get(name)
            if judged:
                line += f"  {judged['judged_measure']} {judged['judged']:.4f}"
                if judged["note"]:
                    line += f"  {judged['note']}"
            lines.append(line)
        lines.append(f"{'queries':<{width}}  {len(self.queries)}")
        if self.unanswered:
            lines.append(f"{len(self.unanswered)} judged queries not in the run (skipped)")
        if self.without_judgments:
            lines.append(f"{len(self.without_judgments)} run queries without judgments (ignored)")
        return "\n".join(lines)


def read_run(path) -> tuple:
    """A TREC run file as (tag, {query: {doc: score}}); a malformed line raises RunFileError
    naming the file, the line and the field."""
    path = Path(path)
    scores: dict = {}
    first: dict = {}
    tag = ""
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields:
                continue
            where = f"{path.name}, line {number}"
            if len(fields) != 6:
                raise RunFileError(f"{where}: expected 6 fields 'query_id Q0 doc_id rank score tag', "
                                   f"got {len(fields)}")
            query, _, doc, _, raw, run_tag = fields
            try:
                score = float(raw)
            except ValueError:
                raise RunFileError(f"{where}, field 'score': not a number: {raw!r}") from None
            if not math.isfinite(score):
                raise RunFileError(f"{where}, field 'score': {raw} is not a finite number")
            if (query, doc) in first:
                raise RunFileError(f"{where}, field 'doc_id': '{doc}' is already listed for query '{query}' "
                                   f"on line {first[query, doc]}")
            first[query, doc] = number
            tag = tag or run_tag
            scores.setdefault(query, {})[doc] = score
    if not scores:
        raise RunFileError(f"{path.name}: no run lines")
    return tag, scores


def trec_order(docs: Mapping) -> list:
    """trec_eval's rank order: score descending, ties by document id descending (Python compares
    str by code point, which orders UTF-8 as trec_eval's strcmp does)."""
    return [d for d, _ in sorted(docs.items(), key=lambda p: (p[1], p[0]), reverse=True)]


def _parse(names: Sequence[str]) -> dict:
    ir_measures = require("ir_measures", "evaluate()")
    parsed = {}
    for name in names:
        spelled = _C_AT.sub(r"Success@\1", name)
        try:
            parsed[name] = ir_measures.parse_measure(spelled)
        except (ValueError, NameError, SyntaxError, TypeError, AttributeError) as exc:
            raise RejudgeError(f"unknown measure '{name}' (ir_measures names: AP, nDCG@10, Success@5, P@10, RR, ...; "
                               f"C@K is Success@K)") from exc
    return parsed


def not_comparable_note(name: str, judged, threshold: float):
    """The flag of a Judged@K (called ``name``) below ``threshold``, naming both; None when
    comparable (at the threshold is comparable) or when there is no Judged@K."""
    if judged is None or judged >= threshold - _TOLERANCE:
        return None
    return f"not comparable with the leaderboard ({name} < {threshold:g})"


def _threshold(value) -> float:
    if value is None:
        return JUDGED_THRESHOLD
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise RejudgeError(f"judged_threshold must be a number between 0 and 1, got {value!r}")
    return float(value)


def evaluate(release: Union[LocalRelease, str, Path, Mapping], run_file, measures: Sequence[str] = DEFAULT_MEASURES,
             judged_threshold: float = JUDGED_THRESHOLD) -> Evaluation:
    """Scores ``run_file`` (TREC format) against ``release``: a LocalRelease, a release folder, or a
    qrels dict. Returns an Evaluation whose ``measures`` are keyed by the names asked for, and
    whose ``judged`` gives each measure cut at K the run's Judged@K, flagged when below
    ``judged_threshold`` (0 to 1, default 0.9)."""
    ir_measures = require("ir_measures", "evaluate()")
    threshold = _threshold(judged_threshold)
    if isinstance(release, Mapping):
        qrels = release
    else:
        qrels = (release if isinstance(release, LocalRelease) else open_release(release)).qrels()
    parsed = _parse(measures)
    # The Judged@K of every measure cut at K (not of Judged@K itself), computed with the measures.
    cut = {name: m.params["cutoff"] for name, m in parsed.items()
           if m.NAME != "Judged" and m.params.get("cutoff") is not None}
    judged_measures = {f"Judged@{k}": ir_measures.parse_measure(f"Judged@{k}") for k in sorted(set(cut.values()))}
    tag, scores = read_run(run_file)
    queries = sorted(q for q in scores if q in qrels)
    if not queries:
        raise RejudgeError(f"{Path(run_file).name}: no query of the run is in the release's qrels")
    # Strictly decreasing scores in trec_eval's order, so every ir_measures provider ranks alike.
    run = {}
    for q in queries:
        ranked = trec_order(scores[q])
        run[q] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
    by_measure = {}
    for name, measure in parsed.items():
        by_measure.setdefault(measure, []).append(name)
    judged_sums = {name: 0.0 for name in judged_measures}
    judged_of = {m: name for name, m in judged_measures.items()}
    per_query: dict = {q: {} for q in queries}
    for metric in ir_measures.iter_calc(list(by_measure.keys() | judged_of.keys()),
                                        {q: dict(qrels[q]) for q in queries}, run):
        for name in by_measure.get(metric.measure, ()):
            per_query[metric.query_id][name] = float(metric.value)
        if metric.measure in judged_of:
            judged_sums[judged_of[metric.measure]] += float(metric.value)
    means = {name: sum(per_query[q].get(name, 0.0) for q in queries) / len(queries) for name in parsed}
    for q in queries:
        for name in parsed:
            per_query[q].setdefault(name, 0.0)
    judged = {}
    for name, k in cut.items():
        judged_name = f"Judged@{k}"
        share = judged_sums[judged_name] / len(queries)
        note = not_comparable_note(judged_name, share, threshold)
        judged[name] = {"judged_measure": judged_name, "judged": share, "comparable": note is None, "note": note}
    return Evaluation(run=Path(run_file).name, tag=tag, measures=means, per_query=per_query, queries=queries,
                      unanswered=sorted(q for q in qrels if q not in scores),
                      without_judgments=sorted(q for q in scores if q not in qrels), judged=judged,
                      judged_threshold=threshold)


def to_json(evaluations: Sequence[Evaluation]) -> str:
    return json.dumps([e.as_dict() for e in evaluations], indent=2)
