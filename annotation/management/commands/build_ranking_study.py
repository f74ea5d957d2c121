from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from annotation.models import Dataset
from annotation.services.proxies.matrices import MATRIX_PROXIES, ProxyError
from annotation.services.ranking.operations import STUDY_PARAMS
from annotation.services.ranking.study import ranking_study_create

from ._declared import add_declared_arguments, declared_clean, declared_given, declared_help
from ._progress import ConsoleProgress

# The study's options, declared once with the build_ranking_study operation
# (services/ranking/operations.py); --proxies defaults to all four here, and --clips is n_clips.
STUDY_OPTIONS = ("name", "seed", "mode", "synsets", "min_fraction", "raters_per_task", "lease_seconds")


class Command(BaseCommand):
    help = ("Build a five-caption ranking study: sample clips (seeded), compute each proxy's rows for them, pick five "
            "captions per clip and proxy (most and least similar, quartiles) and queue one task per clip and proxy. "
            "Add raters with the API (POST /api/v1/ranking-studies/<id>/members/).")

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Name of the dataset.")
        parser.add_argument("--proxies", nargs="+", choices=MATRIX_PROXIES, default=list(MATRIX_PROXIES),
                            help=declared_help(STUDY_PARAMS["proxies"]) + " (default all)")
        parser.add_argument("--clips", "--n-clips", dest="n_clips", type=int, default=None,
                            help=declared_help(STUDY_PARAMS["n_clips"]))
        add_declared_arguments(parser, STUDY_PARAMS, names=STUDY_OPTIONS)

    def handle(self, *args, **opts):
        try:
            dataset = Dataset.objects.get(name=opts["dataset"])
        except Dataset.DoesNotExist as exc:
            raise CommandError(f"no dataset named '{opts['dataset']}'") from exc
        given = declared_given(opts, STUDY_PARAMS, names=("n_clips", *STUDY_OPTIONS))
        clean = declared_clean(STUDY_PARAMS, {"proxies": list(dict.fromkeys(opts["proxies"])), **given})
        try:
            study = ranking_study_create(dataset=dataset, **clean, progress=ConsoleProgress("computing proxy rows"))
        except (ProxyError, IntegrityError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(
            f"ranking study '{study.name}' (id {study.pk}): {study.tasks.count()} tasks "
            f"({study.n_clips} clips x {len(study.proxies)} proxies), {study.raters_per_task} raters each"))
