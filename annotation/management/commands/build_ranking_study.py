from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from annotation.models import Dataset
from annotation.services.proxies.matrices import MATRIX_PROXIES, MODES, SYNSET_SOURCES, ProxyError
from annotation.services.ranking.study import ranking_study_create

from ._progress import ConsoleProgress


class Command(BaseCommand):
    help = ("Build a five-caption ranking study: sample clips (seeded), compute each proxy's rows for them, pick five "
            "captions per clip and proxy (most and least similar, quartiles) and queue one task per clip and proxy. "
            "Add raters with the API (POST /api/v1/ranking-studies/<id>/members/).")

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Name of the dataset.")
        parser.add_argument("--name", required=True, help="Name of the study (unique per dataset).")
        parser.add_argument("--proxies", nargs="+", choices=MATRIX_PROXIES, default=list(MATRIX_PROXIES))
        parser.add_argument("--clips", type=int, default=100, help="Clips to sample (default 100).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--mode", choices=MODES, default="modern")
        parser.add_argument("--synsets", choices=SYNSET_SOURCES, default="wordnet")
        parser.add_argument("--min-fraction", type=float, default=0.25)
        parser.add_argument("--raters-per-task", type=int, default=3)
        parser.add_argument("--lease-seconds", type=int, default=600)

    def handle(self, *args, **opts):
        try:
            dataset = Dataset.objects.get(name=opts["dataset"])
        except Dataset.DoesNotExist as exc:
            raise CommandError(f"no dataset named '{opts['dataset']}'") from exc
        if not 2 <= opts["raters_per_task"] <= 10:
            raise CommandError("--raters-per-task must be between 2 and 10")
        if opts["seed"] < 0 or opts["lease_seconds"] < 30:
            raise CommandError("--seed must not be negative and --lease-seconds must be at least 30")
        try:
            study = ranking_study_create(
                dataset=dataset, name=opts["name"], proxies=list(dict.fromkeys(opts["proxies"])), n_clips=opts["clips"],
                seed=opts["seed"], mode=opts["mode"], synsets=opts["synsets"], min_fraction=opts["min_fraction"],
                raters_per_task=opts["raters_per_task"], lease_seconds=opts["lease_seconds"],
                progress=ConsoleProgress("computing proxy rows"))
        except (ProxyError, IntegrityError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(
            f"ranking study '{study.name}' (id {study.pk}): {study.tasks.count()} tasks "
            f"({study.n_clips} clips x {len(study.proxies)} proxies), {study.raters_per_task} raters each"))
