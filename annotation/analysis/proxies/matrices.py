"""Vectorised set IoU between many items with scipy.sparse binary matrices.

For item sets a_1..a_n and b_1..b_m over one vocabulary, with binary incidence matrices A (n x V)
and B (m x V): intersection = A @ B.T, union = |a_i| + |b_j| - intersection, and
IoU = intersection / union, defined as 0 when the union is empty (two empty sets), as in the
published proxy code (which divided by 0.0001 instead of 0). No Python loop over pairs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp

Progress = Callable[[int, int], None]


def vocabulary(*collections: Iterable[Iterable[Hashable]]) -> dict[Hashable, int]:
    """Index every distinct element of the given collections of sets (first-seen order)."""
    vocab: dict[Hashable, int] = {}
    for coll in collections:
        for items in coll:
            for x in items:
                if x not in vocab:
                    vocab[x] = len(vocab)
    return vocab


def binary_matrix(sets: Sequence[Iterable[Hashable]], vocab: dict[Hashable, int]) -> sp.csr_matrix:
    """CSR float32 matrix with a 1 at (i, vocab[x]) for each x in sets[i] (duplicates collapse)."""
    indptr = [0]
    indices: list[int] = []
    for items in sets:
        cols = sorted({vocab[x] for x in items})
        indices.extend(cols)
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float32)
    return sp.csr_matrix(
        (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(len(sets), len(vocab)),
    )


def iou_matrix(
    a_sets: Sequence[Iterable[Hashable]],
    b_sets: Sequence[Iterable[Hashable]],
    *,
    block_rows: int = 1024,
    progress: Progress | None = None,
) -> np.ndarray:
    """IoU |a_i ∩ b_j| / |a_i ∪ b_j| for all pairs, float32 (n x m); 0 where both sets are empty."""
    vocab = vocabulary(a_sets, b_sets)
    A = binary_matrix(a_sets, vocab)
    B = binary_matrix(b_sets, vocab)
    n, m = A.shape[0], B.shape[0]
    out = np.zeros((n, m), dtype=np.float32)
    a_size = np.asarray(A.sum(axis=1), dtype=np.float32).ravel()
    b_size = np.asarray(B.sum(axis=1), dtype=np.float32).ravel()
    BT = B.T.tocsc()
    # Counts are small integers, exact in float32; blocks bound the dense temporaries.
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        inter = (A[start:stop] @ BT).toarray()
        union = a_size[start:stop, None] + b_size[None, :] - inter
        np.divide(inter, union, out=out[start:stop], where=union > 0)
        if progress is not None:
            progress(stop, n)
    return out


def fraction_sets(
    groups: Sequence[Sequence[Iterable[Hashable]]], min_fraction: float = 0.25
) -> list[set[Hashable]]:
    """Per group of sets (a clip's captions), the elements present in >= min_fraction of them.

    An element present in k of a clip's n captions is kept when k >= min_fraction * n (a 1e-9
    tolerance absorbs float error, e.g. 0.3 * 10). With one caption every element is kept; with
    four captions at 0.25, one occurrence suffices; with five, two are needed. A clip with no
    captions gets the empty set.
    """
    if not 0.0 <= min_fraction <= 1.0:
        raise ValueError("min_fraction must be in [0, 1]")
    out: list[set[Hashable]] = []
    for group in groups:
        n = len(group)
        if n == 0:
            out.append(set())
            continue
        if n == 1:
            out.append(set(group[0]))
            continue
        counts = Counter(x for items in group for x in set(items))
        need = min_fraction * n - 1e-9
        out.append({x for x, k in counts.items() if k >= need})
    return out


def min_count(n_captions: int, min_fraction: float) -> int:
    """Smallest number of a clip's captions an element must appear in (for documentation/tests)."""
    return max(1, math.ceil(min_fraction * n_captions - 1e-9)) if n_captions else 0
