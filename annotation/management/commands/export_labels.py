import shutil
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.services.exports import EXPORT_FORMATS, ExportError, artefact_file, export_create

from ._progress import ConsoleProgress
from .report import params_from_options, pool_from_option


class Command(BaseCommand):
    help = ("Export a pool's labels: TREC qrels, FIRE dataset JSON, or CSV / JSON Lines with full provenance. "
            "The file is kept under EXPORT_ROOT (researchers download it over the API); --out copies it too.")

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="Pool id, or its name if unique.")
        parser.add_argument("--format", required=True, choices=list(EXPORT_FORMATS))
        parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                            help="e.g. --param originals=false (qrels), --param dataset_tag=MSVD (fire_json).")
        parser.add_argument("--out", type=Path, help="Also copy the file here ('-' prints it).")

    def handle(self, *args, **opts):
        pool = pool_from_option(opts["pool"])
        try:
            artefact = export_create(pool=pool, fmt=opts["format"], params=params_from_options(opts["param"]),
                                     progress=ConsoleProgress(f"exporting {opts['format']}"))
        except ExportError as exc:
            raise CommandError(str(exc)) from exc
        path = artefact_file(artefact=artefact)
        if opts["out"] and str(opts["out"]) == "-":
            with path.open("r", encoding="utf-8") as handle:
                shutil.copyfileobj(handle, self.stdout)
            return
        if opts["out"]:
            shutil.copyfile(path, opts["out"])
        self.stdout.write(self.style.SUCCESS(
            f"export {artefact.pk}: {path} ({artefact.size:,} bytes, sha256 {artefact.sha256}); "
            f"{artefact.params['counts']}"))
