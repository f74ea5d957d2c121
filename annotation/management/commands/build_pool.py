from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.models import Pool
from annotation.selectors.pools import pool_progress
from annotation.services.pools.build import PoolError, pool_add_run, pool_create
from annotation.analysis.judging.strategies import BANDIT_VARIANTS, SAMPLE_RATE, STRATEGIES

from ._pool_sources import add_source_arguments, dataset_and_runs
from ._progress import ConsoleProgress

# Options of a new pool, with their defaults; None on the command line means "not given", so that
# --add can refuse them (a pool keeps the options it was built with).
BUILD_OPTIONS = {"seed": 0, "depth": 10, "redundancy": 0.1, "gold_rate": 0.0, "training_pass_mark": 0.8, "lease_seconds": 300,
                 "broken_reports_limit": 3}


JUDGING_OPTIONS = ("strategy", "warmup_depth", "bandit_variant", "sample_rate", "top_stratum_depth", "query_budget",
                   "pool_budget", "stop_remaining_below", "stop_misses_in_a_row", "machine_judge")


class Command(BaseCommand):
    help = ("Build a pool: the union of the given runs' top-k clips per caption, deduplicated, with which runs proposed "
            "each pair at which rank, queued for judging. With --add, add the runs to the existing pool of that name "
            "instead: only pairs not in it yet are queued, and its labels stay.")

    def add_arguments(self, parser):
        add_source_arguments(parser, seed_default=None)
        parser.add_argument("--add", action="store_true", help="Add the runs to the existing pool named --name.")
        parser.add_argument("--depth", type=int, help="Top-k clips per caption of each run (default 10).")
        parser.add_argument("--redundancy", type=float, help="Share of pairs that need a second label (default 0.1).")
        parser.add_argument("--include-original-positives", action="store_true",
                            help="Also queue each caption's original clip, as a check item.")
        parser.add_argument("--gold-rate", type=float, help="Share of assignments that are known pairs (default 0).")
        parser.add_argument("--training-pass-mark", type=float, help="Training score a rater needs (default 0.8).")
        parser.add_argument("--lease-seconds", type=int, help="How long a rater holds a pair (default 300).")
        parser.add_argument("--broken-reports-limit", type=int,
                            help="'Clip doesn't play' reports before a pair is set aside (default 3).")
        judging = parser.add_argument_group("judging order and stopping (change later with PATCH pools/{id}/)")
        judging.add_argument("--strategy", choices=STRATEGIES,
                             help="Order to judge in (default pool_order: started pairs first, then seeded random).")
        judging.add_argument("--warmup-depth", type=int, help="Pairs at rank <= this in any run are judged first.")
        judging.add_argument("--bandit-variant", choices=BANDIT_VARIANTS, help="bandit: mm_ns (default) or thompson.")
        judging.add_argument("--sample-rate", type=float,
                             help=f"{SAMPLE_RATE.description} ({SAMPLE_RATE.default}; {SAMPLE_RATE.bounds_text()}).")
        judging.add_argument("--top-stratum-depth", type=int, help="sampled, active: ranks <= this are always judged.")
        judging.add_argument("--machine-judge", help="active: the machine judge (by name, of this dataset) whose "
                                                     "uncertainty draws the sample.")
        judging.add_argument("--query-budget", type=int, help="Stop a query after this many judged pairs.")
        judging.add_argument("--pool-budget", type=int, help="Stop the pool after this many judged pairs.")
        judging.add_argument("--stop-remaining-below", type=float,
                             help="Stop a query when its estimated remaining relevant pairs fall below this.")
        judging.add_argument("--stop-misses-in-a-row", type=int,
                             help="Stop a query after this many non-relevant judgments in a row.")

    def handle(self, *args, **opts):
        dataset, runs = dataset_and_runs(opts)
        given = {key: opts[key] for key in BUILD_OPTIONS if opts[key] is not None}
        judging = {key: opts[key] for key in JUDGING_OPTIONS if opts[key] is not None}
        try:
            if opts["add"]:
                if given or judging or opts["include_original_positives"]:
                    names = [f"--{key.replace('_', '-')}" for key in {**given, **judging}]
                    names += ["--include-original-positives"] if opts["include_original_positives"] else []
                    raise CommandError(f"{', '.join(names)}: a pool keeps the options it was built with; "
                                       "leave them out with --add")
                pool = Pool.objects.filter(dataset=dataset, name=opts["name"]).first()
                if pool is None:
                    raise CommandError(f"no pool named '{opts['name']}' in '{dataset.name}'")
                with transaction.atomic():  # all the runs or none
                    added = [(run.name, pool_add_run(pool=pool, run=run)) for run in runs]
                done = "; ".join(f"{n:,} new pairs from '{name}'" for name, n in added)
            else:
                pool = pool_create(dataset=dataset, name=opts["name"], runs=runs,
                                   include_original_positives=opts["include_original_positives"],
                                   progress=ConsoleProgress("pooling"), judging=judging, **(BUILD_OPTIONS | given))
                done = f"built from {len(runs)} run(s), judged in {pool.judging_strategy} order"
        except PoolError as exc:
            raise CommandError(str(exc)) from exc
        progress = pool_progress(pool=pool)
        self.stdout.write(self.style.SUCCESS(
            f"pool '{pool.name}' (id {pool.pk}): {done}; {progress['pairs']:,} pairs in all, "
            f"{progress['double_labelled']:,} of them to be labelled twice, {progress['left']:,} still open"))
