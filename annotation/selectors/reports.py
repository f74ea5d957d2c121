"""Reads for reports and exports: stored reports and files, and the pool data they are computed from.

Report inputs come out as NumPy columns (read in chunks through a server-side cursor on
PostgreSQL), because a pool of 550K pairs with 650K labels is too big to hold as model instances.
Export inputs come out as row streams in a fixed order, so the export can merge them one pair at a
time and never hold a pool in memory.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Case, IntegerField, QuerySet, Value, When

from annotation.models import (Artefact, Caption, Clip, Label, PairProvenance, Pool, PooledPair, Prediction,
                               RaterProfile, Report, Run)
from annotation.models.reports import ImportedJudgment, JudgmentSet
from annotation.selectors.judging_reports import JUDGING_COLUMN_LABELS, JUDGING_TABLES
from annotation.selectors.machine_judge_reports import MACHINE_JUDGE_COLUMN_LABELS, MACHINE_JUDGE_TABLES
from annotation.selectors.score_matrix_runs import score_matrix_top

FETCH = 20_000
#: Artefact kinds of label exports (services/exports.py), as opposed to other areas' files.
LABEL_EXPORT_KINDS = ("qrels", "fire_json", "labels_csv", "labels_jsonl")


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


def artefact_list(*, dataset_id: int | None = None, pool_id: int | None = None) -> QuerySet:
    """Exported label files, newest first."""
    files = Artefact.objects.filter(kind__in=LABEL_EXPORT_KINDS).select_related("dataset")
    if dataset_id:
        files = files.filter(dataset_id=dataset_id)
    if pool_id:
        files = files.filter(params__pool_id=pool_id)
    return files


def judgment_set_list(*, dataset_id: int | None = None) -> QuerySet:
    """Judgment sets, newest first; of one dataset when given."""
    sets = JudgmentSet.objects.all()
    return sets if dataset_id is None else sets.filter(dataset_id=dataset_id)


def judgment_sets_listed(*, limit: int = 500) -> list[JudgmentSet]:
    """The newest judgment sets of every dataset with their datasets, for the reports page."""
    return list(judgment_set_list().select_related("dataset")[:limit])


def scorable_runs() -> QuerySet:
    """Runs a judgment set can score from the reports page, by dataset and name: ranked clip runs
    stored one prediction a row (the evaluation job refuses moment runs and score matrices)."""
    return (Run.objects.filter(kind=Run.Kind.CLIP, scores_file="").select_related("dataset")
            .order_by("dataset__name", "name"))


# --------------------------------------------------------------------------------------------
# report inputs as columns


def _columns(queryset: QuerySet, fields: list[str], dtypes: list) -> list[np.ndarray]:
    """The fields of a queryset as NumPy arrays (None becomes NaN in floats).

    The compiled SQL runs on a raw cursor (server-side on PostgreSQL) and is converted a chunk at
    a time: building Django rows for 550K pairs would take most of a report's time.
    """
    sql, params = queryset.values_list(*fields).order_by().query.get_compiler(using=queryset.db).as_sql()
    parts: list[list[np.ndarray]] = [[] for _ in fields]
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH):
            for i, column in enumerate(zip(*rows)):
                parts[i].append(np.asarray(column, dtype=dtypes[i]))
    return [np.concatenate(p) if p else np.zeros(0, dtype=d) for p, d in zip(parts, dtypes)]


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


def pool_pairs(*, pool: Pool) -> PoolPairs:
    qs = (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
          .annotate(code=Case(When(state=PooledPair.State.RESOLVED, then=_answer_code("resolved_label")),
                              default=Value(-1), output_field=IntegerField())))
    cols = _columns(qs, ["id", "caption_id", "clip_id", "is_original_positive", "state", "code", "vote_count",
                         "resolved_by_admin"], [np.int64, np.int64, np.int64, bool, object, np.int64, np.int64, bool])
    order = np.argsort(cols[0], kind="stable")
    return PoolPairs(*(c[order] for c in cols))


@dataclass
class PoolLabels:
    """Verdict labels on a pool's pairs, in label-id order."""

    pair: np.ndarray
    rater: np.ndarray  # user ids
    value: np.ndarray  # 1 relevant, 0 not relevant
    sequence: np.ndarray
    seconds: np.ndarray


def pool_votes(*, pool: Pool) -> PoolLabels:
    """Counted votes (relevant / not relevant) on the pool's 'pool' pairs: the labels agreement is
    about. Surplus labels, 'ambiguous' escalations and 'broken clip' reports are not votes."""
    qs = (Label.objects.filter(pair__pool=pool, pair__role=PooledPair.Role.POOL, counted=True, value__in=Label.VOTES)
          .annotate(code=_answer_code("value")).order_by("id"))
    cols = _columns(qs, ["id", "pair_id", "rater_id", "code", "sequence", "seconds"],
                    [np.int64, np.int64, np.int64, np.int64, np.int64, float])
    order = np.argsort(cols[0], kind="stable")
    return PoolLabels(*(c[order] for c in cols[1:]))


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
# export inputs as ordered row streams


def _stream(sql: str, params: list) -> Iterator[tuple]:
    """Rows of a query through a server-side cursor on PostgreSQL (chunked reads elsewhere)."""
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while True:
            rows = cursor.fetchmany(FETCH)
            if not rows:
                return
            yield from rows


def _tables() -> dict[str, str]:
    return {"pair": PooledPair._meta.db_table, "label": Label._meta.db_table, "caption": Caption._meta.db_table,
            "clip": Clip._meta.db_table, "prov": PairProvenance._meta.db_table, "profile": RaterProfile._meta.db_table,
            "judged": ImportedJudgment._meta.db_table, "run": Run._meta.db_table}


def json_value(raw) -> list:
    """A JSON column as read by a raw cursor: decoded already on PostgreSQL, text on SQLite."""
    if raw is None:
        return []
    return json.loads(raw) if isinstance(raw, str) else raw


def export_label_rows(*, pool: Pool) -> Iterator[tuple]:
    """One row per label of the pool's 'pool' pairs (and one with empty label fields for a pair
    without labels), ordered by pair then vote order:
    (pair id, caption external id, caption text, clip external id, video id, start, end,
    is original, state, resolved label, by admin, votes, label id, pseudonym, value, counted,
    sequence, surplus reason, seconds, created at)."""
    t = _tables()
    sql = (f"SELECT pp.id, c.external_id, c.text, cl.external_id, cl.video_id, pp.start, pp.\"end\", "
           f"pp.is_original_positive, pp.state, pp.resolved_label, pp.resolved_by_admin, pp.vote_count, "
           f"l.id, rp.pseudonym, l.value, l.counted, l.sequence, l.surplus_reason, l.seconds, l.created_at "
           f"FROM {t['pair']} pp JOIN {t['caption']} c ON c.id = pp.caption_id JOIN {t['clip']} cl ON cl.id = pp.clip_id "
           f"LEFT JOIN {t['label']} l ON l.pair_id = pp.id LEFT JOIN {t['profile']} rp ON rp.user_id = l.rater_id "
           f"WHERE pp.pool_id = %s AND pp.role = 'pool' "
           f"ORDER BY pp.id, CASE WHEN l.sequence > 0 THEN l.sequence ELSE 99 END, l.created_at, l.id")
    return _stream(sql, [pool.pk])


def export_provenance_rows(*, pool: Pool) -> Iterator[tuple]:
    """(pair id, run name, rank) of the pool's 'pool' pairs, ordered by pair then rank."""
    t = _tables()
    sql = (f"SELECT pv.pair_id, r.name, pv.rank FROM {t['prov']} pv JOIN {t['pair']} pp ON pp.id = pv.pair_id "
           f"JOIN {t['run']} r ON r.id = pv.run_id WHERE pp.pool_id = %s AND pp.role = 'pool' "
           f"ORDER BY pv.pair_id, pv.rank, r.name")
    return _stream(sql, [pool.pk])


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
    t = _tables()
    sql = (_CANON.format(**t) +
           f" SELECT canon.canon_id, pp.clip_id, pp.id, c.text, cl.external_id, pp.state, pp.resolved_label, "
           f"pp.vote_count, pp.resolved_by_admin, ij.annotator_labels, ij.annotator_ids, ij.models_proposing "
           f"FROM {t['pair']} pp JOIN canon ON canon.id = pp.caption_id JOIN {t['caption']} c ON c.id = pp.caption_id "
           f"JOIN {t['clip']} cl ON cl.id = pp.clip_id "
           f"LEFT JOIN {t['judged']} ij ON pp.vote_count = 0 AND ij.dataset_id = %s AND ij.caption_id = pp.caption_id "
           f"AND ij.clip_id = pp.clip_id "
           f"WHERE pp.pool_id = %s AND pp.role = 'pool' AND {_DECIDED} ORDER BY canon.canon_id, pp.clip_id, pp.id")
    return _stream(sql, [pool.dataset_id, pool.dataset_id, pool.pk])


def export_fire_vote_rows(*, pool: Pool) -> Iterator[tuple]:
    """Counted votes of decided pool pairs in the same order: (canon, clip, pair, value, pseudonym, label id)."""
    t = _tables()
    sql = (_CANON.format(**t) +
           f" SELECT canon.canon_id, pp.clip_id, pp.id, l.value, rp.pseudonym, l.id "
           f"FROM {t['label']} l JOIN {t['pair']} pp ON pp.id = l.pair_id JOIN canon ON canon.id = pp.caption_id "
           f"LEFT JOIN {t['profile']} rp ON rp.user_id = l.rater_id "
           f"WHERE pp.pool_id = %s AND pp.role = 'pool' AND {_DECIDED} AND l.counted "
           f"ORDER BY canon.canon_id, pp.clip_id, pp.id, l.sequence, l.id")
    return _stream(sql, [pool.dataset_id, pool.pk])


def export_fire_provenance_rows(*, pool: Pool) -> Iterator[tuple]:
    """Runs that proposed decided pool pairs, same order: (canon, clip, pair, run name)."""
    t = _tables()
    sql = (_CANON.format(**t) +
           f" SELECT canon.canon_id, pp.clip_id, pp.id, r.name "
           f"FROM {t['prov']} pv JOIN {t['pair']} pp ON pp.id = pv.pair_id JOIN canon ON canon.id = pp.caption_id "
           f"JOIN {t['run']} r ON r.id = pv.run_id "
           f"WHERE pp.pool_id = %s AND pp.role = 'pool' AND {_DECIDED} "
           f"ORDER BY canon.canon_id, pp.clip_id, pp.id, pv.rank, r.name")
    return _stream(sql, [pool.dataset_id, pool.pk])


def export_qrels_rows(*, pool: Pool, originals: bool) -> Iterator[tuple[str, str, int]]:
    """(caption external id, clip external id, relevance) of the corrected qrels, ordered by
    caption and clip id: every resolved pool pair (1 relevant, 0 not), and with `originals` every
    caption's original clip as 1, overriding a raters' 'not relevant' (FIRE's convention)."""
    t = _tables()
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
    for caption, clip, relevance in _stream(sql, params):
        yield caption, clip, min(int(relevance), 1)



# --------------------------------------------------------------------------------------------
# a stored report as tables (the pages and the CSV downloads show the same ones)


# Column names stay snake_case in CSV downloads (scripts read them); pages show these words.
# Names not listed (a tool's measure names like P_5 or ndcg_cut_10, metric labels like R@1) are
# shown as they are: they are the names people look up.
COLUMN_LABELS = {
    "measure": "Measure", "value": "Value", "labels": "Labels", "multiply_labelled_pairs": "Multiply labelled pairs",
    "pairable_labels": "Pairable labels", "percent_agreement": "Percent agreement",
    "percent_agreement_low": "Percent agreement low", "percent_agreement_high": "Percent agreement high",
    "alpha": "Alpha", "alpha_low": "Alpha low", "alpha_high": "Alpha high",
    "bootstrap_replicates": "Bootstrap replicates", "confidence": "Confidence", "rater": "Rater",
    "compared": "Compared", "agreement_with_resolved": "Agreement with resolved", "gold_labels": "Gold labels",
    "gold_accuracy": "Gold accuracy", "median_seconds": "Median seconds", "ambiguous": "Ambiguous",
    "broken": "Broken", "pair_id": "Pair", "caption_id": "Caption id", "caption": "Caption", "clip_id": "Clip id",
    "votes": "Votes", "run": "Run", "captions_answered": "Captions answered", "metric": "Metric",
    "original": "Original", "corrected": "Corrected", "a": "A", "b": "B", "c": "C", "run_a": "Run A",
    "run_b": "Run B", "topk_overlap": "Top-k overlap", "rbo": "RBO", "positives_removed": "Positives removed",
    "length": "Length (words)", "captions": "Captions", "total_positives": "Total positives",
    "mean_positives": "Mean positives", "median_positives": "Median positives", "tau": "Tau",
    "p_value": "p-value", "runs": "Runs", "n_pairs": "Pairs", "n_original": "Original pairs",
    "n_sampled": "Sampled pairs", "precision": "Precision", "precision_low": "Precision low",
    "precision_high": "Precision high", "full_pool_precision": "Full pool precision",
    "false_negatives": "False negatives", "false_negatives_low": "False negatives low",
    "false_negatives_high": "False negatives high", "queries_scored": "Queries scored",
    "queries_unanswered": "Queries unanswered", "queries_without_judgments": "Queries without judgments",
    "rule": "Rule", "query": "Query", "level": "Level", "labels_used": "Labels used",
    "repeated_cells": "Repeated cells", "seed": "Seed",
}


COLUMN_LABELS = JUDGING_COLUMN_LABELS | MACHINE_JUDGE_COLUMN_LABELS | COLUMN_LABELS


@dataclass
class ReportTable:
    name: str
    title: str
    columns: list[str]
    rows: list[list]

    @property
    def headers(self) -> list[str]:
        """The columns in words, for pages (the CSV keeps `columns`)."""
        return [COLUMN_LABELS.get(column, column) for column in self.columns]


def _measure_rows(values: dict, skip: tuple[str, ...] = ("note",)) -> list[list]:
    return [[key.replace("_", " "), value] for key, value in values.items() if key not in skip]


def _agreement_tables(result: dict, rater_names: dict | None = None) -> list[ReportTable]:
    def rater(pseudonym):
        return rater_names.get(pseudonym, pseudonym) if rater_names is not None else pseudonym

    agreement_rows = []
    for variant in ("first_two", "all"):
        a = result["agreement"][variant]
        agreement_rows.append([variant, a["n_units_multi"], a["n_pairable_labels"], a["percent_agreement"],
                               *a["percent_agreement_ci"], a["alpha"], *a["alpha_ci"], a["n_boot"], a["confidence"]])
    rater_columns = ["rater", "labels", "compared", "agreement_with_resolved", "gold_labels", "gold_accuracy",
                     "median_seconds", "ambiguous", "broken"]
    return [
        ReportTable("summary", "Pairs and resolution", ["measure", "value"], _measure_rows(result["summary"])),
        ReportTable("agreement", "Agreement (nominal Krippendorff's alpha, bootstrap intervals)",
                    ["labels", "multiply_labelled_pairs", "pairable_labels", "percent_agreement", "percent_agreement_low",
                     "percent_agreement_high", "alpha", "alpha_low", "alpha_high", "bootstrap_replicates", "confidence"],
                    agreement_rows),
        ReportTable("raters", "Per rater", rater_columns,
                    [[rater(r["rater"]), *(r[c] for c in rater_columns[1:])] for r in result["raters"]]),
        ReportTable("disagreements", "Unresolved disagreements", ["pair_id", "caption_id", "caption", "clip_id", "votes"],
                    [[d["pair_id"], d["caption_id"], d["caption"], d["clip_id"],
                      "; ".join(f"{rater(v['rater'])}: {v['value']}" for v in d["votes"]) or "imported"]
                     for d in result["disagreements"]]),
    ]


def _metrics_tables(result: dict) -> list[ReportTable]:
    metrics, labels, runs = result["metrics"], result["metric_labels"], result["runs"]
    per_run = result["per_run"]
    numbers = [[run, m, cell["original"], cell["corrected"], cell["a"], cell["b"], cell["c"]]
               for run in runs for m, cell in per_run[run]["metrics"].items()]
    overlap = [[o["run_a"], o["run_b"], o["topk"], o["rbo"]] for o in result["overlap"]["pairs"]]
    loro = result["leave_one_run_out"]
    return [
        ReportTable("metrics", "Metrics: A (B + C) = corrected (original + gain), in percent",
                    ["run"] + [labels[m] for m in metrics] + ["captions_answered"],
                    [[run] + [per_run[run]["metrics"][m]["text"] for m in metrics] + [per_run[run]["captions_answered"]]
                     for run in runs]),
        ReportTable("metric_values", "Metric values (0-1) and A, B, C in percent",
                    ["run", "metric", "original", "corrected", "a", "b", "c"], numbers),
        ReportTable("overlap", f"Overlap between runs (top-{result['overlap']['k']} and RBO "
                               f"p={result['overlap']['rbo_p']})",
                    ["run_a", "run_b", "topk_overlap", "rbo"], overlap),
        ReportTable("leave_one_run_out", "Leave one run out: A (B + C) = all labels (labels of pairs other runs "
                                         "proposed + the run's own contributions)",
                    ["run", "positives_removed"] + [labels[m] for m in metrics],
                    [[run, loro[run]["positives_removed"]] + [loro[run]["metrics"][m]["text"] for m in metrics]
                     for run in runs]),
        ReportTable("positives_by_length", "Positives per caption by caption length (words)",
                    ["length", "captions", "total_positives", "mean_positives", "median_positives"],
                    [[b["length"], b["n_captions"], b["total_positives"], b["mean_positives"], b["median_positives"]]
                     for b in result["positives_by_length"]["by_length"]]),
        ReportTable("kendall_tau", "Leaderboard agreement, original vs corrected (Kendall's tau-b)",
                    ["metric", "tau", "p_value", "runs"],
                    [[labels[m], t["tau"], t["p_value"], t["n_runs"]] for m, t in result["kendall_tau"].items()]),
        ReportTable("labels", "Positives", ["measure", "value"], _measure_rows(result["labels"])),
    ]


def _sample_tables(result: dict) -> list[ReportTable]:
    columns = ["n_pairs", "n_original", "n_sampled", "precision", "precision_low", "precision_high",
               "full_pool_precision", "false_negatives", "false_negatives_low", "false_negatives_high"]
    fn = result["false_negatives"]
    sample_rows = [["design", result["design"]]]
    sample_rows += [[f"pool {k.replace('_', ' ')}", v] for k, v in result["population"].items()]
    sample_rows += [[f"sample {k.replace('_', ' ')}", v] for k, v in result["sample"].items()]
    sample_rows += [["false negatives in pool (estimate)", fn["total"]], ["false negatives low", fn["total_low"]],
                    ["false negatives high", fn["total_high"]]]
    if result["savings"]:
        sample_rows += [[k.replace("_", " "), v] for k, v in result["savings"].items()]
    return [
        ReportTable("runs", "Per run: precision of its pool pairs within the depth, and false negatives",
                    ["run"] + columns, [[run] + [result["per_run"][run][c] for c in columns] for run in result["runs"]]),
        ReportTable("sample", "Sample and labelling saved", ["measure", "value"], sample_rows),
    ]


def _natural(text: str) -> list:
    """Sort key: 'P_5' before 'P_10', 'q2' before 'q10', case aside."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part.casefold()) for part in re.split(r"(\d+)", text)]


def _in_order(keys_per_row) -> list[str]:
    """Every key of the rows, in natural order. A stored result's key order is not the tool's
    (PostgreSQL's jsonb reorders keys), so the same report reads the same everywhere this way."""
    return sorted({key for keys in keys_per_row for key in keys}, key=_natural)


def _evaluation_tables(result: dict) -> list[ReportTable]:
    judged, runs = result["judgment_set"], result["runs"]
    if not runs:
        return []
    # One evaluate call scores every run under the same conventions, so the first run's stand for all.
    conventions = runs[0]["conventions"]
    tool = f"{conventions['name']} conventions ({conventions['tool']})"
    measures = _in_order(r["measures"] for r in runs)
    tables = [
        ReportTable("runs", f"Scores against '{judged['name']}' ({judged['format']}), {tool}",
                    ["run", *measures, "queries_scored", "queries_unanswered", "queries_without_judgments"],
                    [[r["run"], *(r["measures"].get(m) for m in measures), r["queries"]["scored"],
                      len(r["queries"]["unanswered"]), len(r["queries"]["without_judgments"])] for r in runs]),
        ReportTable("conventions", f"Conventions: {tool}", ["rule", "value"],
                    [[key.replace("_", " "), "none" if value is None else value]
                     for key, value in conventions.items()
                     # rules is the whole rule text of tools the other fields do not describe
                     if key not in ("name", "tool") and not (key == "rules" and value is None)]),
    ]
    with_fire = [r for r in runs if r.get("fire")]
    if with_fire:
        fire_measures = _in_order(r["fire"] for r in with_fire)
        tables += [
            ReportTable("fire", f"FIRE layout: A (B + C) = all the set's positives (the original positives only + "
                                f"gain), in percent, {tool}",
                        ["run", *fire_measures],
                        [[r["run"], *(r["fire"].get(m, {}).get("text") for m in fire_measures)] for r in with_fire]),
            ReportTable("fire_values", "FIRE A, B and C in percent (unrounded)", ["run", "measure", "a", "b", "c"],
                        [[r["run"], m, r["fire"][m]["A"], r["fire"][m]["B"], r["fire"][m]["C"]] for r in with_fire
                         for m in fire_measures if m in r["fire"]]),
        ]
    per_query = _in_order(values for r in runs for values in r["per_query"].values())
    tables.append(ReportTable("per_query", f"Per query, {tool}", ["run", "query", *per_query],
                              [[r["run"], query, *(r["per_query"][query].get(m) for m in per_query)]
                               for r in runs for query in sorted(r["per_query"], key=_natural)]))
    return tables


def _with_interval(value, interval) -> str:
    """`0.200 [-0.500, 1.000]`; a dash where the figure is undefined (one label per unit, say)."""
    def text(v):
        return "–" if v is None else f"{v:.3f}"
    low, high = interval if interval else (None, None)
    return f"{text(value)} [{text(low)}, {text(high)}]"


def _judgment_set_agreement_tables(result: dict) -> list[ReportTable]:
    confidence = f"{result['confidence']:.0%}"
    rule = f"{result['repeats']} (repeats ordered by {result['repeats_ordered_by']})"
    scale = result["scale"]
    # An interval scale may have hundreds of grid points: its ends and size say enough.
    shown = ", ".join(map(str, scale)) if len(scale) <= 12 else f"{scale[0]} … {scale[-1]} ({len(scale)} points)"
    summary = [
        ["file", result["file"]],
        ["values", f"{result['values']}: {shown}"],
        ["labels", result["labels"]],
        ["labels used", result["labels_used"]],
        ["units", result["units"]],
        ["units labelled more than once", result["units_multiply_labelled"]],
        ["raters", result["raters"]],
        ["repeated cells (one rater, one unit, several labels)", result["repeated_cells"]],
        ["repeated cells with identical labels", result["repeated_cells_identical"]],
        ["labels set aside by the repeat rule", result["labels_set_aside"]],
        ["repeat rule", rule],
    ]
    if result.get("binarize_at") is not None:
        summary.append(["binarized", f"value >= {result['binarize_at']:g} is 1, else 0"])
    summary += [
        [f"Krippendorff's alpha ({result['level']}) [{confidence} interval]",
         _with_interval(result["alpha"], result["alpha_ci"])],
        [f"percent agreement [{confidence} interval]",
         _with_interval(result["percent_agreement"], result["percent_agreement_ci"])],
    ]
    pa_ci, alpha_ci = result["percent_agreement_ci"] or [None, None], result["alpha_ci"] or [None, None]
    rater_columns = ["rater", "labels", "labels_used", "repeated_cells", "compared", "agreement_with_resolved"]
    return [
        ReportTable("summary", f"Labels, repeats and agreement of {result['file']}", ["measure", "value"], summary),
        ReportTable("agreement", f"Agreement ({result['level']} Krippendorff's alpha, unit bootstrap, {confidence} "
                                 f"intervals)",
                    ["level", "pairable_labels", "percent_agreement", "percent_agreement_low", "percent_agreement_high",
                     "alpha", "alpha_low", "alpha_high", "bootstrap_replicates", "confidence", "seed"],
                    [[result["level"], result["pairable_labels"], result["percent_agreement"], *pa_ci,
                      result["alpha"], *alpha_ci, result["n_boot"], result["confidence"], result["seed"]]]),
        ReportTable("raters", "Per rater: labels given and used, repeated cells, agreement with the majority label "
                              "of units labelled more than once",
                    rater_columns, [[r[c] for c in rater_columns] for r in result["per_rater"]]),
    ]


_TABLES = {"agreement": _agreement_tables, "metrics": _metrics_tables, "sample_estimate": _sample_tables,
           "evaluation": _evaluation_tables, "judgment_set_agreement": _judgment_set_agreement_tables,
           **JUDGING_TABLES, **MACHINE_JUDGE_TABLES}


def report_tables(*, report: Report, rater_names: dict | None = None) -> list[ReportTable]:
    """The report's tables in the papers' layout; empty for kinds this area does not lay out.
    rater_names (pseudonym -> text, from report_rater_names) replaces the platform's rater
    pseudonyms on pages; CSV downloads keep the bare pseudonyms."""
    builder = _TABLES.get(report.kind)
    if not builder or not report.result:
        return []
    return builder(report.result, rater_names) if builder is _agreement_tables else builder(report.result)


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
