"""manage.py simulate_judging: replay a fully judged pool or judgment set under each judging strategy."""
from __future__ import annotations

import math
from pathlib import Path

from django.core.management.base import CommandError

from annotation.models import Run
from annotation.services.judging.operations import SOURCE_PARAMS
from annotation.services.judging.simulation import (CHART_NAMES, SIMULATION_PARAMS, SimulationError,
                                                    judging_simulation_run, judging_simulation_store,
                                                    judgment_set_simulation_inputs, pool_simulation_inputs,
                                                    simulation_params_clean, simulation_summary)

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._judgment_sets import stored_judgment_set
from ._offline import OfflineCommand
from ._progress import ConsoleProgress
from .report import pool_from_option


def _share(value) -> str:
    return "–" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.1%}"


def _number(value, digits: int = 3) -> str:
    return "–" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.{digits}f}"


class Command(OfflineCommand):
    help = ("Replay a fully judged pool (--pool) or stored runs judged by a judgment set (--dataset, --judgment-set, "
            "--run) under each judging strategy with seeded repeats; print per strategy the share of judgments "
            "needed to find 90% of the relevant pairs and, at each checkpoint, relevant found, the largest metric "
            "error, Kendall's tau and interval coverage. --store keeps a report with the curves (CSV) and charts "
            "(SVG); --csv and --svg-dir write them here.")

    def add_arguments(self, parser):
        parser.add_argument("--pool", help="A fully judged pool: id, or its name if unique.")
        parser.add_argument("--dataset", help="With --judgment-set: the dataset of the set and the runs.")
        parser.add_argument("--judgment-set", metavar="NAME", help="A stored judgment set (its kept file is read).")
        parser.add_argument("--run", action="append", default=[], metavar="NAME", dest="runs",
                            help="With --judgment-set: a stored run (repeat; default every ranked clip run of the "
                                 "dataset).")
        # Declared once with the judging_simulation operation (services/judging/operations.py,
        # simulation.py): the same names, bounds and defaults as POST .../judging-simulation/.
        add_declared_arguments(parser, SOURCE_PARAMS, names=("depth", "with_originals"))
        add_declared_arguments(parser, SIMULATION_PARAMS)
        parser.add_argument("--store", action="store_true",
                            help="Keep the result as a judging_simulation report (parameters, library versions, "
                                 "curves CSV and SVG charts).")
        parser.add_argument("--csv", type=Path, metavar="PATH", help="Write the curves as CSV here.")
        parser.add_argument("--svg-dir", type=Path, metavar="DIR",
                            help=f"Write the charts here: {', '.join(f'{c}.svg' for c in CHART_NAMES)}.")

    def handle(self, *args, **opts):
        pool, judgment_set = self._source(opts)
        source = declared_clean(SOURCE_PARAMS, declared_given(opts, SOURCE_PARAMS, names=("depth", "with_originals")))
        params = declared_given(opts, SIMULATION_PARAMS)
        try:
            clean = simulation_params_clean(params)
            if pool is not None:
                inputs = pool_simulation_inputs(pool=pool)
            else:
                inputs = judgment_set_simulation_inputs(judgment_set=judgment_set, runs=self._runs(judgment_set, opts),
                                                        depth=source["depth"], with_originals=source["with_originals"])
            for note in inputs.notes:
                self.stderr.write(f"note: {note}")
            self.stderr.write(f"replaying {inputs.counts['pairs_to_judge']:,} pairs ({inputs.counts['relevant_to_find']:,}"
                              f" relevant) of {inputs.counts['queries']:,} queries and {inputs.counts['runs']} runs: "
                              f"{len(clean['strategies'])} strategies x {clean['replays']} replays")
            result = judging_simulation_run(inputs=inputs, params=clean, progress=ConsoleProgress("simulating"))
        except SimulationError as exc:
            raise CommandError(str(exc)) from exc
        summary = simulation_summary(result)
        self._print(summary)
        self._write_files(result, opts)
        if opts["store"]:
            report = judging_simulation_store(dataset_id=(pool or judgment_set).dataset_id, pool=pool, inputs=inputs,
                                              params=clean, result=result, summary=summary)
            self.stdout.write(self.style.SUCCESS(f"stored as report {report.pk} ({report.title})"))

    @staticmethod
    def _source(opts):
        if opts["pool"] and (opts["dataset"] or opts["judgment_set"]):
            raise CommandError("give either --pool, or --dataset D --judgment-set NAME, not both")
        if opts["pool"]:
            if opts["runs"] or opts["with_originals"]:
                raise CommandError("--run and --with-originals go with --judgment-set: a pool replays its own runs")
            return pool_from_option(opts["pool"]), None
        if not (opts["dataset"] and opts["judgment_set"]):
            raise CommandError("name what to replay: --pool ID, or --dataset D --judgment-set NAME [--run R ...]")
        return None, stored_judgment_set(opts)

    @staticmethod
    def _runs(judgment_set, opts) -> list[Run]:
        runs_of_dataset = Run.objects.filter(dataset_id=judgment_set.dataset_id, kind=Run.Kind.CLIP)
        if not opts["runs"]:
            runs = list(runs_of_dataset.order_by("name"))
            if not runs:
                raise CommandError(f"'{judgment_set.dataset.name}' has no ranked clip run to replay")
            return runs
        runs = []
        for name in opts["runs"]:
            run = runs_of_dataset.filter(name=name).first()
            if run is None:
                known = ", ".join(runs_of_dataset.values_list("name", flat=True)[:20]) or "none"
                raise CommandError(f"no clip run '{name}' in '{judgment_set.dataset.name}' (runs: {known})")
            runs.append(run)
        return runs

    def _print(self, summary: dict) -> None:
        out = self.stdout
        out.write(f"\n{summary['n_pairs']:,} pairs to judge, {summary['n_relevant']:,} relevant; "
                  f"{summary['replays']} replays per strategy; metric {summary['measure']}")
        out.write("\nstrategy        judged for 90% relevant")
        for s in summary["per_strategy"]:
            out.write(f"{s['strategy']:<16}{_share(s['share_for_90'])}")
        out.write(f"\nstrategy        checkpoint  judged  relevant found  max {summary['measure']} error  "
                  f"Kendall tau  CI coverage")
        for s in summary["per_strategy"]:
            for i, checkpoint in enumerate(summary["checkpoints"]):
                out.write(f"{s['strategy']:<16}{_share(checkpoint):>10}  {_share(s['judged_share'][i]):>6}  "
                          f"{_share(s['relevant_found'][i]):>14}  {_number(s['metric_error_max'][i]):>15}  "
                          f"{_number(s['kendall_tau'][i]):>11}  {_share(s['ci_coverage_mean'][i]):>11}")

    def _write_files(self, result, opts) -> None:
        if not (opts["csv"] or opts["svg_dir"]):
            return
        from annotation.analysis.judging.simulation import curves_svg
        from annotation.formats.judging_curves import curves_csv

        if opts["csv"]:
            opts["csv"].parent.mkdir(parents=True, exist_ok=True)
            opts["csv"].write_text(curves_csv(result))
            self.stderr.write(f"curves written to {opts['csv']}")
        if opts["svg_dir"]:
            opts["svg_dir"].mkdir(parents=True, exist_ok=True)
            for name, text in curves_svg(result).items():
                (opts["svg_dir"] / f"{name}.svg").write_text(text)
            self.stderr.write(f"charts written to {opts['svg_dir']}")
