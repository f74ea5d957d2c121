"""TRECVID `sample_eval` qrels: `topic iteration shot stratum rel`, one pooled shot a line.

NIST's stratified judgments for AVS (read by `sample_eval.pl`): every shot of the pool is listed
with the stratum it was sampled from; `rel` is 1 relevant, 0 not relevant, -1 pooled but not
judged (left out of the sample). Larger whole numbers are graded relevance (sample_eval uses the
grade as infNDCG's gain). Stratum ids are kept as the file writes them (strings), since
sample_eval treats them as opaque keys.

Per topic and stratum the pool gives the sampling design the estimators need: pooled count
`N_s`, judged count `n_s` (rel >= 0), relevant count `r_s` (rel >= 1) and the inclusion
probability `n_s / N_s`.

The reader reports per-line problems (field count, rel that is not a whole number or is below
-1, a shot listed twice for a topic) to an IssueCollector, so a refused file names each bad line.
sample_eval.pl itself would overwrite a repeated shot's rel but count it twice in the stratum
sizes; a file with repeats has no single meaning, hence the refusal.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from annotation.analysis.storable_text import text_problem

from .errors import IssueCollector
from .fields import MAX_ID_LENGTH
from .text_lines import LineSource, whole_text

NOT_JUDGED = -1

#: `{topic: {shot: (stratum, rel)}}`, the shape annotation.analysis.sample_eval takes.
StratifiedQrels = dict[str, dict[str, tuple[str, int]]]


class SampleEvalRow(NamedTuple):
    line: int
    topic: str
    shot: str
    stratum: str
    rel: int


@dataclass(frozen=True)
class StratumRow:
    """One stratum of one topic's pool."""

    topic: str
    stratum: str
    pooled: int
    judged: int
    relevant: int

    @property
    def inclusion_probability(self) -> float:
        return self.judged / self.pooled if self.pooled else 0.0

    def as_dict(self) -> dict:
        return {"topic": self.topic, "stratum": self.stratum, "pooled": self.pooled, "judged": self.judged,
                "relevant": self.relevant, "inclusion_probability": self.inclusion_probability}


def read_sample_eval_qrels(source: LineSource, issues: IssueCollector) -> Iterator[SampleEvalRow]:
    for line, text in source:
        parts = text.split()
        if len(parts) != 5:
            hint = " (a 4-column TREC qrels file? use --judgments-format qrels)" if len(parts) == 4 else ""
            issues.add(line, None, f"expected 5 fields 'topic 0 shot stratum rel', found {len(parts)}{hint}")
            continue
        topic, _iteration, shot, stratum, raw_rel = parts
        bad = next(((name, problem) for name, value in (("topic", topic), ("shot", shot), ("stratum", stratum))
                    if (problem := text_problem(value, max_length=MAX_ID_LENGTH))), None)
        if bad:
            issues.add(line, bad[0], f"the {bad[0]} id {bad[1]}")
            continue
        try:
            rel = int(raw_rel)
        except ValueError:
            issues.add(line, "rel", f"'{raw_rel}' is not a whole number (1 relevant, 0 not relevant, -1 not judged)")
            continue
        if rel < NOT_JUDGED:
            issues.add(line, "rel", f"{rel} is below -1 (use -1 for pooled but not judged)")
            continue
        yield SampleEvalRow(line, topic, shot, stratum, rel)


def load_sample_eval_qrels(source: LineSource, issues: IssueCollector) -> StratifiedQrels:
    """Reads the whole file into `{topic: {shot: (stratum, rel)}}`; problems go to `issues`.

    The caller raises `issues.raise_if_any()`: a file with any bad line is refused whole.
    """
    qrels: StratifiedQrels = {}
    for row in unique_sample_eval_rows(source, issues):
        qrels.setdefault(row.topic, {})[row.shot] = (row.stratum, row.rel)
    source.check_not_empty()
    return qrels


def sample_eval_qrels_dict(path) -> StratifiedQrels | None:
    """load_sample_eval_qrels of a well-formed file in one pass (about 5x faster on a TRECVID-sized
    file). None when any line breaks a rule the line reader checks: the caller then reads with
    load_sample_eval_qrels, which names every problem."""
    text = whole_text(path)
    if text is None:
        return None
    qrels: StratifiedQrels = {}
    try:
        for line in text.split("\n"):
            parts = line.split()
            if not parts:
                continue
            topic, _, shot, stratum, raw = parts  # ValueError unless 5 fields
            if len(line) > MAX_ID_LENGTH and max(len(topic), len(shot), len(stratum)) > MAX_ID_LENGTH:
                return None
            rel = int(raw)
            shots = qrels.get(topic)
            if shots is None:
                shots = qrels[topic] = {}
            if rel < NOT_JUDGED or shot in shots:
                return None
            shots[shot] = (stratum, rel)
    except ValueError:
        return None
    return qrels or None


def unique_sample_eval_rows(source: LineSource, issues: IssueCollector) -> Iterator[SampleEvalRow]:
    """The file's rows, a shot listed twice for a topic reported (with its first line) and skipped."""
    first_line: dict[tuple[str, str], int] = {}
    for row in read_sample_eval_qrels(source, issues):
        key = (row.topic, row.shot)
        if key in first_line:
            issues.add(row.line, "shot", f"shot '{row.shot}' of topic '{row.topic}' is already listed on line "
                                         f"{first_line[key]}")
            continue
        first_line[key] = row.line
        yield row


def stratum_table(qrels: StratifiedQrels) -> list[StratumRow]:
    """Pooled, judged and relevant counts per (topic, stratum), in file order of first appearance."""
    counts: dict[tuple[str, str], list[int]] = {}
    for topic, shots in qrels.items():
        for stratum, rel in shots.values():
            c = counts.setdefault((topic, stratum), [0, 0, 0])
            c[0] += 1
            c[1] += rel >= 0
            c[2] += rel >= 1
    return [StratumRow(topic, stratum, *c) for (topic, stratum), c in counts.items()]
