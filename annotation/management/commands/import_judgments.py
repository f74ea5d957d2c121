from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.formats.errors import ImportRejected
from annotation.models import Dataset
from annotation.services.judgment_sets.imports import JUDGMENT_FORMATS, judgments_import

from ._progress import ConsoleProgress, rejected_to_command_error


class Command(BaseCommand):
    help = ("Import existing judgments (a published FIRE dataset JSON, or TREC qrels) for a dataset. Pools built "
            "afterwards take these verdicts and queue only unjudged pairs. All or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--dataset", required=True, help="Name of the dataset the judgments are about.")
        parser.add_argument("--format", choices=JUDGMENT_FORMATS, help="Default: fire_json if the file is a JSON object, else qrels.")
        parser.add_argument("--name", default="", help="Name of this set of judgments (default: the file name).")
        parser.add_argument("--only-dataset", default="", help="Keep only FIRE records of this 'dataset' tag, e.g. MSVD.")

    def handle(self, *args, **opts):
        path: Path = opts["path"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            dataset = Dataset.objects.get(name=opts["dataset"])
        except Dataset.DoesNotExist as exc:
            raise CommandError(f"no dataset named '{opts['dataset']}'") from exc
        try:
            outcome = judgments_import(dataset=dataset, path=path, fmt=opts["format"], name=opts["name"] or None,
                                       only_dataset=opts["only_dataset"] or None,
                                       progress=ConsoleProgress(f"reading {path.name}"))
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        judgment_set = outcome.judgment_set
        verb = "imported" if outcome.created else "already imported (same file), nothing changed:"
        self.stdout.write(self.style.SUCCESS(f"{verb} judgments '{judgment_set.name}' (id {judgment_set.pk}): "
                                             f"{judgment_set.counts}"))
