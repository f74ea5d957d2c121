"""How trec_eval and NIST's sample_eval.pl rank a run and how far TRECVID scores it: pure Python,
no NumPy, so a file-only `evaluate` of TREC qrels starts without it (issue 40). sample_eval.py
imports both from here and lists them among its names, for its callers.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

#: NIST's sample_eval since 2012 (TRECVID AVS since 2016): a run lists at most 1,000 shots, so AP is
#: rescaled by R_hat / 1000 when the estimated relevant count R_hat exceeds that. The one declaration
#: of this default: the conventions read it from here, the infAP report, its API and its job
#: through sample_eval.py.
TRECVID_MAX_RESULT_SIZE = 1000


def trec_order(doc_ids: Sequence[str], scores: Sequence[float]) -> list[str]:
    """Rank order of sample_eval.pl and trec_eval: score descending, ties by doc id descending.

    Python compares str by code point, which orders UTF-8 text as the tools' byte comparisons do.
    """
    return [d for d, _ in sorted(zip(doc_ids, scores), key=lambda p: (p[1], p[0]), reverse=True)]


def trec_top(scores: Mapping[str, float], k: int) -> list[str]:
    """``trec_order(list(scores), list(scores.values()))[:k]`` without sorting every document: only
    those scoring at least the k-th best score are ordered (a tie at the k-th score is broken by
    doc id like any other)."""
    if len(scores) > k:
        kth = sorted(scores.values(), reverse=True)[k - 1]
        best = {d: s for d, s in scores.items() if s >= kth}
        return trec_order(list(best), list(best.values()))[:k]
    return trec_order(list(scores), list(scores.values()))
