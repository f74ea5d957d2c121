"""Reads of score-matrix runs (Run.scores_file): the stored .npz as database ids, its rankings, and
its predictions in the shapes the pool builders, reports and proxy nDCG read.

A matrix run stores no Prediction rows. Its ranking of a caption's clips is the trec_eval one
(score descending, ties by clip id descending: annotation.analysis.score_rankings), cut at
Run.depth (all clips unless the import was given a smaller --max-depth). Code that reads a run's
predictions goes through `run_prediction_rows`, which serves both kinds of run.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from annotation.analysis.score_rankings import tie_order, top_k
from annotation.formats.score_matrix import load_score_matrix
from annotation.models import Caption, Clip, Prediction, Run
from annotation.selectors.ranking import RunSimilarity
from annotation.storage import stored_file_cached_path

ROW_CHUNK = 20_000


@dataclass(frozen=True)
class LoadedScoreMatrix:
    """A matrix run with rows and columns as database ids. Rows or columns whose caption or clip
    is no longer in the dataset are left out (as their Prediction rows would have been deleted)."""

    run: Run
    scores: np.ndarray  # (len(caption_pks), len(clip_pks))
    caption_pks: np.ndarray  # int64
    clip_pks: np.ndarray  # int64
    clip_external_ids: list[str]

    @property
    def depth(self) -> int:
        return min(self.run.depth or len(self.clip_pks), len(self.clip_pks))

    def top(self, depth: int | None = None) -> np.ndarray:
        """Column indices of each row's top `depth` (the run's own depth at most), best first."""
        k = self.depth if depth is None else min(depth, self.depth)
        return top_k(self.scores, k, tie_order(self.clip_external_ids))


def score_matrix_load(*, run: Run) -> LoadedScoreMatrix:
    if not run.scores_file:
        raise ValueError(f"run '{run.name}' is not a score matrix run")
    # numpy reads an .npz by seeking in it: a path on this host (from a bucket, the host's cached
    # copy: the file is named by its checksum).
    matrix = load_score_matrix(stored_file_cached_path("runs", run.scores_file), display=run.source_name or run.name)
    caption_pk = dict(Caption.objects.filter(dataset=run.dataset_id).values_list("external_id", "pk"))
    clip_pk = dict(Clip.objects.filter(dataset=run.dataset_id).values_list("external_id", "pk"))
    rows = [i for i, ext in enumerate(matrix.caption_ids) if ext in caption_pk]
    cols = [j for j, ext in enumerate(matrix.clip_ids) if ext in clip_pk]
    scores = matrix.scores
    if len(rows) < scores.shape[0]:
        scores = scores[rows]
    if len(cols) < scores.shape[1]:
        scores = scores[:, cols]
    return LoadedScoreMatrix(
        run, scores,
        np.asarray([caption_pk[matrix.caption_ids[i]] for i in rows], dtype=np.int64),
        np.asarray([clip_pk[matrix.clip_ids[j]] for j in cols], dtype=np.int64),
        [matrix.clip_ids[j] for j in cols])


def score_matrix_top(*, run: Run, depth: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(caption ids, clip ids, ranks)` as flat int64 arrays: the run's top `depth` per caption
    (its own depth at most), ordered by caption id then rank."""
    loaded = score_matrix_load(run=run)
    rows = np.argsort(loaded.caption_pks, kind="stable")
    top = loaded.top(depth)[rows]
    n, k = top.shape
    return (np.repeat(loaded.caption_pks[rows], k), loaded.clip_pks[top].ravel(),
            np.tile(np.arange(1, k + 1, dtype=np.int64), n))


def score_matrix_rows(*, run: Run, depth: int | None = None) -> Iterator[tuple[int, int, int]]:
    """`(caption id, clip id, rank)` of the run's top `depth` per caption, by caption id then rank."""
    captions, clips, ranks = score_matrix_top(run=run, depth=depth)
    return zip(captions.tolist(), clips.tolist(), ranks.tolist())


def run_prediction_rows(*, runs: Iterable[Run], depth: int) -> Iterator[tuple[int, int, int, int]]:
    """`(run id, caption id, clip id, rank)` of each run's top `depth`, ordered by run, caption, rank,
    whether the run's predictions are stored rows or a score matrix."""
    runs = sorted(runs, key=lambda r: r.pk)
    stored = [r for r in runs if not r.scores_file]
    rows = iter(())
    if stored:
        rows = (Prediction.objects.filter(run__in=stored, rank__lte=depth).order_by("run_id", "caption_id", "rank")
                .values_list("run_id", "caption_id", "clip_id", "rank").iterator(chunk_size=ROW_CHUNK))
    pending = next(rows, None)
    for run in runs:
        if run.scores_file:
            for caption, clip, rank in score_matrix_rows(run=run, depth=depth):
                yield run.pk, caption, clip, rank
            continue
        while pending is not None and pending[0] == run.pk:
            yield pending
            pending = next(rows, None)


def score_matrix_similarity(*, run: Run, clip_ids: list[int], caption_ids: list[int]) -> RunSimilarity:
    """The run as a clips x captions similarity matrix in the given layout (a proxy matrix's):
    the transposed scores, straight from the file. Cells the run does not rank (captions or clips
    it lacks, or ranks past a --max-depth cut) are -inf, as for a run of stored predictions."""
    loaded = score_matrix_load(run=run)
    row = {pk: i for i, pk in enumerate(clip_ids)}
    col = {pk: j for j, pk in enumerate(caption_ids)}
    missing = [pk for pk in loaded.clip_pks.tolist() if pk not in row][:1] + \
              [pk for pk in loaded.caption_pks.tolist() if pk not in col][:1]
    if missing:
        raise ValueError(f"run '{run.name}' ranks clips or captions (database id {missing[0]}) that the proxy matrix "
                         "lacks; recompute the matrix")
    scores = loaded.scores
    if loaded.depth < len(loaded.clip_pks):
        kept = np.full(scores.shape, -np.inf, dtype=scores.dtype)
        top = loaded.top()
        np.put_along_axis(kept, top, np.take_along_axis(scores, top, axis=1), axis=1)
        scores = kept
    rows = np.asarray([row[pk] for pk in loaded.clip_pks.tolist()], dtype=np.int64)
    cols = np.asarray([col[pk] for pk in loaded.caption_pks.tolist()], dtype=np.int64)
    # float32 scores stay float32: half the memory, and the nDCG sorts run faster on them.
    matrix = np.full((len(clip_ids), len(caption_ids)), -np.inf, dtype=scores.dtype)
    if np.array_equal(rows, np.arange(len(clip_ids))) and np.array_equal(cols, np.arange(len(caption_ids))):
        matrix[...] = scores.T  # the common case: the file lists every clip and caption in id order
    else:
        matrix[np.ix_(rows, cols)] = scores.T
    clips_ranked = len(rows) if scores is loaded.scores else int(np.isfinite(scores).any(axis=0).sum())
    return RunSimilarity(matrix, "score", int(scores.shape[0]) * loaded.depth, len(cols), clips_ranked)
