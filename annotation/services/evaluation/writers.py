"""Output layouts of `evaluate`, by --output name: each writes a list of RunScores to a stream.

``trec_eval`` and ``sample_eval`` reproduce the official tools' lines (same names, tabs and number
formats) so a user can diff them against the tools' output; ``json`` writes one object per run
and line; ``table`` is for reading.
"""
from __future__ import annotations

import json
import math
from dataclasses import replace
from collections.abc import Callable
from typing import TextIO

from annotation.analysis.judged import below_threshold, not_comparable_note

from .conventions import Conventions
from .judgments import Judgments
from .measures import RunScores

Writer = Callable[[list[RunScores], Judgments, Conventions, TextIO], None]


def _value(scores: RunScores, name: str, value) -> int | float | None:
    if isinstance(value, float) and math.isnan(value):
        # Moment-DETR prints NaN for a length bin no query falls in; JSON has no NaN, null says the same.
        return None
    return int(value) if name in scores.integer_names else float(value)


def trec_eval_line(name: str, query: str, value, integer: bool) -> str:
    # meas_print_single.c / meas_print_final.c: "%-22s\t%s\t%6.4f" (and "%ld" for counts).
    shown = f"{int(value)}" if integer else f"{value:6.4f}"
    return f"{name:<22}\t{query}\t{shown}"


def sample_eval_line(name: str, query: str, value, integer: bool) -> str:
    # sample_eval.pl's printf formats, tabs included.
    if name in ("inum_rel_ret", "inum_rel"):
        return f"{name}\t{query}\t{value:14.4f}"
    if integer:
        return f"{name}\t\t{query}\t{int(value):9d}"
    if name.startswith("iprec@rec"):
        return f"{name}\t{query}\t\t{value:6.4f}"
    return f"{name}\t\t{query}\t\t{value:6.4f}"


def _lines(scores: RunScores, line: Callable[[str, str, object, bool], str]) -> list[str]:
    out = []
    for query, values in scores.per_query.items():
        out += [line(n, query, values[n], n in scores.integer_names) for n in scores.per_query_names if n in values]
    out += [line(n, "all", scores.all[n], n in scores.integer_names) for n in scores.all_names]
    return out


def write_trec_eval(results: list[RunScores], judgments: Judgments, conventions: Conventions, out: TextIO) -> None:
    """`trec_eval -q` layout: per query (in trec_eval's query order, by id text), then `all`.

    With several runs each block starts with trec_eval's own `runid` line so blocks can be told apart.
    """
    for scores in results:
        if len(results) > 1:
            out.write(f"{'runid':<22}\tall\t{scores.tag or scores.run}\n")
        if judgments.format != "qrels":
            # sample_eval topics come numerically ordered; trec_eval orders query ids as text.
            scores = _reordered(scores, sorted(scores.per_query))
        out.write("".join(line + "\n" for line in _lines(scores, trec_eval_line)))


def _reordered(scores: RunScores, order: list[str]) -> RunScores:
    return replace(scores, per_query={q: scores.per_query[q] for q in order})


def write_sample_eval(results: list[RunScores], judgments: Judgments, conventions: Conventions,
                      out: TextIO) -> None:
    """`sample_eval.pl -q` layout: a block per topic, then the `all` rows."""
    for scores in results:
        out.write("".join(line + "\n" for line in _lines(scores, sample_eval_line)))


def fire_abc(scores: RunScores) -> dict[str, dict] | None:
    """FIRE's `A (B + C)` per measure, in percent: A corrected, B original positives only, C = A - B
    (exact), and the text FIRE prints (one decimal, C as rounded A minus rounded B)."""
    if scores.original is None:
        return None
    from annotation.analysis.retrieval_metrics import format_abc  # imports SciPy: only when asked for

    out = {}
    for name, b in scores.original.items():
        a = scores.all[name]
        out[name] = {"A": 100 * a, "B": 100 * b, "C": 100 * (a - b), "text": format_abc(a, b)["text"]}
    return out


def judged_flags(scores: RunScores) -> dict[str, dict]:
    """Each measure cut at K -> its Judged@K and whether it is comparable with the leaderboard
    (``note``: the flag naming the threshold, None when comparable)."""
    t = scores.judged_threshold
    return {m: {"judged_measure": name, "judged": float(value), "comparable": not below_threshold(value, t),
                "note": not_comparable_note(name, value, t)} for m, (name, value) in scores.judged.items()}


def as_json(scores: RunScores, judgments: Judgments, conventions: Conventions) -> dict:
    doc = {
        "run": scores.run,
        "judgments": {"file": judgments.name, "format": judgments.format},
        "conventions": conventions.as_dict() | ({"judgments": judgments.rules} if judgments.rules else {}),
        "measures": {n: _value(scores, n, scores.all[n]) for n in scores.all_names},
        "per_query": {q: {n: _value(scores, n, v[n]) for n in scores.per_query_names if n in v}
                      for q, v in scores.per_query.items()},
        "queries": {"scored": len(scores.per_query), "unanswered": list(scores.unanswered),
                    "without_judgments": list(scores.without_judgments)},
    }
    fire = fire_abc(scores)
    if fire is not None:
        doc["fire"] = fire
    if scores.judged:
        doc["judged"] = judged_flags(scores)
        doc["judged_threshold"] = scores.judged_threshold
    return doc


def write_json(results: list[RunScores], judgments: Judgments, conventions: Conventions, out: TextIO) -> None:
    """One JSON object per run, one per line (a single run gives a single JSON document)."""
    for scores in results:
        out.write(json.dumps(as_json(scores, judgments, conventions)) + "\n")


def write_table(results: list[RunScores], judgments: Judgments, conventions: Conventions, out: TextIO) -> None:
    out.write(f"judgments: {judgments.name} ({judgments.format}, {judgments.queries} queries)\n")
    out.write(f"conventions: {conventions.describe()}\n")
    if judgments.rules:
        out.write(f"judgments read as: {judgments.rules}\n")
    if not results:
        return
    names = results[0].all_names
    width = max(3, *(len(r.run) for r in results))
    cells = [max(len(n), 6) for n in names]
    out.write(f"{'run':<{width}}  " + "  ".join(f"{n:>{c}}" for n, c in zip(names, cells)) + "  queries\n")
    for scores in results:
        shown = [f"{scores.all[n]:>{c}d}" if n in scores.integer_names else f"{scores.all[n]:>{c}.4f}"
                 for n, c in zip(names, cells)]
        out.write(f"{scores.run:<{width}}  " + "  ".join(shown) + f"  {len(scores.per_query)}\n")
    for scores in results:
        fire = fire_abc(scores)
        if fire:
            out.write(f"{scores.run}: FIRE A (B + C) in percent, A with the judgments and the originals, B with the "
                      f"original positives only: " + "; ".join(f"{n} {v['text']}" for n, v in fire.items()) + "\n")
    for scores in results:
        flags = judged_flags(scores)
        if not flags:
            continue
        shown = {}
        for m, f in flags.items():
            shown.setdefault((f["judged_measure"], f["judged"]), []).append(m)
        out.write(f"{scores.run}: Judged@K (share of the top K with a verdict): "
                  + ", ".join(f"{name} {value:.4f} ({', '.join(ms)})" for (name, value), ms in shown.items()) + "\n")
        for m, f in flags.items():
            if f["note"]:
                out.write(f"{scores.run}: {m} {scores.all[m]:.4f} is {f['note']}\n")
    for scores in results:
        if scores.unanswered:
            out.write(f"{scores.run}: {len(scores.unanswered)} judged queries not in the run, "
                      f"{scores.unanswered_rule}: "
                      f"{', '.join(scores.unanswered[:10])}{' ...' if len(scores.unanswered) > 10 else ''}\n")
        if scores.without_judgments:
            out.write(f"{scores.run}: {len(scores.without_judgments)} run queries without judgments, ignored: "
                      f"{', '.join(scores.without_judgments[:10])}"
                      f"{' ...' if len(scores.without_judgments) > 10 else ''}\n")


def write_didemo(results: list[RunScores], judgments: Judgments, conventions: Conventions, out: TextIO) -> None:
    """LocalizingMoments eval.py's own lines ("Average rank@1: %f"), a block per run, headed by the
    run's name when there are several."""
    for scores in results:
        if len(results) > 1:
            out.write(f"{scores.run}\n")
        out.write("".join(f"{n}: {scores.all[n]:f}\n" for n in scores.all_names))


WRITERS: dict[str, Writer] = {"table": write_table, "json": write_json, "trec_eval": write_trec_eval,
                              "sample_eval": write_sample_eval, "didemo": write_didemo}
