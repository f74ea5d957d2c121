"""Judgment files read for scoring only: what every format's reader returns (Judgments) and the
readers of TREC qrels and sample_eval's stratified qrels.

Each format (registry.JUDGMENT_FORMATS) names its reader, which takes the file's path and keyword
options (``--queries``, ``--columns`` ...), the measure family that scores runs against it and the
conventions that apply by default (the official tool of that format).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from annotation.formats.errors import IssueCollector
from annotation.formats.qrels import qrels_dict, read_qrels
from annotation.formats.text_lines import LineSource

from .errors import EvaluationError

if TYPE_CHECKING:
    from annotation.formats.sample_eval_qrels import StratumRow


@dataclass(frozen=True)
class Judgments:
    format: str
    name: str  # file name
    qrels: dict  # graded: {query: {doc: rel}}; stratified: {topic: {shot: (stratum, rel)}}
    strata: tuple[StratumRow, ...] = ()  # stratified formats only
    #: The benchmark's original positives {query: {doc}}, when known: the trec_eval family then
    #: keeps them relevant whatever the judgments say (FIRE's convention) and adds FIRE's
    #: `A (B + C)` layout, B scored against the originals alone.
    originals: dict[str, set[str]] | None = None
    #: How the file became qrels, when that took a rule (printed with the conventions).
    rules: str | None = None
    #: Said when no query of a run is in the judgments (e.g. FIRE names queries by their text).
    hint: str | None = None
    #: Scorers built on these qrels, kept for the next run scored against them (measures.py):
    #: building pytrec_eval's copy of 100,000 judgments is as long as scoring a run.
    scorers: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def queries(self) -> int:
        return len(self.qrels)


def read_trec_qrels(path: Path, *, originals: Path | None = None) -> Judgments:
    fast = qrels_dict(path)
    if fast is not None:
        return Judgments("qrels", path.name, fast, originals=read_originals(originals))
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
    return Judgments("qrels", path.name, qrels, originals=read_originals(originals))


def read_originals(path: Path | None) -> dict[str, set[str]] | None:
    """The benchmark's original positives from a TREC qrels file (lines with relevance >= 1; the
    others are ignored: every pair not listed is an original negative anyway)."""
    if path is None:
        return None
    path = Path(path)
    if not path.is_file():
        raise EvaluationError(f"--originals {path}: no such file")
    issues = IssueCollector(path.name)
    source = LineSource(path, issues)
    originals: dict[str, set[str]] = {}
    for row in read_qrels(source, issues):
        if row.relevance >= 1:
            originals.setdefault(row.caption_id, set()).add(row.clip_id)
    source.check_not_empty()
    if not originals and not issues:
        issues.add(None, "relevance", "no line has relevance >= 1: the file names no original positive")
    issues.raise_if_any()
    return originals


def read_sample_eval(path: Path) -> Judgments:
    # Imported here: TREC qrels, the common case, never need it.
    from annotation.formats.sample_eval_qrels import load_sample_eval_qrels, sample_eval_qrels_dict, stratum_table

    qrels = sample_eval_qrels_dict(path)
    if qrels is None:
        issues = IssueCollector(path.name)
        qrels = load_sample_eval_qrels(LineSource(path, issues), issues)
        issues.raise_if_any()
    return Judgments("sample_eval", path.name, qrels, tuple(stratum_table(qrels)))
