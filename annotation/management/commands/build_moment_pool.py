from django.core.management.base import BaseCommand, CommandError

from annotation.selectors.moments import moment_pool_summary
from annotation.services.pools.moments import moment_pool_create
from annotation.services.pools.build import PoolError
from annotation.services.pools.operations import MOMENT_BUILD_PARAMS

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._pool_sources import add_source_arguments, dataset_and_runs
from ._progress import ConsoleProgress

# The build's options, declared once with the build_moment_pool operation (services/pools/operations.py);
# --dataset, --name, --run and --seed come from the options every pool-building command shares.
OPTIONS = ("depth", "iou_threshold", "redundancy")


class Command(BaseCommand):
    help = ("Build a moment pool: the top-k moment predictions per caption of the given runs, spans of one caption and "
            "clip merged when their temporal IoU reaches the threshold (chains included; the judged span is the hull).")

    def add_arguments(self, parser):
        add_source_arguments(parser, run_help="A moment run's name (repeat for several).")
        add_declared_arguments(parser, MOMENT_BUILD_PARAMS, names=OPTIONS)

    def handle(self, *args, **opts):
        dataset, runs = dataset_and_runs(opts)
        given = declared_given(opts, MOMENT_BUILD_PARAMS, names=("seed", *OPTIONS))
        clean = declared_clean(MOMENT_BUILD_PARAMS, {"name": opts["name"], "run_ids": [r.pk for r in runs], **given})
        try:
            pool = moment_pool_create(dataset=dataset, name=opts["name"], runs=runs, seed=clean["seed"],
                                      progress=ConsoleProgress("pooling"), **{k: clean[k] for k in OPTIONS})
        except PoolError as exc:
            raise CommandError(str(exc)) from exc
        summary = moment_pool_summary(pool=pool)
        self.stdout.write(self.style.SUCCESS(
            f"built moment pool '{pool.name}' (id {pool.pk}): {summary['spans']:,} spans to judge from "
            f"{summary['members']:,} predictions ({summary['merged_spans']:,} merged, {summary['stretched_spans']:,} "
            f"stretched below IoU {summary['iou_threshold']})"))
