from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.analysis.grades import AGGREGATES
from annotation.analysis.repeats import REPEAT_RULES
from annotation.formats.errors import ImportRejected
from annotation.services.evaluation import (CONVENTIONS, JUDGMENT_FORMATS, RUN_READERS, WRITERS, EvaluationError,
                                            evaluate)

from ._progress import rejected_to_command_error


class Command(BaseCommand):
    help = ("Score run files against a judgments file as the official tools do (trec_eval for TREC qrels, "
            "NIST's sample_eval.pl for TRECVID stratified qrels, Moment-DETR's and TVRetrieval's "
            "standalone_eval for QVHighlights and TVR moments). Nothing is stored.")

    def add_arguments(self, parser):
        parser.add_argument("runs", nargs="+", type=Path, metavar="RUN")
        parser.add_argument("--judgments", required=True, type=Path, metavar="FILE")
        parser.add_argument("--judgments-format", required=True, choices=list(JUDGMENT_FORMATS))
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
        parser.add_argument("--repeats", choices=REPEAT_RULES,
                            help="rater_labels: one rater's repeated labels of a pair: keep the last (default; by the "
                                 "time column when there is one, else file order), the first, or all.")
        parser.add_argument("--aggregate", choices=AGGREGATES,
                            help="rater_labels: the raters' values of a pair become one grade by their mean (default, "
                                 "TVR-Ranking's rule), median or majority, rounded half up to a whole grade.")

    def handle(self, *args, **opts):
        for path in [opts["judgments"], *opts["runs"]]:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
        try:
            result = evaluate(opts["runs"], opts["judgments"], opts["judgments_format"],
                              conventions=opts["conventions"], measures=opts["measures"],
                              run_format=opts["run_format"], output=opts["output"],
                              judgments_options={k: opts[k] for k in ("queries", "originals", "columns", "repeats",
                                                                      "aggregate")})
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        except EvaluationError as exc:
            raise CommandError(str(exc)) from exc
        result.write(opts["output"], self.stdout)
