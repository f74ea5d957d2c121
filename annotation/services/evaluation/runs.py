"""Run files read for scoring only (nothing stored, no dataset needed).

Reuses the TREC run reader of annotation.formats.runs for per-line checks; adds what scoring
needs across lines: a document listed twice for one query is refused (trec_eval stops on it, and
sample_eval.pl would keep the last score but count both lines), and the rank column is ignored,
as the official tools ignore it: order comes from the scores (see analysis.rank_order.trec_order).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from annotation.analysis.rank_order import trec_order
from annotation.formats.errors import IssueCollector
from annotation.formats.runs import read_trec, trec_scores
from annotation.formats.text_lines import LineSource


@dataclass(frozen=True)
class ScoredRun:
    name: str  # the file name, which tells runs apart in outputs
    tag: str  # the run tag of the first line (trec_eval's runid)
    scores: dict[str, dict[str, float]]  # query -> doc -> score, as in the file

    @cached_property
    def ranked(self) -> dict[str, list[str]]:
        """Query -> doc ids in the tools' rank order, every line kept. Sorted when first asked
        for: trec_eval, given the scores, sorts them by the same rule itself (measures.py)."""
        return {q: trec_order(list(docs), list(docs.values())) for q, docs in self.scores.items()}

    def truncated(self, max_result_size: int | None) -> dict[str, list[str]]:
        if max_result_size is None:
            return self.ranked
        return {q: docs[:max_result_size] for q, docs in self.ranked.items()}


def read_trec_run(path: Path) -> ScoredRun:
    """Reads a TREC run file; raises ImportRejected naming file, line and field of every problem."""
    path = Path(path)
    fast = trec_scores(path)
    if fast is not None:
        tag, scores = fast
        return ScoredRun(path.name, tag, scores)
    issues = IssueCollector(path.name)
    source = LineSource(path, issues)
    scores: dict[str, dict[str, float]] = {}
    first_line: dict[tuple[str, str], int] = {}
    tag = ""
    for row in read_trec(source, issues):
        if row.start is not None:
            issues.add(row.line, "start", "a ranked-retrieval run has 6 columns; start/end columns belong to a "
                                          "moment run")
            continue
        key = (row.caption_id, row.clip_id)
        if key in first_line:
            issues.add(row.line, "doc_id", f"document '{row.clip_id}' is already listed for query "
                                           f"'{row.caption_id}' on line {first_line[key]}")
            continue
        first_line[key] = row.line
        tag = tag or (row.tag or "")
        scores.setdefault(row.caption_id, {})[row.clip_id] = row.score
    source.check_not_empty()
    issues.raise_if_any()
    return ScoredRun(path.name, tag, scores)
