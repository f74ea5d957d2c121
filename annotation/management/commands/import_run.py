import argparse
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.formats.errors import ImportRejected
from annotation.models import Dataset
from annotation.services.datasets.operations import RUN_IMPORT
from annotation.services.datasets.runs import ALL_RANKS, run_import

from ._declared import add_declared_arguments, declared_clean, declared_given, option_name
from ._progress import ConsoleProgress, rejected_to_command_error

#: The upload endpoint's fields, from the import job's declarations (--max-depth also takes 'all').
OPTIONS = ("name", "format")


def max_depth(text: str) -> int:
    """`all` (or 0) keeps full rankings; otherwise a positive whole number."""
    if text.strip().lower() == "all":
        return ALL_RANKS
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive whole number or 'all'")
    return value


class Command(BaseCommand):
    help = ("Import a run (ranked predictions) in TREC run, CSV, JSON Lines or JSON format, or a score matrix (.npz: "
            "scores captions x clips, caption_ids, clip_ids) into a dataset. All or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--dataset", required=True, help="Name of the dataset the run ranks.")
        add_declared_arguments(parser, RUN_IMPORT.params, names=OPTIONS)
        parser.add_argument(option_name("max_depth"), type=max_depth, default=None, metavar="N|all",
                            help=f"{RUN_IMPORT.params['max_depth'].description} 'all' also keeps full rankings.")

    def handle(self, *args, **opts):
        path: Path = opts["path"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            dataset = Dataset.objects.get(name=opts["dataset"])
        except Dataset.DoesNotExist as exc:
            raise CommandError(f"no dataset named '{opts['dataset']}'") from exc
        given = declared_given(opts, RUN_IMPORT.params, names=(*OPTIONS, "max_depth"))
        chosen = declared_clean(RUN_IMPORT.params, given, owner="import_run")
        try:
            outcome = run_import(dataset=dataset, path=path, name=chosen["name"] or None, fmt=chosen["format"] or None,
                                 max_depth=chosen["max_depth"], progress=ConsoleProgress(f"reading {path.name}"))
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        run = outcome.run
        verb = "imported" if outcome.created else "already imported (same file), nothing changed:"
        self.stdout.write(self.style.SUCCESS(
            f"{verb} run '{run.name}' (id {run.pk}, {run.kind}): {run.prediction_count:,} predictions "
            f"for {run.caption_count:,} captions, depth {run.depth}"
            + (" (a score matrix: rankings are read from the stored file)" if run.scores_file else "")))
