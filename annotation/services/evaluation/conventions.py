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


@dataclass(frozen=True)
class Conventions:
    name: str
    max_result_size: int | None
    tool: str
    relevance_level: int = 1
    tie_break: str = "score descending, then document id descending"
    unanswered_queries: str = "skipped (not scored, not averaged)"
    queries_without_judgments: str = "ignored"

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        size = (f"first {self.max_result_size} results per query, AP rescaled when R > {self.max_result_size}"
                if self.max_result_size else "every result scored, no max result size")
        return (f"{self.name} ({self.tool}): {size}; relevant at rel >= {self.relevance_level}; ties: "
                f"{self.tie_break}; queries the run did not answer: {self.unanswered_queries}")


CONVENTIONS: dict[str, Conventions] = {
    "trecvid": Conventions("trecvid", 1000, "NIST sample_eval.pl, TRECVID AVS since 2016"),
    "trec": Conventions("trec", None, "trec_eval 9, default options"),
}
