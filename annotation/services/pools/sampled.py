"""Sampled pools for deep runs (TRECVID): judge the top ranks fully and samples of deeper strata.

The pooling and the draw are `annotation.analysis.sampled_pools.build_sampled_pool`: a pooled
document's stratum comes from its best rank over the runs, each (caption, stratum) is sampled
without replacement with a generator seeded from the pool seed, the stratum and the caption's
external id. Captions and clips enter the draw by their external ids, so the same files and seed
give the same sample in any database and whatever order the runs are listed in.

Only the sampled documents become PooledPairs (the rater queue never sees the others); every
pooled document, sampled or not, is kept as a SampledDocument with its stratum and inclusion
probability, because the infAP estimators need the unjudged part of the pool too.

Imported judgments (the dataset's ImportedJudgment rows, from judgment sets that seed pools) are
taken as they are in ordinary pools: a pooled pair they cover is not queued but resolved from the
imported verdict (services/pools/build.py `_apply_imported_judgments`; a published disagreement becomes
a disagreement pair). For the estimates such a pair is judged with certainty: it is kept as a
sampled document with inclusion probability 1, and the stratum's sample is drawn from the pairs
not covered, at the stratum's rate (annotation.analysis.sampled_pools explains the census/open
split and gives the Horvitz-Thompson formulas of R_hat and xinfAP). The design's sampled_count is
what raters are asked to judge; pairs covered by imports count as judgments saved. A pool whose
pooled pairs are all covered queues nothing, and its infAP report is final at once.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from django.db import transaction

from annotation.analysis.pair_hashes import needs_second_label, queue_positions
from annotation.analysis.params import REQUIRED, Param
from annotation.analysis.sampled_pools import PooledDocument, build_sampled_pool, validate_strata
from annotation.models import (Caption, Clip, Dataset, PairProvenance, Pool, PooledPair, PoolRun, Run,
                               SampledDocument, SampledPoolDesign)
from annotation.models.judgment_sets import ImportedJudgment
from annotation.selectors.score_matrix_runs import run_prediction_rows
from annotation.bulk import rows_insert
from annotation.services.pools.build import BATCH, PoolError, _apply_imported_judgments

MAX_DEPTH = 1000

#: A sampled pool's strata, declared once (the build operation, services/pools/operations.py, reads
#: it); strata_validate checks what the rows mean together.
STRATA = Param(list, REQUIRED, "[[first rank, last rank, share judged], ...] contiguous from rank 1, e.g. "
               "[[1, 10, 1.0], [11, 100, 0.2], [101, 1000, 0.05]]", 0, 1_000_000, items=list, unique_sorted=False,
               max_items=MAX_DEPTH)


def _whole(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def strata_validate(strata: Sequence[Sequence[float]]) -> list[list]:
    """Strata as stored ([[lo, hi, rate], ...], contiguous from rank 1, at most 1,000 deep)."""
    try:
        # JSON numbers may arrive as floats (10.0): show and store whole ranks as integers.
        checked = validate_strata([(_whole(lo), _whole(hi), float(rate)) for lo, hi, rate in strata])
    except (TypeError, ValueError) as exc:
        raise PoolError(f"strata: {exc}", param="strata") from exc
    if checked[-1][1] > MAX_DEPTH:
        raise PoolError(f"strata: the deepest stratum ends at rank {checked[-1][1]}, deeper than {MAX_DEPTH}",
                        param="strata")
    return [list(s) for s in checked]


def sampled_request_check(dataset: Dataset, name: str, runs: list[Run]) -> None:
    if not runs:
        raise PoolError("a sampled pool needs at least one run", param="run_ids")
    for run in runs:
        if run.dataset_id != dataset.pk:
            raise PoolError(f"run '{run.name}' belongs to another dataset", param="run_ids")
        if run.kind == Run.Kind.MOMENT:
            raise PoolError(f"run '{run.name}' is a moment run; sampled pools judge whole clips", param="run_ids")
    if Pool.objects.filter(dataset=dataset, name=name).exists():
        raise PoolError(f"a pool named '{name}' already exists for '{dataset.name}'", param="name")


@transaction.atomic
def sampled_pool_create(*, dataset: Dataset, name: str, runs: Iterable[Run], strata: Sequence[Sequence[float]],
                        seed: int = 0, redundancy: float = 0.1,
                        progress: Callable[[int, int | None], None] | None = None) -> Pool:
    runs = list(runs)
    sampled_request_check(dataset, name, runs)
    strata = strata_validate(strata)
    depth = strata[-1][1]
    caption_ext = dict(Caption.objects.filter(dataset=dataset).values_list("pk", "external_id"))
    clip_ext = dict(Clip.objects.filter(dataset=dataset).values_list("pk", "external_id"))
    ranked: dict[str, dict[str, list[str]]] = {str(run.pk): {} for run in runs}
    for run, caption, clip, _ in run_prediction_rows(runs=runs, depth=depth):
        ranked[str(run)].setdefault(caption_ext[caption], []).append(clip_ext[clip])
    imported: dict[str, set[str]] = {}
    for caption, clip in ImportedJudgment.objects.filter(dataset=dataset).values_list("caption_id", "clip_id").iterator(
            chunk_size=BATCH):
        imported.setdefault(caption_ext[caption], set()).add(clip_ext[clip])
    sample = build_sampled_pool(ranked, [tuple(s) for s in strata], seed=seed, judged=imported)
    if progress:
        progress(1, 3)

    pool = Pool.objects.create(dataset=dataset, name=name, depth=depth, redundancy=redundancy, seed=seed)
    SampledPoolDesign.objects.create(pool=pool, strata=strata, size_rule=sample.size_rule,
                                     full_pool_size=sample.full_pool_size, sampled_count=sample.judged_count)
    caption_pk = {ext: pk for pk, ext in caption_ext.items()}
    clip_pk = {ext: pk for pk, ext in clip_ext.items()}
    documents = list(sample.documents())
    judged = [d for d in documents if d.sampled]
    pairs = _insert_pairs(pool, judged, caption_pk, clip_pk)
    pair_id = {(d.query, d.doc): pair.pk for d, pair in zip(judged, pairs)}
    if progress:
        progress(2, 3)
    rows_insert(PairProvenance, ["pair", "run", "rank"],
                 ((pair_id[(d.query, d.doc)], int(run), rank) for d in judged for run, rank in d.proposed_by))
    rows_insert(SampledDocument, ["pool", "caption", "clip", "stratum", "best_rank", "sampled", "inclusion_probability", "pair"],
                 ((pool.pk, caption_pk[d.query], clip_pk[d.doc], d.stratum, d.best_rank, d.sampled, d.inclusion_probability,
                   pair_id.get((d.query, d.doc))) for d in documents))
    # The census pairs take their imported verdicts instead of waiting in the queue.
    _apply_imported_judgments(pool)
    _record_pool_runs(pool, runs, judged)
    if progress:
        progress(3, 3)
    return pool


def _insert_pairs(pool: Pool, judged: list[PooledDocument], caption_pk: dict[str, int], clip_pk: dict[str, int]
                  ) -> list[PooledPair]:
    """The sampled documents as queue pairs, ordered and double-labelled like any pool's pairs
    (those covered by imported judgments are then resolved from them)."""
    if not judged:
        return []
    caption_keys, clip_keys = [d.query for d in judged], [d.doc for d in judged]
    order = queue_positions(caption_keys, clip_keys, pool.seed)
    double = needs_second_label(caption_keys, clip_keys, pool.seed, pool.redundancy)
    originals = set(Caption.objects.filter(dataset=pool.dataset_id, original_clip__isnull=False)
                    .values_list("id", "original_clip_id"))
    return PooledPair.objects.bulk_create(
        (PooledPair(pool=pool, caption_id=caption_pk[d.query], clip_id=clip_pk[d.doc], queue_order=int(o),
                    required_labels=2 if two else 1, is_original_positive=(caption_pk[d.query], clip_pk[d.doc]) in originals)
         for d, o, two in zip(judged, order, double)), batch_size=BATCH)


def _record_pool_runs(pool: Pool, runs: list[Run], judged: list[PooledDocument]) -> None:
    """A run 'adds' the sampled pairs that no run listed before it proposed."""
    position = {str(run.pk): index for index, run in enumerate(runs)}
    added = [0] * len(runs)
    for document in judged:
        added[min(position[run] for run, _ in document.proposed_by)] += 1
    PoolRun.objects.bulk_create([PoolRun(pool=pool, run=run, pairs_added=added[i]) for i, run in enumerate(runs)])
