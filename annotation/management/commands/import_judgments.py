from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.formats.errors import ImportRejected
from annotation.models import Dataset
from annotation.services.judgment_sets.counts import counts_in_words
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.judgment_sets.operations import IMPORT, READING_OPTIONS

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._progress import ConsoleProgress, rejected_to_command_error

#: The import job's declared parameters this command takes as options (--no-seed stands for seeds_pools).
OPTIONS = ("format", "name", "only_dataset", *READING_OPTIONS)


class Command(BaseCommand):
    help = ("Import a named set of existing judgments for a dataset: TREC qrels, TRECVID sample_eval qrels, a FIRE "
            "dataset JSON, raw multi-rater labels, or QVHighlights/TVR/DiDeMo moment ground truth. The file is kept "
            "as imported (evaluate --dataset D --judgment-set NAME scores it). Pools built afterwards take the "
            "verdicts of qrels, sample_eval and FIRE sets and queue only unjudged pairs. All or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--dataset", required=True, help="Name of the dataset the judgments are about.")
        add_declared_arguments(parser, IMPORT.params, names=OPTIONS)
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
        chosen = declared_clean(IMPORT.params, declared_given(opts, IMPORT.params, names=OPTIONS),
                                owner="import_judgments")
        try:
            options = {name: chosen[name] for name in READING_OPTIONS}
            outcome = judgments_import(dataset=dataset, path=path, fmt=chosen["format"], name=chosen["name"] or None,
                                       only_dataset=chosen["only_dataset"] or None, options=options,
                                       seeds_pools=False if opts["no_seed"] else None,
                                       progress=ConsoleProgress(f"reading {path.name}"))
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        judgment_set = outcome.judgment_set
        verb = "imported" if outcome.created else "already imported (same file), nothing changed:"
        self.stdout.write(self.style.SUCCESS(f"{verb} judgments '{judgment_set.name}' (id {judgment_set.pk}): "
                                             f"{counts_in_words(judgment_set.counts)}"))
