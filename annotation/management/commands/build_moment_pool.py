from django.core.management.base import BaseCommand, CommandError

from annotation.selectors.moments import moment_pool_summary
from annotation.services.pools.moments import moment_pool_create
from annotation.services.pools.build import PoolError

from ._pool_sources import add_source_arguments, dataset_and_runs
from ._progress import ConsoleProgress


class Command(BaseCommand):
    help = ("Build a moment pool: the top-k moment predictions per caption of the given runs, spans of one caption and "
            "clip merged when their temporal IoU reaches the threshold (chains included; the judged span is the hull).")

    def add_arguments(self, parser):
        add_source_arguments(parser, run_help="A moment run's name (repeat for several).")
        parser.add_argument("--depth", type=int, default=10, help="Top-k moments per caption of each run (default 10).")
        parser.add_argument("--iou-threshold", type=float, default=0.7, help="Merge spans at IoU at or above this (default 0.7).")
        parser.add_argument("--redundancy", type=float, default=0.1, help="Share of spans that get a second label (default 0.1).")

    def handle(self, *args, **opts):
        dataset, runs = dataset_and_runs(opts)
        try:
            pool = moment_pool_create(dataset=dataset, name=opts["name"], runs=runs,
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
