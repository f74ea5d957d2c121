from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.formats.errors import ImportRejected
from annotation.models import Dataset
from annotation.services.judgment_sets.counts import counts_in_words
from annotation.services.judgment_sets.imports import JUDGMENT_FORMATS, REPEAT_RULES, judgments_import

from ._progress import ConsoleProgress, rejected_to_command_error


class Command(BaseCommand):
    help = ("Import a named set of existing judgments for a dataset: TREC qrels, TRECVID sample_eval qrels, a FIRE "
            "dataset JSON, raw multi-rater labels, or QVHighlights/TVR/DiDeMo moment ground truth. The file is kept "
            "as imported (evaluate --dataset D --judgment-set NAME scores it). Pools built afterwards take the "
            "verdicts of qrels, sample_eval and FIRE sets and queue only unjudged pairs. All or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--dataset", required=True, help="Name of the dataset the judgments are about.")
        parser.add_argument("--format", choices=JUDGMENT_FORMATS,
                            help="Default: fire_json if the file is a JSON object, sample_eval if its lines have 5 "
                                 "fields, else qrels; name the others.")
        parser.add_argument("--name", default="", help="Name of this set of judgments (default: the file name).")
        parser.add_argument("--only-dataset", default="", help="Keep only FIRE records of this 'dataset' tag, e.g. MSVD.")
        parser.add_argument("--columns", default="", metavar="MAPPING",
                            help="rater_labels: which column is which, e.g. unit=pair_id,rater=worker,value=relevance "
                                 "(default query,item,rater,value[,time]).")
        parser.add_argument("--repeats", choices=REPEAT_RULES, default=None,
                            help="rater_labels: which of one rater's repeated labels of a unit count when the set "
                                 "is used (default last).")
        parser.add_argument("--file-format", choices=("csv", "jsonl"), default=None,
                            help="rater_labels: default from the file name or its first character.")
        parser.add_argument("--no-seed", action="store_true",
                            help="Pools do not take this set's verdicts (it may then contradict the sets they take, "
                                 "e.g. a re-judged copy of the benchmark's qrels).")

    def handle(self, *args, **opts):
        path: Path = opts["path"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            dataset = Dataset.objects.get(name=opts["dataset"])
        except Dataset.DoesNotExist as exc:
            raise CommandError(f"no dataset named '{opts['dataset']}'") from exc
        try:
            options = {"columns": opts["columns"], "repeats": opts["repeats"], "file_format": opts["file_format"]}
            outcome = judgments_import(dataset=dataset, path=path, fmt=opts["format"], name=opts["name"] or None,
                                       only_dataset=opts["only_dataset"] or None, options=options,
                                       seeds_pools=False if opts["no_seed"] else None,
                                       progress=ConsoleProgress(f"reading {path.name}"))
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        judgment_set = outcome.judgment_set
        verb = "imported" if outcome.created else "already imported (same file), nothing changed:"
        self.stdout.write(self.style.SUCCESS(f"{verb} judgments '{judgment_set.name}' (id {judgment_set.pk}): "
                                             f"{counts_in_words(judgment_set.counts)}"))
