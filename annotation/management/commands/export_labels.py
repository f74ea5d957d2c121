import codecs
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.services.exports.labels import AGGREGATION, EXPORT_FORMATS, ExportError, export_create
from annotation.storage import stored_file_chunks

from ._declared import add_declared_arguments, declared_given
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
        # Declared once with the export formats (services/exports/labels.py AGGREGATION).
        add_declared_arguments(parser, AGGREGATION)

    def handle(self, *args, **opts):
        pool = pool_from_option(opts["pool"])
        try:
            params = params_from_options(opts["param"])
            params = declared_given(opts, AGGREGATION) | params  # --param aggregation=... wins, as before
            artefact = export_create(pool=pool, fmt=opts["format"], params=params,
                                     progress=ConsoleProgress(f"exporting {opts['format']}"))
        except ExportError as exc:
            raise CommandError(str(exc)) from exc
        if opts["out"] and str(opts["out"]) == "-":
            # Exports are UTF-8 text; blocks are decoded incrementally so a character split
            # between two blocks survives.
            decoder = codecs.getincrementaldecoder("utf-8")()
            for block in stored_file_chunks("exports", artefact.path):
                self.stdout.write(decoder.decode(block), ending="")
            self.stdout.write(decoder.decode(b"", final=True), ending="")
            return
        if opts["out"]:
            with Path(opts["out"]).open("wb") as out:
                for block in stored_file_chunks("exports", artefact.path):
                    out.write(block)
        self.stdout.write(self.style.SUCCESS(
            f"export {artefact.pk}: {artefact.path} in the exports storage ({artefact.size:,} bytes, "
            f"sha256 {artefact.sha256}); "
            f"{artefact.params['counts']}"))
