"""The moment benchmarks' own ground-truth files in a release of a moment pool (services/releases),
from each caption's corrected positive moments (the moment_metrics report's and the corrected
leaderboard's positives: the original moment plus every judged span resolved relevant). Read back by
annotation/formats/moment_files.py, so `evaluate --judgments-format qvhighlights|tvr` scores a run
against them as the leaderboard does.

A format is written only where it says exactly what the positives are; otherwise the reason is
returned and the release lists it (counts.moment_files_left_out), rather than a file that scores
differently from the leaderboard:

* QVHighlights (`qvhighlights.jsonl`): one line a query, ``{"qid", "query", "vid",
  "relevant_windows"}``; a query has one video, so every positive of a caption must lie in one video.
* TVR (`tvr.jsonl`): one line a query, ``{"desc_id", "desc", "vid_name", "ts": [s, e]}``; ``ts`` is
  one window (a list of four or more means annotators' windows, two of which must agree, which is
  another rule), so every caption must have exactly one positive moment.
* DiDeMo is not written: its ``times`` are several annotators' 5-second segments scored by a
  consensus rule, not a set of positives.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

#: (caption id, caption text, positive moments as (video, start, end)), captions in file order.
MomentCaption = tuple[str, str, Sequence[tuple[str, float, float]]]

MOMENT_FILES = ("qvhighlights.jsonl", "tvr.jsonl")


def _positive(captions: Iterable[MomentCaption]) -> list[MomentCaption]:
    return [(qid, text, list(moments)) for qid, text, moments in captions if moments]


def qvhighlights_truth_lines(captions: Iterable[MomentCaption]) -> tuple[list[str] | None, str | None]:
    """(lines, None), or (None, the reason the file cannot be written). Windows keep their order
    (the original moment first), as the leaderboard lists them."""
    lines = []
    for qid, text, moments in _positive(captions):
        videos = list(dict.fromkeys(video for video, _, _ in moments))
        if len(videos) > 1:
            return None, (f"caption {qid!r} has positive moments in {len(videos)} videos ({', '.join(videos[:3])}); "
                          f"a QVHighlights query has one video")
        lines.append(json.dumps({"qid": qid, "query": text, "vid": videos[0],
                                 "relevant_windows": [[start, end] for _, start, end in moments]},
                                ensure_ascii=False) + "\n")
    return lines, None


def tvr_truth_lines(captions: Iterable[MomentCaption]) -> tuple[list[str] | None, str | None]:
    """(lines, None), or (None, the reason the file cannot be written)."""
    lines = []
    for qid, text, moments in _positive(captions):
        if len(moments) != 1:
            return None, (f"caption {qid!r} has {len(moments)} positive moments; TVR's ts is one window a query")
        video, start, end = moments[0]
        lines.append(json.dumps({"desc_id": qid, "desc": text, "vid_name": video, "ts": [start, end]},
                                ensure_ascii=False) + "\n")
    return lines, None


MOMENT_WRITERS = {"qvhighlights.jsonl": qvhighlights_truth_lines, "tvr.jsonl": tvr_truth_lines}
