"""The official tools' rules a score depends on, named so every output can say which were applied.

``trecvid`` is NIST's ``sample_eval.pl`` as TRECVID AVS runs it since 2016: a run is scored on its
first 1,000 shots per topic (score descending, ties by shot id descending), AP is rescaled when
the estimated number of relevant shots exceeds 1,000, and the ideal DCG stops at rank 1,000.
``trec`` is ``trec_eval`` without options: every retrieved document is scored, same tie rule, no
rescaling. Under both, a query the run did not answer is skipped (neither tool scores it 0
without ``-c``) and a run query absent from the judgments is ignored.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from annotation.analysis.rank_order import TRECVID_MAX_RESULT_SIZE


@dataclass(frozen=True)
class Conventions:
    name: str
    max_result_size: int | None
    tool: str
    relevance_level: int = 1
    tie_break: str = "score descending, then document id descending"
    unanswered_queries: str = "skipped (not scored, not averaged)"
    queries_without_judgments: str = "ignored"
    rules: str | None = None  # the whole rule text, for tools the ranked-retrieval fields do not describe

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        if self.rules:
            return f"{self.name} ({self.tool}): {self.rules}"
        size = (f"first {self.max_result_size} results per query, AP rescaled when R > {self.max_result_size}"
                if self.max_result_size else "every result scored, no max result size")
        return (f"{self.name} ({self.tool}): {size}; relevant at rel >= {self.relevance_level}; ties: "
                f"{self.tie_break}; queries the run did not answer: {self.unanswered_queries}")


CONVENTIONS: dict[str, Conventions] = {
    "trecvid": Conventions("trecvid", TRECVID_MAX_RESULT_SIZE, "NIST sample_eval.pl, TRECVID AVS since 2016"),
    "trec": Conventions("trec", None, "trec_eval 9, default options"),
    "qvhighlights": Conventions(
        "qvhighlights", 10, "Moment-DETR standalone_eval", relevance_level=None,
        tie_break="first 10 predictions in file order, then score descending (stable)",
        unanswered_queries="scored 0 (the official script refuses the file)",
        rules="first 10 predictions per query in file order; R1 from the first prediction in the file; mAP "
              "over IoU 0.5:0.05:0.95 after a stable sort by score, each window matched once; x100, 2 decimals; "
              "queries the run did not answer: scored 0 (the official script refuses the file)"),
    "tvr": Conventions(
        "tvr", 100, "TVRetrieval standalone_eval", relevance_level=None,
        tie_break="file order (scores ignored)",
        unanswered_queries="scored 0",
        rules="first 100 predictions per query in file order, scores ignored; IoU in float32; "
              "VCMR/SVMR R@K at IoU 0.5/0.7, VR R@K; x100, 2 decimals; queries the run did not answer: scored 0"),
    "didemo": Conventions(
        "didemo", None, "LocalizingMoments utils/eval.py", relevance_level=None,
        tie_break="file order (the ranking as given)",
        unanswered_queries="scored 0 (the official script needs a ranking for every annotation)",
        rules="5-second segment indices, inclusive end; per annotation the mean of the 3 best ranks of the "
              "annotators' windows (rank@1: <= 1, rank@5: <= 5) and the mean of the 3 highest IoUs of the top "
              "moment, so the most disagreeing of 4 annotators is dropped; a window absent from the ranking has "
              "an infinite rank (the official script raises); fractions, as %f prints them; queries the run did "
              "not answer: scored 0"),
}
