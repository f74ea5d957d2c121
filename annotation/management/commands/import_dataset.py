from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.formats.errors import ImportRejected
from annotation.services.datasets.imports import dataset_import
from annotation.services.datasets.operations import DATASET_IMPORT
from annotation.services.media.check import dataset_media_check

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._media import media_problem_lines, media_summary_lines
from ._progress import ConsoleProgress, rejected_to_command_error


class Command(BaseCommand):
    help = ("Import a dataset (clips and captions) from a manifest (JSONL/CSV) or a benchmark file "
            "(MSR-VTT 1K-A CSV, MSVD test TSV, YouCook2 JSON, EPIC-KITCHENS-100 retrieval CSV). All or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        # The upload endpoint's fields, from the import job's declarations.
        add_declared_arguments(parser, DATASET_IMPORT.params)
        parser.add_argument("--no-media-check", action="store_true",
                            help="do not check the clips' media after the import (check_media does it later)")

    def handle(self, *args, **opts):
        path: Path = opts["path"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        chosen = declared_clean(DATASET_IMPORT.params, declared_given(opts, DATASET_IMPORT.params),
                                owner="import_dataset")
        try:
            dataset = dataset_import(path=path, name=chosen["name"], fmt=chosen["format"] or None,
                                     media_template=chosen["media_template"], description=chosen["description"],
                                     progress=ConsoleProgress(f"reading {path.name}"))
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        self.stdout.write(self.style.SUCCESS(
            f"dataset '{dataset.name}' (id {dataset.pk}): {dataset.clips.count():,} clips, {dataset.captions.count():,} captions"))
        if not opts["no_media_check"] and dataset.clips.exclude(media="").exists():
            # As the upload's job does: every import is followed by a media check.
            summary = dataset_media_check(dataset, progress=ConsoleProgress("checking media"))
            self.stdout.write("\n".join(media_summary_lines(summary) + media_problem_lines(dataset, limit=20)))
