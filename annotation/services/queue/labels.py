"""Submitting labels, resolving pairs, and the admin's decisions on escalated pairs.

A submission carries a client-generated id: sending it again returns the stored label, never a
second one. The label that completes a pair resolves it in the same transaction, under the pair's
row lock, so counts and resolution can never disagree however many raters submit at once.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from datetime import timezone as dt_timezone

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotation import prepared
from annotation.analysis.votes import has_room, resolve_votes
from annotation.models import Clip, Label, Lease, Pool, PooledPair, PoolMembership, PoolQuery, QualityRule, RaterProfile
from annotation.services.crowd.quality import quality_rule_after_answer
from annotation.services.judging import HOOK_COLUMNS_SQL, JUDGING_HOOKED_SQL, pair_judged, pool_is_hooked, query_lock
from annotation.services.judging.order import JUDGED_STATES
from annotation.services.queue.leases import PAIR_FLAG_FIELDS, min_watch_seconds, refresh_pair_flags
from annotation.services.queue.rows import instances_from, raw_first, raw_rows

PAIR_FIELDS = PAIR_FLAG_FIELDS + ["vote_count", "required_labels", "state", "resolved_label", "resolved_at", "broken_reports"]


class LabelRefused(ValueError):
    """The submission cannot be accepted as sent; `code` says why (the API maps it to a status).
    `seconds_left`: for `too_soon`, how long until the same answer would be taken."""

    def __init__(self, code: str, message: str, *, seconds_left: float | None = None) -> None:
        self.code = code
        self.seconds_left = seconds_left
        super().__init__(message)


@dataclass(frozen=True)
class SubmitResult:
    label: Label
    created: bool
    feedback: dict | None  # training pairs only: the correct answer and the guideline it rests on


def training_feedback(label: Label) -> dict | None:
    pair = label.pair
    if pair.role != PooledPair.Role.TRAINING:
        return None
    return {"correct": label.value == pair.known_answer, "answer": pair.known_answer, "explanation": pair.explanation}


def label_submit(*, rater, client_id: str, lease: str, value: str, seconds: float | None = None, comment: str = "",
                 now=None) -> SubmitResult:
    """Stores the rater's answer on the pair they hold (or held) under `lease`, the lease's opaque
    token. Only a lease the rater was given carries a vote, so no pair can be reached around the
    queue: not training out of order, not gold, not another rater's pair, not while paused."""
    now = now or timezone.now()
    client_id = (client_id or "").strip()
    if not client_id or len(client_id) > 64:
        raise LabelRefused("invalid", "client_id must be 1 to 64 characters")
    # A replay (the same client id sent again) is found inside the transaction, in the statement
    # that also looks for an earlier label on the pair, before any rule that could refuse it now.
    if value not in Label.Value.values:
        raise LabelRefused("invalid", f"value must be one of {', '.join(Label.Value.values)}")
    if seconds is not None and seconds < 0:
        raise LabelRefused("invalid", "seconds must not be negative")
    if not isinstance(lease, str) or not lease or len(lease) > 64:
        raise LabelRefused("invalid", "lease_id must be the lease id the pair was handed out with")
    try:
        try:
            with transaction.atomic():
                return _submit_locked(rater, client_id, lease, value, seconds, comment, now)
        except prepared.StatementsReset:
            # A migration changed a table under this connection's prepared statements: they are
            # prepared anew, and the answer is taken as if nothing had happened.
            with transaction.atomic():
                return _submit_locked(rater, client_id, lease, value, seconds, comment, now)
    except IntegrityError:
        # The same client id raced in through another request; that one stands.
        replay = _label_by_client_id(rater, client_id)
        if replay:
            return SubmitResult(replay, False, training_feedback(replay))
        raise


# Submitting runs for every pair a rater judges, so its reads are plain SQL: the ORM's query
# building costs more than PostgreSQL's answer.

_LABEL_BY_CLIENT_ID_SQL = "SELECT * FROM {label} WHERE rater_id = %(rater)s AND client_id = %(client_id)s"

# The rater's lease and its pair, the pair locked (pair first, then lease: the queue's lock
# order), with whether the rater may still label in this pool.
# The pair is also named by its key (the one-row subquery): with the lease table's statistics
# taken while it was nearly empty, the planner merge-joined the lease with the pairs in id order,
# walking up to the lease's pair (100 ms for a late pair of a 500,000-pair pool, not 0.4).
_LEASED_PAIR_LOCKED_SQL = """
SELECT pp.*, s.id AS lease_pk, s.state AS lease_state, s.created_at AS lease_created_at,
       pl.broken_reports_limit AS pool_broken_reports_limit,
       v.start AS clip_start, v."end" AS clip_end, v.duration AS clip_duration,
       EXISTS (SELECT 1 FROM {membership} m WHERE m.pool_id = pp.pool_id AND m.rater_id = %(rater)s) AS rater_is_member,
       EXISTS (SELECT 1 FROM {profile} r WHERE r.user_id = %(rater)s AND r.paused) AS rater_paused,
       (SELECT m.training FROM {membership} m WHERE m.pool_id = pp.pool_id AND m.rater_id = %(rater)s) AS member_training,
       EXISTS (SELECT 1 FROM {pair} t WHERE t.pool_id = pp.pool_id AND t.role = %(training)s) AS pool_has_training,
       {hooked} AS pool_judging_hooked,
       EXISTS (SELECT 1 FROM <quality_rule> q WHERE q.pool_id = pp.pool_id AND q.enabled) AS pool_has_quality_rule
FROM {lease} s JOIN {pair} pp ON pp.id = s.pair_id JOIN {pool} pl ON pl.id = pp.pool_id
     JOIN {clip} v ON v.id = pp.clip_id
WHERE s.token = %(token)s AND s.rater_id = %(rater)s
  AND pp.id = (SELECT l.pair_id FROM {lease} l WHERE l.token = %(token)s AND l.rater_id = %(rater)s) {lock}
""".replace("<quality_rule>", QualityRule._meta.db_table)

# Under a judging strategy or stopping rule, the query's row is locked before the pair (the lock
# order of services/judging): the label may change the order and stop state of the query's pairs.
# The same statement reads what the judging hook needs (HOOK_COLUMNS_SQL), so the hook does not
# read the row again. Lease, pair and query row are each found by a key, in nested one-row
# subqueries: as a join, the planner walked the pairs of a 500,000-pair pool in id order up to the
# lease's (160 ms, not 0.1).
_QUERY_OF_LEASE_LOCKED_SQL = """
SELECT <hook_columns> FROM {query} q JOIN {pool} pl ON pl.id = q.pool_id
WHERE (q.pool_id, q.caption_id) = (
        SELECT pp.pool_id, pp.caption_id FROM {pair} pp
        WHERE pp.id = (SELECT s.pair_id FROM {lease} s WHERE s.token = %(token)s AND s.rater_id = %(rater)s)
          AND pp.role = 'pool')
  AND {hooked}
FOR UPDATE OF q
""".replace("<hook_columns>", HOOK_COLUMNS_SQL)

# The rater's label on the pair, or one with this client id (a replay, or one that raced in while
# this request waited for the pair's lock).
_EARLIER_LABELS_SQL = """
SELECT * FROM {label} WHERE rater_id = %(rater)s AND (pair_id = %(pair)s OR client_id = %(client_id)s)
"""


@functools.cache
def _sql(template: str) -> str:
    features = connection.features
    lock = ("FOR UPDATE OF pp" if features.has_select_for_update_of else "FOR UPDATE") if features.has_select_for_update else ""
    return template.format(label=Label._meta.db_table, lease=Lease._meta.db_table, pair=PooledPair._meta.db_table,
                           pool=Pool._meta.db_table, membership=PoolMembership._meta.db_table,
                           profile=RaterProfile._meta.db_table, clip=Clip._meta.db_table, lock=lock,
                           query=PoolQuery._meta.db_table, hooked=JUDGING_HOOKED_SQL)


def _label_by_client_id(rater, client_id: str) -> Label | None:
    return raw_first(Label, _sql(_LABEL_BY_CLIENT_ID_SQL), {"rater": rater.pk, "client_id": client_id})


# Ends the rater's live lease on the pair (if any) and says which it was, in one statement; the
# caller holds the pair's row lock, so the lock order pair -> lease is kept. The live lease may be
# a newer one than the answer names (the old one expired and the pair came back to the rater).
_COMPLETE_LEASE_SQL = """
UPDATE {lease} SET state = %(completed)s, ended_at = %(now)s
WHERE pair_id = %(pair)s AND rater_id = %(rater)s AND state = %(live)s
RETURNING id
"""


def _complete_lease(pair_id: int, rater, now) -> int | None:
    with connection.cursor() as cursor:
        prepared.execute(cursor, _sql(_COMPLETE_LEASE_SQL),
                         {"completed": Lease.State.COMPLETED, "now": connection.ops.adapt_datetimefield_value(now), "pair": pair_id,
                          "rater": rater.pk, "live": Lease.State.ACTIVE}, inline=("completed", "live"))
        row = cursor.fetchone()
    return row[0] if row else None


# On PostgreSQL, the two in one statement: the rater's live lease on the pair ended (the caller
# holds the pair's lock), and their earlier labels read, one row each (one row of nulls when there
# is none) with the ended lease's id on every row. One statement fewer for every judged pair; when
# the answer is then refused or is a replay, the transaction is rolled back, the lease with it.
_EARLIER_LABELS_AND_COMPLETE_LEASE_SQL = """
WITH done AS (""" + _COMPLETE_LEASE_SQL + """)
SELECT (SELECT id FROM done) AS completed_lease_id, l.*
FROM (SELECT 1) AS one LEFT JOIN {label} l
     ON l.rater_id = %(rater)s AND (l.pair_id = %(pair)s OR l.client_id = %(client_id)s)
"""


def _earlier_labels_and_complete_lease(pair_id: int, rater, client_id: str, now) -> tuple[list[Label], int | None]:
    with connection.cursor() as cursor:
        db = cursor.db
        prepared.execute(cursor, _sql(_EARLIER_LABELS_AND_COMPLETE_LEASE_SQL),
                         {"completed": Lease.State.COMPLETED, "now": connection.ops.adapt_datetimefield_value(now),
                          "pair": pair_id, "rater": rater.pk, "live": Lease.State.ACTIVE, "client_id": client_id},
                         inline=("completed", "live"))
        columns = tuple(col[0] for col in cursor.description)
        rows = cursor.fetchall()
    label_id = columns.index("id", 1)
    labels = instances_from(Label, db, columns[1:], [row[1:] for row in rows if row[label_id] is not None])
    return labels, rows[0][0]


def _submit_locked(rater, client_id, token, value, seconds, comment, now) -> SubmitResult:
    # The query row, locked, when the pool is hooked. SQLite has one writer at a time: the hook reads it.
    query = raw_first(PoolQuery, _sql(_QUERY_OF_LEASE_LOCKED_SQL), {"token": token, "rater": rater.pk}
                      ) if connection.features.has_select_for_update else None
    pair = raw_first(PooledPair, _sql(_LEASED_PAIR_LOCKED_SQL), {"rater": rater.pk, "token": token,
                                                                "training": PooledPair.Role.TRAINING}, inline=("training",))
    if pair is None:
        # The same answer for a lease that never existed and for another rater's lease.
        raise LabelRefused("not_found", "no such lease")
    lease_ended = connection.vendor == "postgresql"
    if lease_ended:
        earlier_labels, live_lease_id = _earlier_labels_and_complete_lease(pair.pk, rater, client_id, now)
    else:
        earlier_labels = raw_rows(Label, _sql(_EARLIER_LABELS_SQL), {"rater": rater.pk, "pair": pair.pk,
                                                                    "client_id": client_id})
    for earlier in earlier_labels:
        if earlier.client_id == client_id:
            # A replay returns the stored label whatever has changed since (a pause, a training
            # reset): the answer was taken, and the page must hear so, not that it was refused.
            # It changes nothing: the lease ended above is not (the feedback is read first).
            replay = SubmitResult(earlier, False, training_feedback(earlier))
            if lease_ended:
                transaction.set_rollback(True)
            return replay
        raise LabelRefused("conflict", "you have already labelled this pair")
    if not pair.rater_is_member:
        raise LabelRefused("forbidden", "you have no access to this pool")
    if pair.rater_paused:
        raise LabelRefused("paused", "an admin has paused your work; this answer was not stored")
    # A lease taken before an admin sent the rater back to training (or a late answer on one)
    # must not carry a pool or gold answer past the training gate.
    if pair.role != PooledPair.Role.TRAINING and pair.pool_has_training \
            and pair.member_training != PoolMembership.Training.PASSED:
        raise LabelRefused("training", "you have not passed this pool's training; this answer was not stored")
    if pair.lease_state == Lease.State.RELEASED:
        raise LabelRefused("conflict", "you gave this pair back; it is no longer yours to judge")
    if pair.lease_state == Lease.State.COMPLETED:
        raise LabelRefused("conflict", "this lease has already been used for an answer")

    if pair.role == PooledPair.Role.TRAINING and _earlier_training_unanswered(pair, rater):
        raise LabelRefused("training_order", "answer the training pairs in the order they come; an earlier one is "
                                             "still unanswered, and this answer was not stored")
    if value in Label.VOTES:
        _check_watched(pair, now)

    # None: the lease named ran out before the answer came (a late answer keeps the rules below).
    if not lease_ended:
        live_lease_id = _complete_lease(pair.pk, rater, now)
    label = Label(pair=pair, rater=rater, value=value, client_id=client_id, seconds=seconds, comment=comment[:5000],
                  lease_id=live_lease_id or pair.lease_pk, counted=False)
    if live_lease_id and pair.role == PooledPair.Role.POOL:
        pair.active_leases = max(0, pair.active_leases - 1)
        if pair.state == PooledPair.State.STOPPED:
            # Its query or pool stopped while the rater held it: a held lease is honoured, and a
            # started pair is finished like any other.
            pair.state = PooledPair.State.OPEN
    was_judged = pair.state in JUDGED_STATES

    if pair.role == PooledPair.Role.TRAINING:
        label.save()
        label.pair = pair
        _grade_training(pair.pool, rater)
        return SubmitResult(label, True, training_feedback(label))

    if pair.role == PooledPair.Role.GOLD:
        pass  # stored, never a vote; it takes the same statements as a pool answer below, so no timing tells it apart
    elif value in Label.VOTES:
        room = pair.state == PooledPair.State.OPEN and has_room(
            required=pair.required_labels, votes=pair.vote_count, leases=pair.active_leases)
        if room:
            label.counted = True
            pair.vote_count += 1
            label.sequence = pair.vote_count
        else:
            label.surplus_reason = ("arrived after its lease ended, when the pair no longer needed it"
                                    if live_lease_id is None else f"the pair was already {pair.get_state_display().lower()}")
    elif value == Label.Value.AMBIGUOUS:
        if pair.state == PooledPair.State.OPEN:
            pair.state = PooledPair.State.ADJUDICATION
    elif value == Label.Value.BROKEN:
        pair.broken_reports += 1
        if pair.state == PooledPair.State.OPEN and pair.broken_reports >= pair.pool_broken_reports_limit:
            pair.state = PooledPair.State.SET_ASIDE
    if label.counted:
        _resolve(pair, now, latest_vote=label.value)
    refresh_pair_flags(pair)
    newly_judged = pair.pool_judging_hooked and pair.state in JUDGED_STATES and not was_judged
    if newly_judged:
        pair.judged_at = now
    _label_insert_and_pair_save(label, pair, PAIR_FIELDS + ["judged_at"] if newly_judged else PAIR_FIELDS)
    if newly_judged:
        pair_judged(pool_id=pair.pool_id, caption_id=pair.caption_id, pair_id=pair.pk, now=now, judged_at_saved=True,
                    query=query)
    if pair.pool_has_quality_rule:  # pool and gold answers alike, so no statement tells gold apart
        quality_rule_after_answer(pool_id=pair.pool_id, rater=rater, is_gold=pair.role == PooledPair.Role.GOLD, now=now)
    label.pair = pair
    return SubmitResult(label, True, None)


# The answer and what it did to its pair, written in one statement on PostgreSQL (the pair is
# locked; its new counts and state are worked out before). The ORM's save() builds both
# statements anew on every answer, which cost more CPU than PostgreSQL spends running them.
_LABEL_AND_PAIR_SQL = """
WITH new_label AS (INSERT INTO {label} ({columns}) VALUES ({values}) RETURNING id)
UPDATE {pair} SET {assignments} WHERE id = %s RETURNING (SELECT id FROM new_label)
"""
_LABEL_FIELDS = [f for f in Label._meta.concrete_fields if not f.primary_key]


@functools.cache
def _label_and_pair_sql(pair_fields: tuple[str, ...]) -> str:
    quote = connection.ops.quote_name
    return _LABEL_AND_PAIR_SQL.format(
        label=Label._meta.db_table, pair=PooledPair._meta.db_table, columns=", ".join(quote(f.column) for f in _LABEL_FIELDS),
        values=", ".join(["%s"] * len(_LABEL_FIELDS)),
        assignments=", ".join(f"{quote(PooledPair._meta.get_field(name).column)} = %s" for name in pair_fields))


def _label_insert_and_pair_save(label: Label, pair: PooledPair, pair_fields: list[str]) -> None:
    """label.save() and pair.save(update_fields=pair_fields), as one statement where the database can."""
    if connection.vendor != "postgresql":
        label.save()
        pair.save(update_fields=pair_fields)
        return
    values = [f.get_db_prep_save(f.pre_save(label, True), connection) for f in _LABEL_FIELDS]
    values += [PooledPair._meta.get_field(name).get_db_prep_save(getattr(pair, name), connection) for name in pair_fields]
    with connection.cursor() as cursor:
        prepared.execute(cursor, _label_and_pair_sql(tuple(pair_fields)), [*values, pair.pk])
        label.pk = cursor.fetchone()[0]
    label._state.adding, label._state.db = False, connection.alias


# A training pair before this one (in the order the queue hands them out) that the rater has not
# answered. Only training answers run it, so the hot path of pool answers is unchanged.
_EARLIER_TRAINING_UNANSWERED_SQL = """
SELECT EXISTS (SELECT 1 FROM {pair} t
               WHERE t.pool_id = %(pool)s AND t.role = %(training)s
                 AND (t.queue_order < %(order)s OR (t.queue_order = %(order)s AND t.id < %(pair)s))
                 AND NOT EXISTS (SELECT 1 FROM {label} l WHERE l.pair_id = t.id AND l.rater_id = %(rater)s))
"""


def _earlier_training_unanswered(pair, rater) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_sql(_EARLIER_TRAINING_UNANSWERED_SQL), {"pool": pair.pool_id, "training": PooledPair.Role.TRAINING,
                                                               "order": pair.queue_order, "pair": pair.pk, "rater": rater.pk})
        return bool(cursor.fetchone()[0])


def _check_watched(pair, now) -> None:
    """A vote needs the clip seen: the page holds its answers until the clip has played the
    minimum, and the server refuses a vote that comes sooner after the lease was handed out (the
    clip cannot have played longer than its lease has existed), so a script cannot skip the clip.
    "Doesn't play" and "ambiguous" stay open: a clip that never loads must still be reported."""
    if pair.start is not None and pair.end is not None:
        minimum = min_watch_seconds(pair.start, pair.end, None)
    else:
        minimum = min_watch_seconds(pair.clip_start, pair.clip_end, pair.clip_duration)
    handed_out = pair.lease_created_at
    if isinstance(handed_out, str):  # SQLite gives a raw query's extra column as stored text
        handed_out = datetime.fromisoformat(handed_out)
    if timezone.is_naive(handed_out):  # ... or naive: Django stores UTC there
        handed_out = handed_out.replace(tzinfo=dt_timezone.utc)
    left = minimum - (now - handed_out).total_seconds()
    if left > 0:
        left = round(left, 2)
        raise LabelRefused("too_soon", f"the clip has not been watched long enough; send the answer again in {left:g} s",
                           seconds_left=left)


def _resolve(pair: PooledPair, now, *, latest_vote: str) -> None:
    """The pair's state after a new counted vote, by FIRE's rule (analysis/votes.py).
    `latest_vote` is the counted vote being stored now (not yet saved)."""
    if pair.vote_count < pair.required_labels:
        return
    # Most pairs need one vote: the one just cast; only multi-label pairs read the others back.
    votes = [latest_vote] if pair.vote_count == 1 else [
        *Label.objects.filter(pair=pair, counted=True).values_list("value", flat=True), latest_vote]
    outcome = resolve_votes(votes, pair.required_labels)
    pair.required_labels = outcome.required
    if outcome.state == "resolved":
        pair.state, pair.resolved_label, pair.resolved_at = PooledPair.State.RESOLVED, outcome.answer, now
    elif outcome.state == "disagreement":
        pair.state = PooledPair.State.DISAGREEMENT


def _grade_training(pool, rater) -> None:
    training = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.TRAINING)
    answers = dict(Label.objects.filter(rater=rater, pair__in=training).values_list("pair_id", "value"))
    known = dict(training.values_list("pk", "known_answer"))
    if len(answers) < len(known):
        return
    score = sum(answers[pk] == answer for pk, answer in known.items()) / len(known)
    passed = score >= pool.training_pass_mark
    PoolMembership.objects.filter(pool=pool, rater=rater).update(
        training=PoolMembership.Training.PASSED if passed else PoolMembership.Training.FAILED, training_score=score)


@transaction.atomic
def pair_adjudicate(*, pair_id: int, admin, label: str, note: str = "", now=None) -> PooledPair:
    """An admin's decision on an escalated (or disputed, or set-aside) pair."""
    if label not in PooledPair.Answer.values:
        raise LabelRefused("invalid", "label must be 'relevant' or 'not_relevant'")
    query_lock_for_pair(pair_id)
    pair = PooledPair.objects.select_for_update().select_related("pool").get(pk=pair_id, role=PooledPair.Role.POOL)
    pair.state, pair.resolved_label, pair.resolved_by_admin = PooledPair.State.RESOLVED, label, True
    pair.adjudication_note, pair.resolved_at = note, now or timezone.now()
    refresh_pair_flags(pair)
    pair.save()
    if pool_is_hooked(pair.pool):
        # A decision on a pair that was already judged (a disagreement) changes what its query
        # knows too: the order and stopping read the resolved labels again.
        pair_judged(pool_id=pair.pool_id, caption_id=pair.caption_id, pair_id=pair.pk, now=pair.resolved_at)
    return pair


def query_lock_for_pair(pair_id: int) -> None:
    """Takes the pair's query row before the pair (services/judging's lock order)."""
    found = PooledPair.objects.filter(pk=pair_id).values_list("pool_id", "caption_id").first()
    if found:
        query_lock(*found)


@transaction.atomic
def pair_requeue(*, pair_id: int) -> PooledPair:
    """Puts a set-aside or escalated pair back in the queue (e.g. after fixing its clip)."""
    pair = PooledPair.objects.select_for_update().get(pk=pair_id, role=PooledPair.Role.POOL)
    if pair.state == PooledPair.State.RESOLVED:
        raise LabelRefused("conflict", "the pair is already resolved")
    pair.state, pair.broken_reports = PooledPair.State.OPEN, 0
    refresh_pair_flags(pair)
    pair.save()
    return pair
