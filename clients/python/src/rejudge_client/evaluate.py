"""Scoring a TREC run file against a release's qrels, locally, with ir_measures (pytrec_eval, the
C trec_eval), under trec_eval's conventions: the numbers the platform's ``evaluate`` prints.

``Success@K`` is the benchmarks' C@K (R@K of text-to-video retrieval: 1 when a relevant clip is in
the first K), and ``C@K`` is accepted as its name.
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

    def as_dict(self) -> dict:
        return {"run": self.run, "tag": self.tag, "measures": self.measures, "num_q": len(self.queries),
                "unanswered": self.unanswered, "without_judgments": self.without_judgments,
                "conventions": self.conventions, "per_query": self.per_query}

    def frame(self):
        """Per-query values as a DataFrame (one row per query, one column per measure)."""
        pd = require("pandas", "Evaluation.frame()")
        return pd.DataFrame.from_dict(self.per_query, orient="index")[list(self.measures)]

    def table(self) -> str:
        width = max(len(n) for n in self.measures)
        lines = [f"{name:<{width}}  {value:.4f}" for name, value in self.measures.items()]
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


def evaluate(release: Union[LocalRelease, str, Path, Mapping], run_file, measures: Sequence[str] = DEFAULT_MEASURES
             ) -> Evaluation:
    """Scores ``run_file`` (TREC format) against ``release``: a LocalRelease, a release folder, or a
    qrels dict. Returns an Evaluation whose ``measures`` are keyed by the names asked for."""
    ir_measures = require("ir_measures", "evaluate()")
    if isinstance(release, Mapping):
        qrels = release
    else:
        qrels = (release if isinstance(release, LocalRelease) else open_release(release)).qrels()
    parsed = _parse(measures)
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
    per_query: dict = {q: {} for q in queries}
    for metric in ir_measures.iter_calc(list(by_measure), {q: dict(qrels[q]) for q in queries}, run):
        for name in by_measure[metric.measure]:
            per_query[metric.query_id][name] = float(metric.value)
    means = {name: sum(per_query[q].get(name, 0.0) for q in queries) / len(queries) for name in parsed}
    for q in queries:
        for name in parsed:
            per_query[q].setdefault(name, 0.0)
    return Evaluation(run=Path(run_file).name, tag=tag, measures=means, per_query=per_query, queries=queries,
                      unanswered=sorted(q for q in qrels if q not in scores),
                      without_judgments=sorted(q for q in scores if q not in qrels))


def to_json(evaluations: Sequence[Evaluation]) -> str:
    return json.dumps([e.as_dict() for e in evaluations], indent=2)
