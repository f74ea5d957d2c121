"""Rankings from a score matrix (rows = queries, columns = documents), as trec_eval would rank them.

trec_eval and sample_eval.pl order a query's documents by score descending and break ties by
document id descending (byte order; see ``annotation.analysis.sample_eval.trec_order``). A score
matrix has no ranks of its own, so pools and metrics that read its top k use that same rule: a
matrix run exported to a TREC run file and scored by those tools ranks every query identically.

``top_k`` avoids sorting whole rows: ``np.argpartition`` finds each row's k best, and only rows
where the k-th best score is tied with scores outside the k are resolved one by one.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def tie_order(doc_ids: Sequence[str]) -> np.ndarray:
    """Column permutation that lists documents by id descending: the tie-break order.

    Python compares str by code point, which orders UTF-8 text as the tools' byte comparisons do.
    """
    return np.asarray(sorted(range(len(doc_ids)), key=lambda j: doc_ids[j], reverse=True), dtype=np.int64)


def top_k(scores: np.ndarray, k: int, order: np.ndarray, *, block_rows: int = 1024) -> np.ndarray:
    """The column indices of each row's k best documents, best first: ``(n_rows, min(k, n_cols))``.

    ``order`` is ``tie_order(doc_ids)``: among equal scores, the document earlier in ``order``
    ranks first. Scores must be finite.
    """
    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(f"scores must be 2-D, not {s.ndim}-D")
    n, m = s.shape
    order = np.asarray(order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(m)):
        raise ValueError("order must be a permutation of the columns")
    if k < 1:
        raise ValueError("k must be at least 1")
    k = min(k, m)
    out = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        # Columns in tie order and scores negated: then "best first" is ascending value and, among
        # equal values, ascending column position.
        block = s[start:stop][:, order]
        neg = -(block if block.dtype.kind == "f" else block.astype(np.float64))
        if k == m:
            picked = np.argsort(neg, axis=1, kind="stable")
        else:
            part = np.argpartition(neg, k - 1, axis=1)[:, :k]
            values = np.take_along_axis(neg, part, axis=1)
            kth = values.max(axis=1)
            tied_outside = (neg <= kth[:, None]).sum(axis=1) > k
            picked = np.take_along_axis(part, np.lexsort((part, values), axis=1), axis=1)
            for r in np.flatnonzero(tied_outside).tolist():
                candidates = np.flatnonzero(neg[r] <= kth[r])
                picked[r] = candidates[np.lexsort((candidates, neg[r, candidates]))][:k]
        out[start:stop] = order[picked]
    return out
