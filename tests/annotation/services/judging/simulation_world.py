"""A tiny fully judged pool whose judging curves and estimates are worked out by hand.

Two captions, four clips, two runs, pool depth 2 (the original positives are not pooled):

    run X: q1 -> [a, b]    q2 -> [c, d]
    run Y: q1 -> [a]       q2 -> [c]

Truth: a relevant, b not, c not, d relevant (2 relevant of 4 pool pairs).
Every pair's shallowest rank over the runs: a 1, c 1, b 2, d 2.
"""
from __future__ import annotations

from annotation.models import Caption, Clip, Dataset, PairProvenance, Pool, PooledPair, PoolRun, Prediction, Run
from tests.factories import unique

TRUTH = {("q1", "a"): True, ("q1", "b"): False, ("q2", "c"): False, ("q2", "d"): True}
RUNS = {"X": {"q1": ["a", "b"], "q2": ["c", "d"]}, "Y": {"q1": ["a"], "q2": ["c"]}}


def tiny_world(*, judged=TRUTH, originals: dict[str, str] | None = None, extra_clips: tuple[str, ...] = ()):
    """(dataset, pool, runs) with the pairs in `judged` resolved as given, the rest left open."""
    dataset = Dataset.objects.create(name=unique("judging"))
    clips = {ext: Clip.objects.create(dataset=dataset, external_id=ext, video_id=ext)
             for ext in ("a", "b", "c", "d", *extra_clips)}
    originals = originals or {}
    captions = {q: Caption.objects.create(dataset=dataset, external_id=q, text=f"caption {q}",
                                          original_clip=clips[originals[q]] if q in originals else None)
                for q in ("q1", "q2")}
    runs = []
    for name, lists in RUNS.items():
        run = Run.objects.create(dataset=dataset, name=name, checksum=unique("sum"), depth=2)
        Prediction.objects.bulk_create([Prediction(run=run, caption=captions[q], clip=clips[c], rank=r, score=1 - r / 10)
                                        for q, ranked in lists.items() for r, c in enumerate(ranked, start=1)])
        runs.append(run)
    # Built row by row rather than by pool_create: these tests are about reading a judged pool,
    # whatever the builder's queue order does.
    pool = Pool.objects.create(dataset=dataset, name=unique("pool"), depth=2, redundancy=0.0, seed=0)
    pairs = {}
    for run in runs:
        PoolRun.objects.create(pool=pool, run=run)
        for q, ranked in RUNS[run.name].items():
            for rank, c in enumerate(ranked, start=1):
                if originals.get(q) == c:
                    continue  # original positives are not pooled (include_original_positives off)
                if (q, c) not in pairs:
                    pairs[(q, c)] = PooledPair.objects.create(pool=pool, caption=captions[q], clip=clips[c],
                                                              queue_order=len(pairs))
                PairProvenance.objects.create(pair=pairs[(q, c)], run=run, rank=rank)
    resolve(pool, judged)
    return dataset, pool, runs


def resolve(pool, judged: dict) -> None:
    for (q, c), relevant in judged.items():
        PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, caption__external_id=q,
                                  clip__external_id=c).update(
            state=PooledPair.State.RESOLVED, available=False,
            resolved_label=PooledPair.Answer.RELEVANT if relevant else PooledPair.Answer.NOT_RELEVANT)
