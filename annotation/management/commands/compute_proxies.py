from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from annotation.services.proxies.matrices import MATRIX_PROXIES, MODES, SYNSET_SOURCES, ProxyError, proxy_matrices_compute

from ._progress import ConsoleProgress


class Command(BaseCommand):
    help = ("Compute semantic proxy matrices (clips x captions relevance) of a dataset and store each as an .npz "
            "artefact under EXPORT_ROOT with its pipeline description and library versions.")

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Name of the dataset.")
        parser.add_argument("--proxy", required=True, choices=MATRIX_PROXIES + ("all",))
        parser.add_argument("--mode", choices=MODES, default="modern",
                            help="paper: the published scripts and NLTK 3.5 behaviour; modern: the cleaned-up pipeline.")
        parser.add_argument("--synsets", choices=SYNSET_SOURCES, default=None,
                            help="SYN only: WordNet synsets (Lesk) or the EPIC-KITCHENS-100 verb/noun classes "
                                 "(files from $REJUDGE_EPIC100_DIR). Default: the mode's choice, i.e. epic100 in paper "
                                 "mode for a dataset imported as youcook2-json or epic100-csv (as the paper did), "
                                 "wordnet otherwise.")
        parser.add_argument("--min-fraction", type=float, default=0.25,
                            help="Clips with several captions: share of them a word must appear in (default 0.25).")

    def handle(self, *args, **opts):
        try:
            dataset = Dataset.objects.get(name=opts["dataset"])
        except Dataset.DoesNotExist as exc:
            raise CommandError(f"no dataset named '{opts['dataset']}'") from exc
        if not 0 <= opts["min_fraction"] <= 1:
            raise CommandError("--min-fraction must be between 0 and 1")
        proxies = list(MATRIX_PROXIES) if opts["proxy"] == "all" else [opts["proxy"]]
        try:
            artefacts = proxy_matrices_compute(dataset=dataset, proxies=proxies, mode=opts["mode"], synsets=opts["synsets"],
                                               min_fraction=opts["min_fraction"],
                                               progress=ConsoleProgress(f"computing {', '.join(proxies)}"))
        except ProxyError as exc:
            raise CommandError(str(exc)) from exc
        for a in artefacts:
            rows, cols = a.params["shape"]
            synsets = f" (synsets {a.params['synsets']}: {a.params['synsets_reason']})" if a.params.get("synsets") else ""
            self.stdout.write(self.style.SUCCESS(
                f"{a.params['proxy']}: artefact {a.pk}, {rows:,} clips x {cols:,} captions, {a.size:,} bytes, "
                f"{a.path}{synsets}"))
