"""What a pool or a judgment set gives the judging services to replay or estimate from: the
dataset's benchmark ids, the original positives and the runs' rankings keyed by them, and the
refusal of a moment pool. Shared by simulation.py (which starts report jobs through
services/reports/create.py) and estimates.py (which the judging_estimates report kind computes
with), so neither imports the other."""
from __future__ import annotations

from collections.abc import Sequence

from annotation.models import Caption, Clip, Pool, PooledPair, Run
from annotation.selectors.reports import dataset_captions, run_rankings


class SimulationError(ValueError):
    """A simulation that cannot be run as asked; the message says why."""


def dataset_external_ids(dataset_id: int) -> tuple[dict[int, str], dict[int, str]]:
    """Caption and clip ids -> their benchmark ids: the keys of every input, so CSV rows and error
    messages name pairs as the dataset does."""
    return (dict(Caption.objects.filter(dataset_id=dataset_id).values_list("pk", "external_id")),
            dict(Clip.objects.filter(dataset_id=dataset_id).values_list("pk", "external_id")))


def original_positives(*, dataset_id: int, queries: set[str], captions: dict[int, str],
               clips: dict[int, str]) -> dict[str, set[str]]:
    ids, _, originals = dataset_captions(dataset_id=dataset_id)
    out: dict[str, set[str]] = {}
    for caption, clip in zip(ids.tolist(), originals.tolist()):
        if clip >= 0 and captions[caption] in queries:
            out[captions[caption]] = {clips[clip]}
    return out


def runs_rankings(runs: Sequence[Run], depth: int, captions: dict[int, str],
              clips: dict[int, str]) -> dict[str, dict[str, list[str]]]:
    return {run.name: {captions[q]: [clips[c] for c in ranked] for q, ranked in run_rankings(run=run, depth=depth).items()}
            for run in runs}


def refuse_moment_pool(pool: Pool) -> None:
    if PooledPair.objects.filter(pool=pool, start__isnull=False).exists():
        raise SimulationError(f"pool '{pool.name}' judges moments (spans of clips): judging strategies replay "
                              f"caption-clip pools")
