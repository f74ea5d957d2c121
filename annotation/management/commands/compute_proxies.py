from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from annotation.services.proxies.matrices import MATRIX_PROXIES, ProxyError, proxy_matrices_compute
from annotation.services.proxies.operations import MATRIX_PARAMS

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._progress import ConsoleProgress

# How the rows are computed, declared once with the proxy_matrices operation
# (services/proxies/operations.py); the proxies are named one (or all) by --proxy.
MATRIX_OPTIONS = ("mode", "synsets", "min_fraction")


class Command(BaseCommand):
    help = ("Compute semantic proxy matrices (clips x captions relevance) of a dataset and store each as an .npz "
            "artefact under EXPORT_ROOT with its pipeline description and library versions.")

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Name of the dataset.")
        parser.add_argument("--proxy", required=True, choices=MATRIX_PROXIES + ("all",))
        add_declared_arguments(parser, MATRIX_PARAMS, names=MATRIX_OPTIONS)

    def handle(self, *args, **opts):
        try:
            dataset = Dataset.objects.get(name=opts["dataset"])
        except Dataset.DoesNotExist as exc:
            raise CommandError(f"no dataset named '{opts['dataset']}'") from exc
        proxies = list(MATRIX_PROXIES) if opts["proxy"] == "all" else [opts["proxy"]]
        clean = declared_clean(MATRIX_PARAMS, {"proxies": proxies, **declared_given(opts, MATRIX_PARAMS,
                                                                                    names=MATRIX_OPTIONS)})
        try:
            artefacts = proxy_matrices_compute(dataset=dataset, proxies=clean["proxies"], mode=clean["mode"],
                                               synsets=clean["synsets"], min_fraction=clean["min_fraction"],
                                               progress=ConsoleProgress(f"computing {', '.join(proxies)}"))
        except ProxyError as exc:
            raise CommandError(str(exc)) from exc
        for a in artefacts:
            rows, cols = a.params["shape"]
            synsets = f" (synsets {a.params['synsets']}: {a.params['synsets_reason']})" if a.params.get("synsets") else ""
            self.stdout.write(self.style.SUCCESS(
                f"{a.params['proxy']}: artefact {a.pk}, {rows:,} clips x {cols:,} captions, {a.size:,} bytes, "
                f"{a.path}{synsets}"))
