"""Reads for releases (services/releases): the releases themselves, and the resolved pairs of a
release's sources as one stream in (caption, clip) order, so the archive never holds a pool."""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from django.db.models import QuerySet

from annotation.models import Label, Pool, RaterProfile, Release, SampledDocument
from annotation.models.judgment_sets import JudgmentSet
from annotation.selectors.exports import export_tables, stream_rows

#: How a pair's relevance was reached, as the pairs file and changes.json name it.
HOW_ORIGINAL = "original"        # the caption's original clip: relevant whatever raters say
HOW_ADJUDICATION = "adjudication"  # an admin decided the pair
HOW_LABELS = "labels"            # the raters' majority
HOW_IMPORTED = "imported"        # a pool pair decided by an imported verdict
HOW_JUDGMENT_SET = "judgment_set"  # a verdict of a judgment set named as a source


def release_list(*, name: str | None = None, dataset_id: int | None = None) -> QuerySet:
    releases = Release.objects.select_related("dataset", "created_by")
    if name:
        releases = releases.filter(name=name)
    if dataset_id:
        releases = releases.filter(dataset_id=dataset_id)
    return releases.order_by("name", "-version")


def release_get(*, name: str, version: int) -> Release | None:
    return Release.objects.filter(name=name, version=version).select_related("dataset").first()


def release_previous(*, name: str, version: int) -> Release | None:
    """The newest release of `name` before `version`."""
    return Release.objects.filter(name=name, version__lt=version).order_by("-version").first()


def release_pair_rows(*, pools: Sequence[Pool], judgment_sets: Sequence[JudgmentSet],
                      dataset_id: int, how_of_pool: Mapping[int, str] | None = None) -> Iterator[tuple]:
    """Every verdict the sources give, ordered by (caption id, clip id, precedence):
    (caption id, clip id, caption external id, clip external id, relevance 0/1, how, votes).
    The first row of each (caption, clip) is the one that counts: the original clip first, then the
    pools in the order named, then the judgment sets in the order named. A moment pool judges several
    spans of one clip: the clip is relevant if one of them is (the qrels export's rule, the larger
    grade).

    Every branch names its columns: a UNION takes its names from its first branch, which is the
    judgment sets' or the originals' when no pool is named (issue 35: "no such column: v.q").

    `how_of_pool` (pool id -> how): a pool whose verdicts given by people (labels or an admin) are
    named by why it was judged, e.g. an accepted submission's pool: "submission MODEL"."""
    t = export_tables()
    parts, params = [], []
    if pools:
        order = " ".join("WHEN %s THEN %s" for _ in pools)
        named = {pk: how for pk, how in (how_of_pool or {}).items() if any(pool.pk == pk for pool in pools)}
        named_sql = "".join("WHEN pp.pool_id = %s AND (pp.resolved_by_admin OR pp.vote_count > 0) THEN %s "
                            for _ in named)
        for pk, how in named.items():
            params += [pk, how]
        parts.append(
            f"SELECT pp.caption_id AS q, pp.clip_id AS d, "
            f"CASE WHEN pp.resolved_label = 'relevant' THEN 1 ELSE 0 END AS rel, "
            f"CASE {named_sql}WHEN pp.resolved_by_admin THEN '{HOW_ADJUDICATION}' WHEN pp.vote_count > 0 "
            f"THEN '{HOW_LABELS}' ELSE '{HOW_IMPORTED}' END AS how, pp.vote_count AS votes, "
            f"CASE pp.pool_id {order} END AS rank "
            f"FROM {t['pair']} pp WHERE pp.pool_id IN ({', '.join('%s' for _ in pools)}) AND pp.role = 'pool' "
            f"AND pp.state = 'resolved'")
        for position, pool in enumerate(pools, start=1):
            params += [pool.pk, position]
        params += [pool.pk for pool in pools]
    if judgment_sets:
        order = " ".join("WHEN %s THEN %s" for _ in judgment_sets)
        parts.append(
            f"SELECT ij.caption_id AS q, ij.clip_id AS d, CASE WHEN ij.label = 'relevant' THEN 1 ELSE 0 END AS rel, "
            f"'{HOW_JUDGMENT_SET}' AS how, 0 AS votes, 1000 + CASE ij.judgment_set_id {order} END AS rank "
            f"FROM {t['judged']} ij WHERE ij.judgment_set_id IN ({', '.join('%s' for _ in judgment_sets)}) "
            f"AND ij.label <> 'disagreement'")
        for position, judgment_set in enumerate(judgment_sets, start=1):
            params += [judgment_set.pk, position]
        params += [judgment_set.pk for judgment_set in judgment_sets]
    parts.append(f"SELECT c.id AS q, c.original_clip_id AS d, 1 AS rel, '{HOW_ORIGINAL}' AS how, 0 AS votes, "
                 f"0 AS rank FROM {t['caption']} c "
                 f"WHERE c.dataset_id = %s AND c.original_clip_id IS NOT NULL")
    params.append(dataset_id)
    sql = (f"SELECT v.q, v.d, c.external_id, cl.external_id, v.rel, v.how, v.votes FROM "
           f"({' UNION ALL '.join(parts)}) AS v JOIN {t['caption']} c ON c.id = v.q "
           f"JOIN {t['clip']} cl ON cl.id = v.d ORDER BY v.q, v.d, v.rank, v.rel DESC")
    return stream_rows(sql, params)


def release_rater_pseudonyms(*, pools: Sequence[Pool]) -> list[int]:
    """The platform pseudonyms of everyone who labelled the pools' pairs, ascending: a release
    numbers them r001, r002... in this order."""
    raters = Label.objects.filter(pair__pool__in=list(pools)).values("rater_id")
    return sorted(RaterProfile.objects.filter(user_id__in=raters).values_list("pseudonym", flat=True))


def release_rater_count(*, pools: Sequence[Pool]) -> int:
    return Label.objects.filter(pair__pool__in=list(pools)).values("rater_id").distinct().count()


def release_by_slug(slug: str) -> Release | None:
    """`name@vN` (or `name@N`, or `name` for the newest version)."""
    name, _, version = slug.partition("@")
    if not version:
        return Release.objects.filter(name=name).order_by("-version").select_related("dataset").first()
    version = version[1:] if version[:1] in ("v", "V") else version
    if not version.isdigit():
        return None
    return release_get(name=name, version=int(version))


def release_sample_eval_rows(*, pool: Pool) -> Iterator[tuple[str, str, str, int]]:
    """A sampled pool's full depth as TRECVID sample_eval rows, ordered by caption then clip:
    (topic, shot, stratum, rel), stratum numbered from 1 as the design lists it, rel 1 / 0 for a
    resolved pair and -1 for a pooled document not sampled, or sampled but not (yet) resolved."""
    t = export_tables()
    sql = (f"SELECT c.external_id, cl.external_id, sd.stratum + 1, CASE WHEN sd.sampled AND pp.state = 'resolved' "
           f"THEN (CASE WHEN pp.resolved_label = 'relevant' THEN 1 ELSE 0 END) ELSE -1 END "
           f"FROM {SampledDocument._meta.db_table} sd JOIN {t['caption']} c ON c.id = sd.caption_id "
           f"JOIN {t['clip']} cl ON cl.id = sd.clip_id LEFT JOIN {t['pair']} pp ON pp.id = sd.pair_id "
           f"WHERE sd.pool_id = %s ORDER BY sd.caption_id, sd.clip_id")
    for topic, shot, stratum, rel in stream_rows(sql, [pool.pk]):
        yield topic, shot, str(stratum), int(rel)


def release_sampled_pools(*, pools: Sequence[Pool]) -> list[Pool]:
    """The pools among `pools` built with a sampled design (they get sample_eval qrels)."""
    sampled = set(SampledDocument.objects.filter(pool__in=list(pools)).values_list("pool_id", flat=True).distinct())
    return [pool for pool in pools if pool.pk in sampled]
