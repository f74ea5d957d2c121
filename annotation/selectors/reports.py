"""Reads for reports: stored reports and judgment sets, and the pool data reports are computed from.

Report inputs come out as NumPy columns (a binary COPY parsed into arrays on PostgreSQL, chunked
reads elsewhere: `_columns`), because a pool of 550K pairs with 650K labels is too big to hold as
model instances.
Export inputs are in selectors/exports.py; a stored report's tables are its kind's
(services/reports/registry.py).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (BigIntegerField, BooleanField, Case, FloatField, IntegerField, QuerySet,
                              SmallIntegerField, Value, When)
from django.db.models.functions import Cast, Coalesce

from annotation.analysis.sample_eval import trec_order
from annotation.models import Caption, Label, PairProvenance, Pool, PooledPair, Prediction, RaterProfile, Report, Run
from annotation.models.judgment_sets import JudgmentSet
from annotation.selectors.score_matrix_runs import score_matrix_top

FETCH = 20_000


# --------------------------------------------------------------------------------------------
# stored reports and files


def report_list(*, dataset_id: int | None = None, pool_id: int | None = None, kind: str | None = None) -> QuerySet:
    reports = Report.objects.select_related("dataset", "pool")
    if dataset_id:
        reports = reports.filter(dataset_id=dataset_id)
    if pool_id:
        reports = reports.filter(pool_id=pool_id)
    if kind:
        reports = reports.filter(kind=kind)
    return reports


def judgment_set_list(*, dataset_id: int | None = None) -> QuerySet:
    """Judgment sets, newest first; of one dataset when given."""
    sets = JudgmentSet.objects.all()
    return sets if dataset_id is None else sets.filter(dataset_id=dataset_id)


def judgment_sets_listed(*, limit: int = 500) -> list[JudgmentSet]:
    """The newest judgment sets of every dataset with their datasets, for the reports page."""
    return list(judgment_set_list().select_related("dataset")[:limit])


def scorable_runs() -> QuerySet:
    """Runs offered for scoring against a judgment set on the reports page, by dataset and name:
    every stored run (which a set can score is services.judgment_sets.scoring.stored_runs_check)."""
    return Run.objects.select_related("dataset").order_by("dataset__name", "name")


# --------------------------------------------------------------------------------------------
# report inputs as columns


def _columns(queryset: QuerySet, fields: list[str], dtypes: list, order_by: tuple[str, ...] = ()) -> list[np.ndarray]:
    """The fields of a queryset as NumPy arrays of numbers or booleans (None becomes NaN in floats),
    in `order_by`'s order (none: the database's).

    Made at the size a count gives and filled as rows arrive (grown if rows arrived meanwhile), so
    a FIRE-sized pool's columns are held once, not once in chunks and again joined (issue 40). On
    PostgreSQL they come as a binary COPY parsed straight into the arrays (_BinaryColumns; 4.0 ->
    1.5 s for a FIRE-sized pool's 663,000 votes); elsewhere the compiled SQL runs on a chunked
    cursor and is converted a chunk at a time (building Django rows for 550K pairs would take most
    of a report's time).
    """
    size = queryset.order_by().count()
    if connection.vendor == "postgresql":
        return _columns_copied(queryset, fields, dtypes, order_by, size)
    sql, params = queryset.values_list(*fields).order_by(*order_by).query.get_compiler(using=queryset.db).as_sql()
    out = [np.empty(size, dtype=d) for d in dtypes]
    done = 0
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH):
            out = _room_for(out, done, len(rows))
            for i, column in enumerate(zip(*rows)):
                out[i][done:done + len(rows)] = np.asarray(column, dtype=dtypes[i])
            done += len(rows)
    return [a if done == a.size else a[:done].copy() for a in out]


def _room_for(arrays: list[np.ndarray], done: int, more: int) -> list[np.ndarray]:
    """The arrays, each with room for `more` values after its first `done`: as they are, or grown
    (doubled at least) when rows arrived after the count that sized them."""
    if done + more <= arrays[0].size:
        return arrays
    size = max(2 * arrays[0].size, done + more)
    return [np.concatenate([a[:done], np.empty(size - done, dtype=a.dtype)]) for a in arrays]


# PostgreSQL's binary COPY (docs: "COPY", "Binary Format"): a header, then per row a 16-bit field
# count and each field as a 32-bit length and its bytes (big-endian), then a 16-bit -1.
_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_COPY_HEADER = len(_COPY_SIGNATURE) + 8  # the signature, a 32-bit flags field, the extension's length
_COPY_TRAILER = b"\xff\xff"


#: Integer columns by width: int16 and int32 for small codes and counts (at 1.1M pairs each int64
#: column is 8.9 MB, held through a whole report), int64 for ids. The database's cast refuses a
#: value out of the column's range ("smallint out of range"): nothing wraps.
_INTEGERS = {np.dtype(np.int16): (">i2", "smallint"), np.dtype(np.int32): (">i4", "integer"),
             np.dtype(np.int64): (">i8", "bigint")}


def _wire(dtype) -> tuple[str, str]:
    """How a column of `dtype` is sent: (its big-endian NumPy type on the wire, the SQL type cast to)."""
    if np.dtype(dtype) == np.bool_:
        return "?", "boolean"
    if np.issubdtype(np.dtype(dtype), np.floating):
        return ">f8", "double precision"
    if np.dtype(dtype) not in _INTEGERS:
        raise ValueError(f"no column type for {np.dtype(dtype)}: int16, int32, int64, float64 or bool")
    return _INTEGERS[np.dtype(dtype)]


class _BinaryColumns:
    """A file-like sink for `COPY ... TO STDOUT (FORMAT binary)` of fixed-width columns (smallint,
    integer, bigint, double precision, boolean, none NULL) that parses each megabyte of rows into
    preallocated arrays: no Python object per value, and the database sends its binary values
    without formatting them as text."""

    def __init__(self, dtypes: list, size: int) -> None:
        self.dtypes = dtypes
        fields = [("fields", ">i2")]
        for i, dtype in enumerate(dtypes):
            fields += [(f"length{i}", ">i4"), (f"value{i}", _wire(dtype)[0])]
        self.row = np.dtype(fields)
        self.widths = [np.dtype(_wire(d)[0]).itemsize for d in dtypes]
        self.out = [np.empty(size, dtype=d) for d in dtypes]
        self.done = 0
        self.parts: list[bytes] = []
        self.pending = 0
        self.started = False

    def write(self, data: bytes) -> int:
        self.parts.append(data)
        self.pending += len(data)
        if self.pending >= 1 << 20:
            self._parse(final=False)
        return len(data)

    def _parse(self, *, final: bool) -> None:
        buf = b"".join(self.parts)
        start = 0
        if not self.started:
            if buf[:len(_COPY_SIGNATURE)] != _COPY_SIGNATURE:
                raise ValueError("not a PostgreSQL binary COPY stream")
            start = _COPY_HEADER + int.from_bytes(buf[_COPY_HEADER - 4:_COPY_HEADER], "big")
            self.started = True
        n = (len(buf) - start) // self.row.itemsize
        if final and buf[start + n * self.row.itemsize:] != _COPY_TRAILER:
            raise ValueError("a binary COPY row that is not the columns asked for (a NULL, or another type)")
        rows = np.frombuffer(buf, dtype=self.row, count=n, offset=start)
        if n and ((rows["fields"] != len(self.dtypes)).any()
                  or any((rows[f"length{i}"] != w).any() for i, w in enumerate(self.widths))):
            raise ValueError("a binary COPY row that is not the columns asked for (a NULL, or another type)")
        self.out = _room_for(self.out, self.done, n)
        for i, column in enumerate(self.out):
            column[self.done:self.done + n] = rows[f"value{i}"]
        self.done += n
        rest = buf[start + n * self.row.itemsize:]
        self.parts, self.pending = [rest], len(rest)

    def columns(self) -> list[np.ndarray]:
        self._parse(final=True)
        return [a if self.done == a.size else a[:self.done].copy() for a in self.out]


def _columns_copied(queryset: QuerySet, fields: list[str], dtypes: list, order_by: tuple[str, ...],
                    size: int) -> list[np.ndarray]:
    """_columns on PostgreSQL: each field cast to its wire type (a NULL float sent as NaN, as the
    chunked path gives it), the rows streamed by a binary COPY into _BinaryColumns."""
    wire = []
    for field, dtype in zip(fields, dtypes):
        sql_type = _wire(dtype)[1]
        cast = Cast(field, {"double precision": FloatField(), "boolean": BooleanField(), "smallint": SmallIntegerField(),
                            "integer": IntegerField()}.get(sql_type, BigIntegerField()))
        wire.append(Coalesce(cast, Value(float("nan"), output_field=FloatField()))
                    if sql_type == "double precision" else cast)
    sql, params = queryset.values_list(*wire).order_by(*order_by).query.get_compiler(using=queryset.db).as_sql()
    sink = _BinaryColumns(dtypes, size)
    with connection.cursor() as cursor:
        copy = cursor.cursor.mogrify(f"COPY ({sql}) TO STDOUT (FORMAT binary)", params).decode()
        cursor.cursor.copy_expert(copy, sink)
    return sink.columns()


def _answer_code(field: str) -> Case:
    """1 relevant, 0 not relevant, -1 anything else (no answer)."""
    return Case(When(**{field: "relevant"}, then=Value(1)), When(**{field: "not_relevant"}, then=Value(0)),
                default=Value(-1), output_field=IntegerField())


@dataclass
class PoolPairs:
    """The pool's pairs (role 'pool'), one entry per pair, sorted by pair id."""

    id: np.ndarray
    caption: np.ndarray
    clip: np.ndarray
    is_original: np.ndarray
    state: np.ndarray  # the state strings
    resolved: np.ndarray  # 1 relevant, 0 not relevant, -1 not resolved
    votes: np.ndarray
    by_admin: np.ndarray

    def index_of(self, pair_ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.id, pair_ids)

    @property
    def from_imported(self) -> np.ndarray:
        """Pairs whose verdict came from imported judgments: decided with no vote, not by an admin."""
        decided = np.isin(self.state, [PooledPair.State.RESOLVED, PooledPair.State.DISAGREEMENT])
        return decided & (self.votes == 0) & ~self.by_admin


#: The pair states in the order pool_pairs reads them as numbers; -1 (no such state) reads as None.
_STATES = np.array([*PooledPair.State.values, None], dtype=object)


def pool_pairs(*, pool: Pool) -> PoolPairs:
    # The state comes as its position in _STATES and is made the state's string again, one string
    # object per state shared by every pair (555,000 copies of 'resolved' were 31 MB of a release).
    qs = (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
          .annotate(code=Case(When(state=PooledPair.State.RESOLVED, then=_answer_code("resolved_label")),
                              default=Value(-1), output_field=IntegerField()),
                    state_code=Case(*[When(state=state, then=Value(i)) for i, state in enumerate(_STATES[:-1])],
                                    default=Value(-1), output_field=IntegerField())))
    fields = ["id", "caption_id", "clip_id", "is_original_positive", "state_code", "code", "vote_count",
              "resolved_by_admin"]
    # Ids as int64; the state's and the verdict's codes and the vote count narrower (issue 40).
    dtypes = [np.int64, np.int64, np.int64, bool, np.int16, np.int16, np.int32, bool]
    pair, caption, clip, original, state, code, votes, by_admin = _columns(qs, fields, dtypes, order_by=("id",))
    return PoolPairs(pair, caption, clip, original, _STATES[state], code, votes, by_admin)


@dataclass
class PoolLabels:
    """Verdict labels on a pool's pairs, in label-id order."""

    pair: np.ndarray
    rater: np.ndarray  # user ids
    value: np.ndarray  # 1 relevant, 0 not relevant
    # None where a caller has let them go before work that does not read them (agreement report)
    sequence: np.ndarray | None
    seconds: np.ndarray | None


def pool_votes(*, pool: Pool) -> PoolLabels:
    """Counted votes (relevant / not relevant) on the pool's 'pool' pairs: the labels agreement is
    about. Surplus labels, 'ambiguous' escalations and 'broken clip' reports are not votes."""
    qs = (Label.objects.filter(pair__pool=pool, pair__role=PooledPair.Role.POOL, counted=True, value__in=Label.VOTES)
          .annotate(code=_answer_code("value")).order_by("id"))
    return PoolLabels(*_columns(qs, ["pair_id", "rater_id", "code", "sequence", "seconds"],
                                [np.int64, np.int64, np.int64, np.int64, float], order_by=("id",)))


def pool_known_answers(*, pool: Pool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(rater, given, expected)` for every verdict raters gave on gold and training pairs
    (codes 1 relevant, 0 not relevant): the raw material of per-rater gold accuracy."""
    qs = (Label.objects.filter(pair__pool=pool, pair__role__in=[PooledPair.Role.GOLD, PooledPair.Role.TRAINING],
                               value__in=Label.VOTES)
          .annotate(given=_answer_code("value"), expected=_answer_code("pair__known_answer")))
    rater, given, expected = _columns(qs, ["rater_id", "given", "expected"], [np.int64, np.int64, np.int64])
    keep = expected >= 0
    return rater[keep], given[keep], expected[keep]


def pool_other_labels_per_rater(*, pool: Pool) -> dict[int, dict[str, int]]:
    """Per rater: how many 'ambiguous' escalations and 'broken clip' reports they gave in the pool."""
    out: dict[int, dict[str, int]] = {}
    rows = (Label.objects.filter(pair__pool=pool, pair__role=PooledPair.Role.POOL,
                                 value__in=[Label.Value.AMBIGUOUS, Label.Value.BROKEN])
            .values_list("rater_id", "value").order_by())
    for rater, value in rows.iterator(chunk_size=FETCH):
        counts = out.setdefault(rater, {"ambiguous": 0, "broken": 0})
        counts[value] += 1
    return out


def pseudonyms(*, user_ids) -> dict[int, int]:
    """User id -> rater pseudonym (the only rater id reports and exports show)."""
    return dict(RaterProfile.objects.filter(user_id__in=list(user_ids)).values_list("user_id", "pseudonym"))


def pool_raters_without_profile(*, pool: Pool) -> QuerySet:
    labelled = Label.objects.filter(pair__pool=pool).values("rater_id")
    return get_user_model().objects.filter(pk__in=labelled, rater_profile__isnull=True)


def disagreement_details(*, pool: Pool, limit: int) -> list[dict]:
    """The pool's unresolved disagreements (judged, no majority) with their votes, oldest first."""
    pairs = (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, state=PooledPair.State.DISAGREEMENT)
             .select_related("caption", "clip").order_by("pk")[:limit])
    votes: dict[int, list] = {}
    for pair_id, value, pseudonym in (Label.objects.filter(pair__in=[p.pk for p in pairs], counted=True)
                                      .order_by("pair_id", "sequence", "pk")
                                      .values_list("pair_id", "value", "rater__rater_profile__pseudonym")):
        votes.setdefault(pair_id, []).append({"rater": pseudonym, "value": value})
    return [{"pair_id": p.pk, "caption_id": p.caption.external_id, "caption": p.caption.text,
             "clip_id": p.clip.external_id, "votes": votes.get(p.pk, []), "imported": not votes.get(p.pk)}
            for p in pairs]


def dataset_captions(*, dataset_id: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """`(caption ids, texts, original clip ids (-1 if none))`, sorted by caption id."""
    ids, texts, originals = [], [], []
    for pk, text, original in (Caption.objects.filter(dataset_id=dataset_id).order_by("pk")
                               .values_list("id", "text", "original_clip_id").iterator(chunk_size=FETCH)):
        ids.append(pk)
        texts.append(text)
        originals.append(-1 if original is None else original)
    return np.asarray(ids, dtype=np.int64), texts, np.asarray(originals, dtype=np.int64)


def pool_runs(*, pool: Pool) -> list[Run]:
    return list(pool.runs.order_by("name"))


def run_rankings(*, run: Run, depth: int) -> dict[int, list[int]]:
    """`caption id -> clip ids in rank order` for the run's top `depth`. The run's own ranks decide
    the order whatever the scores, so tied scores keep the order the run file gave them (a score
    matrix run has no ranks: trec_eval's tie rule, see selectors/score_matrix_runs.py)."""
    if run.scores_file:
        caption, clip, rank = score_matrix_top(run=run, depth=depth)
    else:
        caption, rank, clip = _columns(Prediction.objects.filter(run=run, rank__lte=depth),
                                       ["caption_id", "rank", "clip_id"], [np.int64, np.int64, np.int64])
    order = np.lexsort((rank, caption))
    caption, clip = caption[order], clip[order]
    out: dict[int, list[int]] = {}
    if caption.size == 0:
        return out
    starts = np.flatnonzero(np.r_[True, caption[1:] != caption[:-1]])
    ends = np.r_[starts[1:], caption.size]
    clips = clip.tolist()
    for q, s, e in zip(caption[starts].tolist(), starts.tolist(), ends.tolist()):
        out[q] = clips[s:e]
    return out


def run_trec_ranking_rows(*, run: Run, depth: int | None = None) -> Iterator[tuple[int, list[int]]]:
    """`(caption id, clip ids)` per caption, by caption id, the clips in the order trec_eval and
    `evaluate` rank the run's file: score descending, ties by clip id (the external id, as the file
    names it) descending (annotation.analysis.sample_eval.trec_order); every stored rank, or the
    first `depth` of that order. A run stored without scores has score = -rank, as `evaluate` writes
    a stored run (services/judgment_sets/scoring.py), so its ranks are the order. A score matrix
    run: its stored ranking (already this order, annotation.analysis.score_rankings), to its own
    depth. Streamed: a caption's list at a time (a leaderboard reads runs by blocks of captions)."""
    if run.scores_file:
        caption, clip, rank = score_matrix_top(run=run, depth=depth)
        order = np.lexsort((rank, caption))
        caption, clips = caption[order], clip[order].tolist()
        starts = np.flatnonzero(np.r_[True, caption[1:] != caption[:-1]]) if caption.size else np.zeros(0, int)
        ends = np.r_[starts[1:], caption.size]
        for q, s, e in zip(caption[starts].tolist(), starts.tolist(), ends.tolist()):
            yield q, clips[s:e]  # scores -rank, all distinct: trec order is rank order
        return
    rows = (Prediction.objects.filter(run=run).order_by("caption_id", "rank")
            .values_list("caption_id", "clip_id", "clip__external_id", "rank", "score").iterator(chunk_size=FETCH))
    for q, group in groupby(rows, key=itemgetter(0)):
        group = list(group)
        pk_of = {external: c for _, c, external, _, _ in group}
        ordered = trec_order([external for _, _, external, _, _ in group],
                             [-rank if score is None else score for _, _, _, rank, score in group])
        yield q, [pk_of[c] for c in (ordered if depth is None else ordered[:depth])]


class CaptionBlocks:
    """Rows ordered by caption id (their first column), taken a block of captions at a time: a
    leaderboard merges its streams (verdicts, each run's rankings, provenance) block by block, so
    it holds one block of a pool, never the whole (issue 40)."""

    def __init__(self, rows: Iterable[tuple]) -> None:
        self._rows = iter(rows)
        self._next = next(self._rows, None)

    def upto(self, last_caption: int) -> list[tuple]:
        """The rows not taken yet whose caption id is at most `last_caption`."""
        out = []
        while self._next is not None and self._next[0] <= last_caption:
            out.append(self._next)
            self._next = next(self._rows, None)
        return out


def pool_verdict_rows(*, pool: Pool) -> Iterator[tuple[int, int, int]]:
    """`(caption id, clip id, 1 relevant / 0 not)` of the pool's resolved 'pool' pairs, by caption
    then clip: the corrected leaderboard's verdicts (the original positives are added beside)."""
    return (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL, state=PooledPair.State.RESOLVED)
            .annotate(relevant=Case(When(resolved_label=PooledPair.Answer.RELEVANT, then=Value(1)), default=Value(0),
                                    output_field=IntegerField()))
            .order_by("caption_id", "clip_id").values_list("caption_id", "clip_id", "relevant")
            .iterator(chunk_size=FETCH))


def pool_provenance_rows(*, pool: Pool) -> Iterator[tuple[int, int, int]]:
    """`(caption id, clip id, run id)` of every run that proposed each 'pool' pair, by caption."""
    return (PairProvenance.objects.filter(pair__pool=pool, pair__role=PooledPair.Role.POOL)
            .order_by("pair__caption_id", "pair__clip_id", "run_id")
            .values_list("pair__caption_id", "pair__clip_id", "run_id").iterator(chunk_size=FETCH))


def pool_provenance(*, pool: Pool, depth: int | None = None,
                    relevant_only: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(pair id, run id, rank)` for every run that proposed each pool pair (within `depth`; only
    pairs resolved relevant with `relevant_only`)."""
    qs = PairProvenance.objects.filter(pair__pool=pool, pair__role=PooledPair.Role.POOL)
    if depth is not None:
        qs = qs.filter(rank__lte=depth)
    if relevant_only:
        qs = qs.filter(pair__state=PooledPair.State.RESOLVED, pair__resolved_label=PooledPair.Answer.RELEVANT)
    return tuple(_columns(qs, ["pair_id", "run_id", "rank"], [np.int64, np.int64, np.int64]))


# --------------------------------------------------------------------------------------------
# how pages name the raters of a stored report


def report_rater_names(*, report: Report, usernames: bool) -> dict[int, str]:
    """Pseudonym -> how a page names the rater of a pool report. Admins manage raters by user
    name (the pool and rater pages name them so); everyone else sees reports as exports are,
    pseudonymous, written 'rater 1001' so the id does not read as a count ('1,001')."""
    if report.kind != "agreement" or not isinstance(report.result, dict):
        return {}
    seen = {r["rater"] for r in report.result.get("raters", [])}
    seen |= {v["rater"] for d in report.result.get("disagreements", []) for v in d.get("votes", [])}
    seen.discard(None)
    names = {p: f"rater {p}" for p in seen}
    if usernames:
        names |= dict(RaterProfile.objects.filter(pseudonym__in=seen).values_list("pseudonym", "user__username"))
    return names
