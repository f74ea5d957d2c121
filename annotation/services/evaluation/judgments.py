"""Judgment files read for scoring only, by --judgments-format name.

Each format says which measure family scores runs against it and which conventions apply by
default (the official tool of that format). Add a format by adding a JudgmentFormat entry.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from annotation.formats.errors import IssueCollector
from annotation.formats.qrels import read_qrels
from annotation.formats.sample_eval_qrels import StratumRow, load_sample_eval_qrels, stratum_table
from annotation.formats.text_lines import LineSource


@dataclass(frozen=True)
class Judgments:
    format: str
    name: str  # file name
    qrels: dict  # graded: {query: {doc: rel}}; stratified: {topic: {shot: (stratum, rel)}}
    strata: tuple[StratumRow, ...] = ()  # stratified formats only

    @property
    def queries(self) -> int:
        return len(self.qrels)


def read_trec_qrels(path: Path) -> Judgments:
    issues = IssueCollector(path.name)
    source = LineSource(path, issues)
    qrels: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for row in read_qrels(source, issues):
        key = (row.caption_id, row.clip_id)
        if key in first_line:
            # trec_eval refuses a qrels file that judges one document twice for a query.
            issues.add(row.line, "doc_id", f"document '{row.clip_id}' is already judged for query "
                                           f"'{row.caption_id}' on line {first_line[key]}")
            continue
        first_line[key] = row.line
        qrels.setdefault(row.caption_id, {})[row.clip_id] = row.relevance
    source.check_not_empty()
    issues.raise_if_any()
    return Judgments("qrels", path.name, qrels)


def read_sample_eval(path: Path) -> Judgments:
    issues = IssueCollector(path.name)
    qrels = load_sample_eval_qrels(LineSource(path, issues), issues)
    issues.raise_if_any()
    return Judgments("sample_eval", path.name, qrels, tuple(stratum_table(qrels)))


@dataclass(frozen=True)
class JudgmentFormat:
    name: str
    read: Callable[[Path], Judgments]
    measure_family: str  # key of measures.FAMILIES
    default_conventions: str  # key of conventions.CONVENTIONS
    run_formats: tuple[str, ...] = ("trec",)  # keys of runs.RUN_READERS it can score, the default first
    outputs: tuple[str, ...] = ("table", "json", "trec_eval", "sample_eval")  # keys of writers.WRITERS


JUDGMENT_FORMATS: dict[str, JudgmentFormat] = {
    "qrels": JudgmentFormat("qrels", read_trec_qrels, "trec_eval", "trec"),
    "sample_eval": JudgmentFormat("sample_eval", read_sample_eval, "sample_eval", "trecvid"),
}
