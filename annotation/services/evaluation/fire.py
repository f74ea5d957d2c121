"""FIRE dataset JSON as judgments for `evaluate` (``--judgments-format fire_json``).

FIRE names a pair by the caption TEXT (the record's ``"query"``) and the video file name
(``"video_id"``); with no dataset at hand those are the query and document ids. Each pair becomes
a binary qrels line: ``label`` relevant is 1, irrelevant 0, and a pair in ``"disagreements"``
(raters without a majority) is 0, judged not relevant: that is how FIRE counts unresolved pairs
(methodology section 3), and it keeps the pair judged for bpref and Judged@k.

A TREC run cannot carry a caption text as its query id (the columns are split on whitespace), so
``--queries FILE`` maps the run's query ids to FIRE's texts: a TSV ``query_id<TAB>text``, one
query a line, no header (a first line ``query_id<TAB>text`` is read as one and skipped). Several
ids may share a text (MSR-VTT 1K-A has 1,000 captions and 995 texts): each id gets that text's
judgments and counts once in the mean. Without the file, the run's query ids must be the texts.
"""
from __future__ import annotations

from pathlib import Path

from annotation.formats.errors import IssueCollector
from annotation.analysis.storable_text import text_problem
from annotation.formats.fields import MAX_ID_LENGTH, shown
from annotation.formats.fire_json import FireJsonReader
from annotation.formats.text_lines import LineSource

from .errors import EvaluationError
from .judgments import Judgments, read_originals

RULES = ("FIRE labels: relevant = 1, irrelevant = 0, disagreements (no majority) = 0, judged not relevant "
         "as FIRE counts unresolved pairs")


def read_queries_tsv(path: Path) -> dict[str, str]:
    """{run query id: caption text}; raises ImportRejected naming the line and field of each problem."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationError(f"--queries {path}: no such file")
    issues = IssueCollector(path.name)
    source = LineSource(path, issues)
    texts: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for line, raw in source:
        query_id, tab, text = raw.partition("\t")
        query_id, text = query_id.strip(), text.strip()
        if line == 1 and (query_id, text) == ("query_id", "text"):
            continue
        if not tab:
            issues.add(line, None, "expected two tab-separated fields 'query_id<TAB>text'")
            continue
        if not query_id or any(ch.isspace() for ch in query_id):
            issues.add(line, "query_id", f"{shown(query_id) if query_id else 'empty'}: a run query id is one "
                                         f"word (TREC run columns are split on whitespace)")
            continue
        id_problem = text_problem(query_id, max_length=MAX_ID_LENGTH)
        if id_problem:
            issues.add(line, "query_id", f"the id {id_problem}")
            continue
        problem = "is empty" if not text else text_problem(text)
        if problem:
            issues.add(line, "text", f"the caption text {problem}")
            continue
        if query_id in first_line:
            issues.add(line, "query_id", f"{shown(query_id)} is already mapped on line {first_line[query_id]}")
            continue
        first_line[query_id] = line
        texts[query_id] = text
    source.check_not_empty()
    issues.raise_if_any()
    return texts


def _fire_pairs(path: Path) -> dict[str, dict[str, int]]:
    """{caption text: {video_id: 0/1}}; a pair listed twice with different labels is refused."""
    issues = IssueCollector(path.name)
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], tuple[str, int]] = {}  # pair -> (where, line) of its first record
    for record in FireJsonReader(path, issues):
        rel = 1 if record.label == "relevant" else 0
        key = (record.query, record.video_id)
        if key in seen:
            where, line = seen[key]
            if qrels[record.query][record.video_id] != rel:
                issues.add(record.line, record.where, f"the pair ({shown(record.query)}, {shown(record.video_id)}) "
                                                      f"is also {where} (line {line}) with another label")
            continue
        seen[key] = (record.where, record.line)
        qrels.setdefault(record.query, {})[record.video_id] = rel
    issues.raise_if_any()
    if not qrels:
        issues.add(None, "annotations", "the file judges no pair")
        issues.raise_if_any()
    return qrels


def read_fire_judgments(path: Path, *, queries: Path | None = None, originals: Path | None = None) -> Judgments:
    """FIRE JSON as binary qrels keyed by caption text, or by the run query ids of ``queries``."""
    path = Path(path)
    by_text = _fire_pairs(path)
    if queries is None:
        return Judgments("fire_json", path.name, by_text, originals=read_originals(originals), rules=RULES,
                         hint="FIRE names queries by their caption text: give --queries FILE (query_id<TAB>text) "
                              "to map the run's query ids to FIRE's texts")
    texts = read_queries_tsv(queries)
    qrels = {qid: dict(by_text[text]) for qid, text in texts.items() if text in by_text}
    name = Path(queries).name
    if not qrels:
        raise EvaluationError(f"none of the {len(texts)} texts of {name} is a query of {path.name}: FIRE's "
                              f"query is the caption text exactly as the file writes it")
    mapped = len({texts[q] for q in qrels})
    rules = (f"{RULES}; run query ids mapped to FIRE texts by {name} ({len(qrels)} of its {len(texts)} ids, "
             f"{mapped} of FIRE's {len(by_text)} texts)")
    return Judgments("fire_json", path.name, qrels, originals=read_originals(originals), rules=rules,
                     hint=f"the run's query ids must be the query ids of {name}")
