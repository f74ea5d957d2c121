"""Reads for label exports: the exported files, and the pool's rows as streams in a fixed order, so
an export can merge them one pair at a time and never hold a pool in memory."""
from __future__ import annotations

import json
from collections.abc import Iterator

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet

from annotation.models import Artefact, Caption, Clip, Label, PairProvenance, Pool, PooledPair, RaterProfile, Run
from annotation.models.judgment_sets import ImportedJudgment
from annotation.selectors.reports import FETCH

#: Artefact kinds of label exports (annotation/services/exports/labels.py), as opposed to other areas' files.
LABEL_EXPORT_KINDS = ("qrels", "fire_json", "labels_csv", "labels_jsonl")


def artefact_list(*, dataset_id: int | None = None, pool_id: int | None = None) -> QuerySet:
    """Exported label files, newest first."""
    files = Artefact.objects.filter(kind__in=LABEL_EXPORT_KINDS).select_related("dataset")
    if dataset_id:
        files = files.filter(dataset_id=dataset_id)
    if pool_id:
        files = files.filter(params__pool_id=pool_id)
    return files


def stream_rows(sql: str, params: list) -> Iterator[tuple]:
    """Rows of a query through a server-side cursor on PostgreSQL (chunked reads elsewhere)."""
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while True:
            rows = cursor.fetchmany(FETCH)
            if not rows:
                return
            yield from rows


def export_tables() -> dict[str, str]:
    """The db tables the raw export and release queries join, by short name."""
    return {"pair": PooledPair._meta.db_table, "label": Label._meta.db_table, "caption": Caption._meta.db_table,
            "clip": Clip._meta.db_table, "prov": PairProvenance._meta.db_table, "profile": RaterProfile._meta.db_table,
            "judged": ImportedJudgment._meta.db_table, "run": Run._meta.db_table}


def json_value(raw) -> list:
    """A JSON column as read by a raw cursor: decoded already on PostgreSQL, text on SQLite."""
    if raw is None:
        return []
    return json.loads(raw) if isinstance(raw, str) else raw


def _iso_time(column: str) -> str:
    """SQL for a timestamp column as the exports write it: on PostgreSQL with the connection in UTC,
    ISO 8601 text made by the server, exactly what datetime.isoformat() makes of the aware datetime
    the driver would return (microseconds only when not zero, then "+00:00"), so the export's
    process neither parses nor formats the time of each label; elsewhere the column itself (the
    export formats it: services/exports/labels.py, _when)."""
    if not (connection.vendor == "postgresql" and settings.USE_TZ and connection.timezone_name == "UTC"):
        return column
    utc = f"({column} AT TIME ZONE 'UTC')"
    return (f"to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || CASE to_char({utc}, 'US') WHEN '000000' THEN '' "
            f"ELSE '.' || to_char({utc}, 'US') END || '+00:00'")


def export_label_rows(*, pool: Pool) -> Iterator[tuple]:
    """One row per label of the pool's 'pool' pairs (and one with empty label fields for a pair
    without labels), ordered by pair then vote order:
    (pair id, caption external id, caption text, clip external id, video id, start, end,
    is original, state, resolved label, by admin, votes, label id, pseudonym, value, counted,
    sequence, surplus reason, seconds, created at (ISO text on PostgreSQL: _iso_time))."""
    t = export_tables()
    sql = (f"SELECT pp.id, c.external_id, c.text, cl.external_id, cl.video_id, pp.start, pp.\"end\", "
           f"pp.is_original_positive, pp.state, pp.resolved_label, pp.resolved_by_admin, pp.vote_count, "
           f"l.id, rp.pseudonym, l.value, l.counted, l.sequence, l.surplus_reason, l.seconds, {_iso_time('l.created_at')} "
           f"FROM {t['pair']} pp JOIN {t['caption']} c ON c.id = pp.caption_id JOIN {t['clip']} cl ON cl.id = pp.clip_id "
           f"LEFT JOIN {t['label']} l ON l.pair_id = pp.id LEFT JOIN {t['profile']} rp ON rp.user_id = l.rater_id "
           f"WHERE pp.pool_id = %s AND pp.role = 'pool' "
           f"ORDER BY pp.id, CASE WHEN l.sequence > 0 THEN l.sequence ELSE 99 END, l.created_at, l.id")
    return stream_rows(sql, [pool.pk])


def export_provenance_rows(*, pool: Pool) -> Iterator[tuple]:
    """(pair id, run name, rank) of the pool's 'pool' pairs, ordered by pair then rank."""
    t = export_tables()
    sql = (f"SELECT pv.pair_id, r.name, pv.rank FROM {t['prov']} pv JOIN {t['pair']} pp ON pp.id = pv.pair_id "
           f"JOIN {t['run']} r ON r.id = pv.run_id WHERE pp.pool_id = %s AND pp.role = 'pool' "
           f"ORDER BY pv.pair_id, pv.rank, r.name")
    return stream_rows(sql, [pool.pk])


_DECIDED = "pp.state IN ('resolved', 'disagreement')"
# Caption rows that share a text share one FIRE record; the smallest caption id of a text stands
# for all of them, so the streams below can be merged in integer order (SQL text collation and
# Python string order differ, so text itself cannot be the merge key).
_CANON = ("WITH canon AS (SELECT id, MIN(id) OVER (PARTITION BY text) AS canon_id "
          "FROM {caption} WHERE dataset_id = %s)")


def export_fire_pair_rows(*, pool: Pool) -> Iterator[tuple]:
    """Decided pool pairs (resolved or disagreement) ordered by (shared-text caption, clip, pair):
    (canon id, clip id, pair id, caption text, clip external id, state, resolved label, votes,
    by admin, imported annotator labels, imported annotator ids, imported models)."""
    t = export_tables()
    sql = (_CANON.format(**t) +
           f" SELECT canon.canon_id, pp.clip_id, pp.id, c.text, cl.external_id, pp.state, pp.resolved_label, "
           f"pp.vote_count, pp.resolved_by_admin, ij.annotator_labels, ij.annotator_ids, ij.models_proposing "
           f"FROM {t['pair']} pp JOIN canon ON canon.id = pp.caption_id JOIN {t['caption']} c ON c.id = pp.caption_id "
           f"JOIN {t['clip']} cl ON cl.id = pp.clip_id "
           f"LEFT JOIN {t['judged']} ij ON pp.vote_count = 0 AND ij.dataset_id = %s AND ij.caption_id = pp.caption_id "
           f"AND ij.clip_id = pp.clip_id "
           f"WHERE pp.pool_id = %s AND pp.role = 'pool' AND {_DECIDED} ORDER BY canon.canon_id, pp.clip_id, pp.id")
    return stream_rows(sql, [pool.dataset_id, pool.dataset_id, pool.pk])


def export_fire_vote_rows(*, pool: Pool) -> Iterator[tuple]:
    """Counted votes of decided pool pairs, pair by pair in export_fire_pair_rows' order (then by
    vote order): (pair id, value, pseudonym, label id)."""
    t = export_tables()
    sql = (_CANON.format(**t) +
           f" SELECT pp.id, l.value, rp.pseudonym, l.id "
           f"FROM {t['label']} l JOIN {t['pair']} pp ON pp.id = l.pair_id JOIN canon ON canon.id = pp.caption_id "
           f"LEFT JOIN {t['profile']} rp ON rp.user_id = l.rater_id "
           f"WHERE pp.pool_id = %s AND pp.role = 'pool' AND {_DECIDED} AND l.counted "
           f"ORDER BY canon.canon_id, pp.clip_id, pp.id, l.sequence, l.id")
    return stream_rows(sql, [pool.dataset_id, pool.pk])


def export_fire_provenance_rows(*, pool: Pool) -> Iterator[tuple]:
    """Runs that proposed decided pool pairs, pair by pair in export_fire_pair_rows' order (then by
    rank): (pair id, run name)."""
    t = export_tables()
    sql = (_CANON.format(**t) +
           f" SELECT pp.id, r.name "
           f"FROM {t['prov']} pv JOIN {t['pair']} pp ON pp.id = pv.pair_id JOIN canon ON canon.id = pp.caption_id "
           f"JOIN {t['run']} r ON r.id = pv.run_id "
           f"WHERE pp.pool_id = %s AND pp.role = 'pool' AND {_DECIDED} "
           f"ORDER BY canon.canon_id, pp.clip_id, pp.id, pv.rank, r.name")
    return stream_rows(sql, [pool.dataset_id, pool.pk])


def export_qrels_rows(*, pool: Pool, originals: bool) -> Iterator[tuple[str, str, int]]:
    """(caption external id, clip external id, relevance) of the corrected qrels, ordered by
    caption and clip id: every resolved pool pair (1 relevant, 0 not), and with `originals` every
    caption's original clip as 1, overriding a raters' 'not relevant' (FIRE's convention)."""
    t = export_tables()
    resolved = (f"SELECT pp.caption_id AS q, pp.clip_id AS d, c.external_id AS qx, cl.external_id AS dx, "
                f"CASE WHEN pp.resolved_label = 'relevant' THEN 1 ELSE 0 END AS rel "
                f"FROM {t['pair']} pp JOIN {t['caption']} c ON c.id = pp.caption_id JOIN {t['clip']} cl ON cl.id = pp.clip_id "
                f"WHERE pp.pool_id = %s AND pp.role = 'pool' AND pp.state = 'resolved'")
    params: list = [pool.pk]
    if originals:
        resolved += (f" UNION ALL SELECT c.id, c.original_clip_id, c.external_id, cl.external_id, 2 "
                     f"FROM {t['caption']} c JOIN {t['clip']} cl ON cl.id = c.original_clip_id WHERE c.dataset_id = %s")
        params.append(pool.dataset_id)
    # A pair listed twice (pooled and original) keeps the larger code; 2 marks an original.
    sql = (f"SELECT qx, dx, MAX(rel) FROM ({resolved}) AS qrel GROUP BY q, d, qx, dx ORDER BY q, d")
    for caption, clip, relevance in stream_rows(sql, params):
        yield caption, clip, min(int(relevance), 1)
