"""`evaluate`'s options and its file-only run, without Django: the command (evaluate.py) reads its
options from here, and `manage.py evaluate --judgments FILE ...` runs from here before Django is
imported at all (run_without_setup).

Importing django.core.management costs about a tenth of a second, a quarter of a file-only
`evaluate` on TREC-sized files (issue 40: at most pytrec_eval's time). Only the happy path runs
here: anything else (a usage error, an option this parser does not know, a refused file, a bad
option value) makes run_without_setup return False, and Django's own entry point runs the command
again and prints the problem as it always has.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from annotation.analysis.judged import JUDGED_THRESHOLD
from annotation.analysis.params import ParamInvalid, params_clean
from annotation.formats.errors import ImportRejected
from annotation.services.evaluation.conventions import CONVENTIONS
from annotation.services.evaluation.errors import EvaluationError
from annotation.services.evaluation.evaluate import Evaluation, evaluate
from annotation.services.evaluation.registry import JUDGMENT_FORMATS, RUN_READERS
from annotation.services.evaluation.writers import WRITERS

from ._declared import add_declared_arguments, declared_given

#: Options declared once elsewhere (the threshold is the leaderboard's and the client's too).
DECLARED = {"judged_threshold": JUDGED_THRESHOLD}


def add_evaluate_arguments(parser, *, rater_choices: bool = True) -> None:
    """`evaluate`'s options. ``rater_choices=False`` (run_without_setup) leaves the values of
    --repeats and --aggregate to the rater_labels reader, which refuses any but its rules' (then
    Django's parser, with the choices, names the problem): their rules are declared in modules of
    NumPy arrays, which a file-only `evaluate` of TREC qrels never imports otherwise (issue 40)."""
    repeat_rules = aggregates = None
    if rater_choices:
        from annotation.analysis.grades import AGGREGATES as aggregates
        from annotation.analysis.repeats import REPEAT_RULES as repeat_rules
    parser.add_argument("runs", nargs="*", type=Path, metavar="RUN")
    parser.add_argument("--judgments", type=Path, metavar="FILE")
    parser.add_argument("--judgments-format", choices=list(JUDGMENT_FORMATS))
    parser.add_argument("--release", metavar="NAME@vN",
                        help="Score against a stored release's qrels.txt (the file its archive holds, which "
                             "the client's evaluate reads), as qrels; run files only.")
    parser.add_argument("--dataset", help="With --judgment-set: score against a stored set of this dataset.")
    parser.add_argument("--judgment-set", metavar="NAME",
                        help="A stored judgment set, read with the options it was imported with.")
    parser.add_argument("--run", action="append", default=[], metavar="NAME", dest="stored_runs",
                        help="A stored run of the dataset (repeat for several); with --judgment-set.")
    parser.add_argument("--with-originals", action="store_true",
                        help="With --judgment-set: the dataset's original positives stay relevant and FIRE's "
                             "A (B + C) is added (qrels, fire_json, rater_labels sets).")
    parser.add_argument("--store", action="store_true",
                        help="With --judgment-set: keep the result as a report (parameters, run checksums, "
                             "library versions).")
    parser.add_argument("--run-format", choices=list(RUN_READERS),
                        help="Default: trec, or the judgments' own format for a moment benchmark.")
    parser.add_argument("--conventions", choices=list(CONVENTIONS),
                        help="Default: the judgments format's own tool (sample_eval: trecvid, qrels: trec).")
    parser.add_argument("--measures", nargs="+", metavar="NAME",
                        help="trec_eval or ir_measures names for qrels (map, P_10, AP, P@10, nDCG@10, ...); "
                             "sample_eval's names for sample_eval (infAP, infNDCG, iP10, ...). Default: a "
                             "common set for qrels, everything sample_eval prints for sample_eval.")
    parser.add_argument("--output", default="table", choices=list(WRITERS))
    parser.add_argument("--queries", type=Path, metavar="FILE",
                        help="fire_json: a TSV query_id<TAB>text mapping the run's query ids to FIRE's caption "
                             "texts (FIRE names queries by their text).")
    parser.add_argument("--originals", type=Path, metavar="FILE",
                        help="qrels, fire_json, rater_labels: TREC qrels of the benchmark's original positives; "
                             "they stay relevant, and FIRE's A (B + C) is added, B scored on them alone.")
    parser.add_argument("--columns", metavar="NAME=COLUMN,...",
                        help="rater_labels: map the file's columns, e.g. query=query_id,item=video,rater=worker,"
                             "value=relevance. Names: query, item, rater, value, time.")
    parser.add_argument("--repeats", choices=repeat_rules,
                        help="rater_labels: one rater's repeated labels of a pair: keep the last (default; by the "
                             "time column when there is one, else file order), the first, or all.")
    parser.add_argument("--aggregate", choices=aggregates,
                        help="rater_labels: the raters' values of a pair become one grade by their mean (default, "
                             "TVR-Ranking's rule), median or majority, rounded half up to a whole grade.")
    add_declared_arguments(parser, DECLARED)


def files_only(options) -> bool:
    """True when the options name a judgments file and nothing stored: no database, no app registry."""
    return bool(options["judgments"]) and not any(
        options[k] for k in ("dataset", "judgment_set", "stored_runs", "store", "with_originals", "release"))


def evaluate_files(opts, threshold: float) -> Evaluation:
    """The run files scored against the judgments file the options name; raises what evaluate() raises."""
    options = {k: opts[k] for k in ("queries", "originals", "columns", "repeats", "aggregate")}
    return evaluate(opts["runs"], opts["judgments"], opts["judgments_format"], conventions=opts["conventions"],
                    measures=opts["measures"], run_format=opts["run_format"], output=opts["output"],
                    judgments_options=options, judged_threshold=threshold)


class _Declined(Exception):
    """Raised by the parser instead of printing a usage error: Django's parser prints it."""


class _QuietParser(argparse.ArgumentParser):
    def error(self, message):
        raise _Declined(message)


class _Lines:
    """Django's OutputWrapper on a stream that is not styled: every write ends with a newline."""

    def __init__(self, out) -> None:
        self._out = out

    def write(self, text: str) -> None:
        self._out.write(text if text.endswith("\n") else text + "\n")


def run_without_setup(args: list[str]) -> bool:
    """Runs `evaluate ARGS` when they name files only and all goes well; False, having printed
    nothing, otherwise (help, Django's own options, a stored set, any error)."""
    parser = _QuietParser(add_help=False)
    add_evaluate_arguments(parser, rater_choices=False)
    try:
        options, unknown = parser.parse_known_args(args)
    except _Declined:
        return False
    opts = vars(options)
    if unknown or not files_only(opts) or not opts["runs"] or not opts["judgments_format"]:
        return False
    try:
        threshold = params_clean(DECLARED, declared_given(opts, DECLARED))["judged_threshold"]
        result = evaluate_files(opts, threshold)
    except (ParamInvalid, EvaluationError, ImportRejected, OSError):
        return False
    result.write(opts["output"], _Lines(sys.stdout))
    return True
