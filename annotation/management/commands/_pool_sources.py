"""What every pool-building command starts from: a dataset and some of its runs, by name."""
from __future__ import annotations

from django.core.management.base import CommandError

from annotation.models import Dataset, Run


def add_source_arguments(parser, *, run_help: str = "A run's name (repeat for several).",
                         seed_default: int | None = 0) -> None:
    parser.add_argument("--dataset", required=True, help="Name of the dataset.")
    parser.add_argument("--name", required=True, help="Name of the pool.")
    parser.add_argument("--run", dest="runs", action="append", required=True, help=run_help)
    parser.add_argument("--seed", type=int, default=seed_default,
                        help="Seed of the queue order and the double-labelled share (default 0).")


def dataset_and_runs(opts: dict) -> tuple[Dataset, list[Run]]:
    """The named dataset and runs, in the order given; a CommandError names whatever is unknown."""
    try:
        dataset = Dataset.objects.get(name=opts["dataset"])
    except Dataset.DoesNotExist as exc:
        raise CommandError(f"no dataset named '{opts['dataset']}'") from exc
    runs = {run.name: run for run in Run.objects.filter(dataset=dataset, name__in=opts["runs"])}
    unknown = [name for name in opts["runs"] if name not in runs]
    if unknown:
        raise CommandError(f"no run named {', '.join(repr(n) for n in unknown)} in '{dataset.name}'")
    return dataset, [runs[name] for name in opts["runs"]]
