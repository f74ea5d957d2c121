from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.formats.errors import ImportRejected

from annotation.analysis.judging.settings import JUDGING_PARAMS
from annotation.models import Pool
from annotation.selectors.pools import pool_progress
from annotation.services.pools.build import PoolError, known_pairs_add, pool_add_run, pool_create
from annotation.services.pools.known_pairs import (KNOWN_PAIRS_PARAMS, known_pair_roles, known_pairs_copied,
                                                  known_pairs_from_file)
from annotation.services.pools.operations import BUILD_PARAMS
from annotation.services.pools.settings_checks import pool_settings_warnings

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._pool_sources import add_source_arguments, dataset_and_runs
from ._progress import ConsoleProgress, rejected_to_command_error

# The build's options, declared once with the build_pool operation (services/pools/operations.py)
# and the judging settings (analysis/judging/settings.py); --dataset, --name, --run and --seed come
# from the options every pool-building command shares.
BUILD_OPTIONS = ("depth", "redundancy", "include_original_positives", "gold_rate", "training_pass_mark",
                 "lease_seconds", "broken_reports_limit", "skip_unplayable")


class Command(BaseCommand):
    help = ("Build a pool: the union of the given runs' top-k clips per caption, deduplicated, with which runs proposed "
            "each pair at which rank, queued for judging. With --add, add the runs to the existing pool of that name "
            "instead: only pairs not in it yet are queued, and its labels stay.")

    def add_arguments(self, parser):
        add_source_arguments(parser, seed_default=None)
        parser.add_argument("--add", action="store_true", help="Add the runs to the existing pool named --name.")
        add_declared_arguments(parser, BUILD_PARAMS, names=BUILD_OPTIONS)
        known = parser.add_argument_group("training and gold pairs (also with --add: attached to the existing pool)")
        add_declared_arguments(known, KNOWN_PAIRS_PARAMS)
        judging = parser.add_argument_group("judging order and stopping (change later with PATCH pools/{id}/)")
        add_declared_arguments(judging, JUDGING_PARAMS)

    def handle(self, *args, **opts):
        dataset, runs = dataset_and_runs(opts)
        given = declared_given(opts, BUILD_PARAMS, names=("seed", *BUILD_OPTIONS))
        judging = declared_given(opts, JUDGING_PARAMS)
        try:
            # Read and checked before anything is built: a bad file names its line and field and
            # no pool is made.
            known = self._known_pairs(dataset, declared_clean(KNOWN_PAIRS_PARAMS, declared_given(opts, KNOWN_PAIRS_PARAMS)))
            if opts["add"]:
                if given or judging:
                    names = [f"--{key.replace('_', '-')}" for key in {**given, **judging}]
                    raise CommandError(f"{', '.join(names)}: a pool keeps the options it was built with; "
                                       "leave them out with --add")
                pool = Pool.objects.filter(dataset=dataset, name=opts["name"]).first()
                if pool is None:
                    raise CommandError(f"no pool named '{opts['name']}' in '{dataset.name}'")
                with transaction.atomic():  # all the runs (and known pairs) or none
                    added = [(run.name, pool_add_run(pool=pool, run=run)) for run in runs]
                    attached = known_pairs_add(pool=pool, items=known) if known else 0
                done = "; ".join(f"{n:,} new pairs from '{name}'" for name, n in added)
            else:
                declared_clean(JUDGING_PARAMS, judging)  # each setting refused by its option's name
                clean = declared_clean(BUILD_PARAMS, {"name": opts["name"], "run_ids": [r.pk for r in runs], **given})
                with transaction.atomic():  # the pool with its known pairs, or nothing
                    pool = pool_create(dataset=dataset, name=opts["name"], runs=runs, progress=ConsoleProgress("pooling"),
                                       judging=judging, seed=clean["seed"], **{k: clean[k] for k in BUILD_OPTIONS})
                    attached = known_pairs_add(pool=pool, items=known) if known else 0
                done = f"built from {len(runs)} run(s), judged in {pool.judging_strategy} order"
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        except PoolError as exc:
            raise CommandError(str(exc)) from exc
        progress = pool_progress(pool=pool)
        self.stdout.write(self.style.SUCCESS(
            f"pool '{pool.name}' (id {pool.pk}): {done}; {progress['pairs']:,} pairs in all, "
            f"{progress['double_labelled']:,} of them to be labelled twice, {progress['left']:,} still open"))
        skipped = getattr(pool, "skipped_unplayable", None)
        if skipped:
            self.stdout.write(f"left out {len(skipped):,} clip{'s' if len(skipped) != 1 else ''} that failed the media "
                              f"check: {', '.join(skipped)}")
        if known:
            roles = known_pair_roles(known)
            self.stdout.write(f"known pairs: {roles['training']:,} training and {roles['gold']:,} gold listed, "
                              f"{attached:,} new to the pool")
        for warning in pool_settings_warnings(pool=pool):
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))

    @staticmethod
    def _known_pairs(dataset, given: dict) -> list[dict]:
        if given.get("known_pairs") is not None and given.get("known_pairs_from") is not None:
            raise CommandError("--known-pairs and --known-pairs-from: give one of them")
        if given.get("known_pairs") is not None:
            return known_pairs_from_file(dataset=dataset, path=given["known_pairs"])
        if given.get("known_pairs_from") is not None:
            return known_pairs_copied(dataset=dataset, source_pool_id=given["known_pairs_from"])
        return []
