from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset, Run
from annotation.selectors.moments import moment_pool_summary
from annotation.services.moment_pools import moment_pool_create
from annotation.services.pools import PoolError

from ._progress import ConsoleProgress


class Command(BaseCommand):
    help = ("Build a moment pool: the top-k moment predictions per caption of the given runs, spans of one caption and "
            "clip merged when their temporal IoU reaches the threshold (chains included; the judged span is the hull).")

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Name of the dataset.")
        parser.add_argument("--name", required=True, help="Name of the new pool.")
        parser.add_argument("--run", dest="runs", action="append", required=True, help="A moment run's name (repeat for several).")
        parser.add_argument("--depth", type=int, default=10, help="Top-k moments per caption of each run (default 10).")
        parser.add_argument("--iou-threshold", type=float, default=0.7, help="Merge spans at IoU at or above this (default 0.7).")
        parser.add_argument("--redundancy", type=float, default=0.1, help="Share of spans that get a second label (default 0.1).")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **opts):
        try:
            dataset = Dataset.objects.get(name=opts["dataset"])
        except Dataset.DoesNotExist as exc:
            raise CommandError(f"no dataset named '{opts['dataset']}'") from exc
        runs = {run.name: run for run in Run.objects.filter(dataset=dataset, name__in=opts["runs"])}
        unknown = [name for name in opts["runs"] if name not in runs]
        if unknown:
            raise CommandError(f"no run named {', '.join(repr(n) for n in unknown)} in '{dataset.name}'")
        try:
            pool = moment_pool_create(dataset=dataset, name=opts["name"], runs=[runs[name] for name in opts["runs"]],
                                      depth=opts["depth"], iou_threshold=opts["iou_threshold"],
                                      redundancy=opts["redundancy"], seed=opts["seed"],
                                      progress=ConsoleProgress("pooling"))
        except PoolError as exc:
            raise CommandError(str(exc)) from exc
        summary = moment_pool_summary(pool=pool)
        self.stdout.write(self.style.SUCCESS(
            f"built moment pool '{pool.name}' (id {pool.pk}): {summary['spans']:,} spans to judge from "
            f"{summary['members']:,} predictions ({summary['merged_spans']:,} merged, {summary['stretched_spans']:,} "
            f"stretched below IoU {summary['iou_threshold']})"))
