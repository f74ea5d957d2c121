from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.formats.datasets import DATASET_FORMATS
from annotation.formats.errors import ImportRejected
from annotation.services.datasets.imports import dataset_import

from ._progress import ConsoleProgress, rejected_to_command_error


class Command(BaseCommand):
    help = ("Import a dataset (clips and captions) from a manifest (JSONL/CSV) or a benchmark file "
            "(MSR-VTT 1K-A CSV, MSVD test TSV, YouCook2 JSON, EPIC-KITCHENS-100 retrieval CSV). All or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--name", required=True, help="Dataset name (unique).")
        parser.add_argument("--format", choices=DATASET_FORMATS, help="Default: guessed from the file name and header.")
        parser.add_argument("--media-template", default="",
                            help="Maps clips to files or URLs, e.g. 'https://host/msrvtt/{video_id}.mp4' or 'msrvtt/{clip_id}.mp4' "
                                 "(relative paths are under MEDIA_ROOT).")
        parser.add_argument("--description", default="")

    def handle(self, *args, **opts):
        path: Path = opts["path"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            dataset = dataset_import(path=path, name=opts["name"], fmt=opts["format"], media_template=opts["media_template"],
                                     description=opts["description"], progress=ConsoleProgress(f"reading {path.name}"))
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        self.stdout.write(self.style.SUCCESS(
            f"dataset '{dataset.name}' (id {dataset.pk}): {dataset.clips.count():,} clips, {dataset.captions.count():,} captions"))
