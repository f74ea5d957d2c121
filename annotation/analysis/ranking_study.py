"""Five-caption ranking study: how well a semantic proxy agrees with people (methodology §7).

Selection. For a sampled clip and a proxy, rank the candidate captions by proxy similarity to the
clip and take five: the most similar, the least similar and those at the quartile positions.

* Candidates exclude the clip's own caption(s): their S = 1 is fixed by definition, not by the
  proxy, so showing them would not test the proxy.
* Ranking: stable sort on -score, so ties are ordered by caption index (deterministic).
* With n candidates at ranks 0..n-1 (0 = most similar) the five ranks are
  round(q (n - 1)) for q = 0, 1/4, 1/2, 3/4, 1, rounding halves up; n must be >= 5.

Sampling: ``numpy.random.default_rng(seed).choice(n_clips, size, replace=False)``, returned
sorted, default 100 clips and seed 0.

Report. Per task the five caption ids, their proxy scores and each rater's ordering (caption ids
from most to least relevant):

* a caption pair {A, B} is *consistent* when all raters put A above B (or all put B above A);
  consistent_share = consistent pairs / all pairs (10 per task of five);
* proxy_agreement = share of consistent pairs that the proxy orders the same way (chance 50%),
  a proxy tie counting as half an agreement; proxy_agreement_strict counts ties as
  disagreement; proxy_ties reports how many consistent pairs the proxy tied;
* Kendall's W over the raters' orderings, per task (no tied ranks), averaged over tasks:
  W = 12 S / (m^2 (n^3 - n)), S = sum_i (R_i - m (n + 1) / 2)^2, R_i = rank sum of caption i;
* Krippendorff's alpha at ordinal level (``krippendorff`` package) with units = (task, caption)
  and values = the rank (1 = most relevant) each rater gave; alpha does not depend on which
  rater is which, so each task's raters fill rows 1..m in the order given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from math import floor

import numpy as np

QUANTILES: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
LABELS: tuple[str, ...] = ("most", "rank_q1", "rank_median", "rank_q3", "least")


def rank_captions(scores: Sequence[float] | np.ndarray, exclude: Sequence[int] = ()) -> np.ndarray:
    """Caption indices by descending score, ties by ascending index, without ``exclude``."""
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-s, kind="stable")
    if len(exclude):
        order = order[~np.isin(order, np.asarray(exclude, dtype=np.int64))]
    return order


def five_positions(n: int) -> tuple[int, ...]:
    """Ranks round(q (n - 1)) for q in QUANTILES (halves up), for n >= 5 candidates."""
    if n < 5:
        raise ValueError(f"need at least 5 candidate captions, got {n}")
    return tuple(int(floor(q * (n - 1) + 0.5)) for q in QUANTILES)


@dataclass(frozen=True)
class FiveCaptions:
    """The five captions selected for one clip, in rank order (most similar first)."""

    clip: int
    caption_ids: tuple[int, ...]
    ranks: tuple[int, ...]  # 0-based rank among the candidates
    scores: tuple[float, ...]
    n_candidates: int
    labels: tuple[str, ...] = LABELS


def select_five(
    scores: Sequence[float] | np.ndarray, *, own_captions: Sequence[int] = (), clip: int = -1
) -> FiveCaptions:
    """Select the most/least similar and quartile-position captions from a clip's score row."""
    order = rank_captions(scores, own_captions)
    ranks = five_positions(len(order))
    ids = tuple(int(order[r]) for r in ranks)
    s = np.asarray(scores, dtype=np.float64)
    return FiveCaptions(clip, ids, ranks, tuple(float(s[i]) for i in ids), len(order))


def sample_clips(n_clips: int, n: int = 100, seed: int = 0) -> np.ndarray:
    """``n`` distinct clip indices out of ``n_clips``, seeded, sorted ascending."""
    if n > n_clips:
        raise ValueError(f"cannot sample {n} of {n_clips} clips")
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_clips, size=n, replace=False))


def ranking_tasks(
    similarity: np.ndarray,
    *,
    n: int = 100,
    seed: int = 0,
    caption_owner: Sequence[int] | np.ndarray | None = None,
    clips: Sequence[int] | None = None,
) -> list[FiveCaptions]:
    """Five-caption selections for ``n`` sampled clips (or the given ``clips``) of a clips x captions matrix.

    ``caption_owner[j]`` = clip owning caption j (-1 for none); owners' captions are excluded.
    Without it, when the matrix is square, caption i is taken as clip i's own caption.
    """
    S = np.asarray(similarity)
    n_clips, n_caps = S.shape
    if caption_owner is None:
        if n_clips != n_caps:
            raise ValueError("pass caption_owner for a non-square matrix")
        owner = np.arange(n_caps)
    else:
        owner = np.asarray(caption_owner, dtype=np.int64)
    chosen = sample_clips(n_clips, n, seed) if clips is None else np.asarray(clips, dtype=np.int64)
    return [
        select_five(S[i], own_captions=np.nonzero(owner == i)[0], clip=int(i)) for i in chosen
    ]


@dataclass(frozen=True)
class RankingTask:
    """One rated task: five caption ids, proxy scores (aligned with caption_ids or keyed by id),
    and each rater's ordering of the caption ids from most to least relevant."""

    caption_ids: Sequence[int | str]
    proxy_scores: Sequence[float] | Mapping[int | str, float]
    orderings: Sequence[Sequence[int | str]]

    def score_of(self) -> dict:
        if isinstance(self.proxy_scores, Mapping):
            return {c: float(self.proxy_scores[c]) for c in self.caption_ids}
        if len(self.proxy_scores) != len(self.caption_ids):
            raise ValueError("proxy_scores must align with caption_ids")
        return {c: float(s) for c, s in zip(self.caption_ids, self.proxy_scores)}


@dataclass(frozen=True)
class HumanProxyReport:
    """Human-to-proxy agreement of one proxy over a set of rated tasks."""

    n_tasks: int
    n_pairs: int
    n_consistent: int
    consistent_share: float
    proxy_agree: int
    proxy_ties: int
    proxy_disagree: int
    proxy_agreement: float  # (agree + ties / 2) / consistent; chance 0.5
    proxy_agreement_strict: float  # agree / consistent (ties count as disagreement)
    kendalls_w: float  # mean over tasks
    krippendorff_alpha_ordinal: float
    kendalls_w_per_task: tuple[float, ...] = field(repr=False, default=())
    tie_rule: str = "a proxy tie on a consistent pair counts as half an agreement"


def _ranks(task: RankingTask) -> np.ndarray:
    """raters x captions matrix of 1-based ranks (1 = most relevant), validated."""
    ids = list(task.caption_ids)
    if len(set(ids)) != len(ids):
        raise ValueError("caption_ids must be distinct")
    pos = {c: k for k, c in enumerate(ids)}
    if len(task.orderings) < 2:
        raise ValueError("need at least two raters' orderings per task")
    out = np.zeros((len(task.orderings), len(ids)), dtype=np.int64)
    for r, ordering in enumerate(task.orderings):
        if len(ordering) != len(ids) or set(ordering) != set(ids):
            raise ValueError(f"ordering {list(ordering)} is not a permutation of {ids}")
        for rank, c in enumerate(ordering, start=1):
            out[r, pos[c]] = rank
    return out


def kendalls_w(ranks: np.ndarray) -> float:
    """Kendall's W for an m raters x n items matrix of untied ranks 1..n."""
    m, n = ranks.shape
    totals = ranks.sum(axis=0).astype(np.float64)
    s = float(((totals - m * (n + 1) / 2.0) ** 2).sum())
    return 12.0 * s / (m**2 * (n**3 - n))


def human_proxy_report(tasks: Sequence[RankingTask]) -> HumanProxyReport:
    """Consistent pairs, human-to-proxy agreement, Kendall's W and ordinal Krippendorff's alpha."""
    import krippendorff

    if not tasks:
        raise ValueError("no tasks")
    n_pairs = n_cons = agree = ties = disagree = 0
    ws: list[float] = []
    rank_mats: list[np.ndarray] = []
    for task in tasks:
        ranks = _ranks(task)
        rank_mats.append(ranks)
        ws.append(kendalls_w(ranks))
        score = task.score_of()
        ids = list(task.caption_ids)
        for a, b in combinations(range(len(ids)), 2):
            n_pairs += 1
            above = ranks[:, a] < ranks[:, b]  # rater puts a above b
            if above.all():
                hi, lo = ids[a], ids[b]
            elif (~above).all():
                hi, lo = ids[b], ids[a]
            else:
                continue
            n_cons += 1
            if score[hi] > score[lo]:
                agree += 1
            elif score[hi] == score[lo]:
                ties += 1
            else:
                disagree += 1
    # Krippendorff: rows = rater slots, columns = (task, caption) units, NaN where a task has
    # fewer raters than the largest one.
    n_rows = max(r.shape[0] for r in rank_mats)
    data = np.full((n_rows, sum(r.shape[1] for r in rank_mats)), np.nan)
    col = 0
    for r in rank_mats:
        data[: r.shape[0], col : col + r.shape[1]] = r
        col += r.shape[1]
    try:
        alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"))
    except (ValueError, ZeroDivisionError):
        alpha = float("nan")  # e.g. a single value domain: alpha undefined
    return HumanProxyReport(
        n_tasks=len(tasks),
        n_pairs=n_pairs,
        n_consistent=n_cons,
        consistent_share=n_cons / n_pairs if n_pairs else float("nan"),
        proxy_agree=agree,
        proxy_ties=ties,
        proxy_disagree=disagree,
        proxy_agreement=(agree + 0.5 * ties) / n_cons if n_cons else float("nan"),
        proxy_agreement_strict=agree / n_cons if n_cons else float("nan"),
        kendalls_w=float(np.mean(ws)),
        krippendorff_alpha_ordinal=alpha,
        kendalls_w_per_task=tuple(ws),
    )
