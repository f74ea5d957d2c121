import re

from django.core.management.base import BaseCommand, CommandError

from annotation.models import SampledDocument
from annotation.services.pools.build import PoolError
from annotation.services.pools.operations import SAMPLED_BUILD_PARAMS
from annotation.services.pools.sampled import sampled_pool_create

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._pool_sources import add_source_arguments, dataset_and_runs
from ._progress import ConsoleProgress


def parse_strata(text: str) -> list[list[float]]:
    """'1-10:1,11-100:0.2,101-1000:0.05' -> [[1, 10, 1.0], [11, 100, 0.2], [101, 1000, 0.05]]."""
    strata = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = re.fullmatch(r"(\d+)\s*-\s*(\d+)\s*:\s*([0-9.]+)", part)
        if not match:
            raise CommandError(f"--strata: '{part}' is not first-last:share (e.g. 11-100:0.2)")
        strata.append([int(match[1]), int(match[2]), float(match[3])])
    return strata


class Command(BaseCommand):
    help = ("Build a sampled pool of deep runs (TRECVID): every pooled pair gets the stratum of its best rank over the "
            "runs, and a seeded random share of each stratum is queued for judging. Pairs the dataset's imported "
            "judgments cover are resolved from them (inclusion probability 1) and the share is drawn from the rest.")

    def add_arguments(self, parser):
        add_source_arguments(parser)
        parser.add_argument("--strata", default="1-10:1,11-100:0.2,101-1000:0.05",
                            help="first-last:share per stratum from rank 1 (default '1-10:1,11-100:0.2,101-1000:0.05').")
        add_declared_arguments(parser, SAMPLED_BUILD_PARAMS, names=("redundancy",))

    def handle(self, *args, **opts):
        dataset, runs = dataset_and_runs(opts)
        given = declared_given(opts, SAMPLED_BUILD_PARAMS, names=("seed", "redundancy"))
        clean = declared_clean(SAMPLED_BUILD_PARAMS, {"name": opts["name"], "run_ids": [r.pk for r in runs],
                                                      "strata": parse_strata(opts["strata"]), **given})
        try:
            pool = sampled_pool_create(dataset=dataset, name=opts["name"], runs=runs, strata=clean["strata"],
                                       seed=clean["seed"], redundancy=clean["redundancy"],
                                       progress=ConsoleProgress("sampling"))
        except PoolError as exc:
            raise CommandError(str(exc)) from exc
        design = pool.sampled_design
        # Sampled pairs beyond those asked of raters were resolved from imported judgments.
        imported = SampledDocument.objects.filter(pool=pool, sampled=True).count() - design.sampled_count
        self.stdout.write(self.style.SUCCESS(
            f"built sampled pool '{pool.name}' (id {pool.pk}): {design.sampled_count:,} pairs to judge of "
            f"{design.full_pool_size:,} pooled"
            + (f" ({imported:,} already judged by imported judgments, taken with inclusion probability 1)"
               if imported else "")
            + f", {design.judgments_saved:,} judgments saved "
            f"({design.judgments_saved / max(design.full_pool_size, 1):.0%})"))
