"""Making a release: the resolved labels of one or more pools (and imported judgment sets) over one
dataset, frozen into a numbered, immutable archive (docs: README "Releases").

Versions are numbered per name under a lock: on PostgreSQL an advisory lock on the name, held from
before the transaction that writes the release starts until it has committed, so the second of two concurrent creates
reads the first one's row and takes the next number (the unique (name, version) constraint is the
last guard). The archive is written inside one REPEATABLE READ snapshot, so its files agree with
each other while raters keep labelling; nothing is held in memory but one pair at a time (the
rater pseudonym map and per-pool agreement figures aside).

Beside the archive the release keeps its resolved pairs (formats/release_pairs.py), which the next
version merges against to say what changed (changes.json, `release diff`).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import groupby

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count
from django.utils import timezone

from annotation.analysis.release_changes import CHANGE_KINDS, ReleasePair
from annotation.formats.csv_safe import safe_csv_writer
from annotation.formats.fire_json import FireJsonWriter
from annotation.formats.release_documents import (RELEASE_FORMAT, citation_cff, croissant, datasheet,
                                                  release_manifest, resolved_share_sentence, sha256sums)
from annotation.formats.release_moments import MOMENT_WRITERS
from annotation.formats.release_pairs import write_release_pair
from annotation.provenance import json_ready
from annotation.models import (Caption, Label, MomentPoolDesign, Pool, PooledPair, PoolRun, RaterProfile, Release, Run,
                               Submission)
from annotation.models.releases import RELEASE_NAME_PATTERN
from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet
from annotation.selectors.pools import PAIR_COUNT_WORDS, pool_pair_counts
from annotation.selectors.releases import (release_pair_rows, release_rater_pseudonyms, release_sample_eval_rows,
                                           release_sampled_pools)
from annotation.selectors.reports import pool_raters_without_profile, pool_runs
from annotation.services.accounts.raters import rater_profile
from annotation.services.exports.labels import (EXPORTS, LABEL_COLUMNS, export_params_clean, fire_records_write,
                                                fire_resolution_note, label_csv_write)
from annotation.services.releases.archive import ReleaseArchive
from annotation.services.releases.diff import change_listing, new_version_changes
from annotation.services.releases.pool_bias import (MOMENT_POOL, NO_POOL, NO_RUNS, SAMPLED_POOL, ReleasePoolBias,
                                                    no_leaderboard_reason)
from annotation.analysis.leaderboard import leaderboard_csv_rows, leaderboard_svg
from annotation.services.reports.kind import ReportError, kind_params_clean
from annotation.services.reports.kinds import agreement as agreement_kind
from annotation.services.reports.kinds import corrected_leaderboard as leaderboard_kind
from annotation.services.reports.kinds.corrected_leaderboard import VerdictRows
from annotation.services.reports.kinds.moment_metrics import moment_pool_inputs
from annotation.storage import stored_file_delete, stored_file_write

AGGREGATION = "majority"
AGGREGATION_NOTE = ("Strict majority of the counted votes of each pair; a pair an admin decided keeps the admin's "
                    "label; a pair decided by an imported verdict keeps it. Where sources overlap, the first pool "
                    "named wins, then the judgment sets in the order named; a caption's original clip is always "
                    "relevant.")
_LOCK_CLASS = 0x52454C  # "REL": the advisory lock space of release names


class ReleaseError(ValueError):
    """A release that cannot be made; the message says why."""


def release_name_clean(name: str) -> str:
    name = (name or "").strip()
    if not re.match(RELEASE_NAME_PATTERN, name) or len(name) > 80:
        raise ReleaseError(f"release name {name!r} must be a slug: lower-case letters and digits joined by "
                           f"single hyphens (e.g. msrvtt-fire), at most 80 characters")
    return name


def release_sources_check(*, pools: Sequence[Pool], judgment_sets: Sequence[JudgmentSet]) -> int:
    """The one dataset every source is over (its id); ReleaseError otherwise."""
    if not pools and not judgment_sets:
        raise ReleaseError("a release needs at least one pool or judgment set")
    datasets = {p.dataset_id: p.dataset.name for p in pools} | {s.dataset_id: s.dataset.name for s in judgment_sets}
    if len(datasets) > 1:
        named = ", ".join([f"pool '{p.name}' ({p.dataset.name})" for p in pools]
                          + [f"judgment set '{s.name}' ({s.dataset.name})" for s in judgment_sets])
        raise ReleaseError(f"all sources of a release must be over one dataset; got {named}")
    if len({p.pk for p in pools}) < len(pools) or len({s.pk for s in judgment_sets}) < len(judgment_sets):
        raise ReleaseError("a source is named twice")
    return next(iter(datasets))


def release_unresolved_check(*, pools: Sequence[Pool], allow_unresolved: bool) -> dict[int, dict[str, int]]:
    """Each pool's pair counts (pool id -> pool_pair_counts). A pool with unresolved pairs is
    refused (ReleaseError naming the pool, its counts and the option) unless the admin allowed
    them: its unresolved pairs are left out of qrels.txt and scored as not relevant, which a
    release must say rather than pass off a partly judged pool as judged (issue 35)."""
    counts = {pool.pk: pool_pair_counts(pools=pool) for pool in pools}
    short = [pool for pool in pools if counts[pool.pk]["unresolved"]]
    if short and not allow_unresolved:
        named = "; ".join(f"pool '{pool.name}': {resolved_share_sentence(counts[pool.pk])}" for pool in short)
        raise ReleaseError(f"{named}. Judge them first, or allow unresolved pairs (allow_unresolved: true over the "
                           f"API, --allow-unresolved on the command line, the checkbox on the release form)")
    return counts


@contextmanager
def release_name_lock(name: str) -> Iterator[None]:
    if connection.vendor != "postgresql":
        yield  # SQLite: one writer at a time already
        return
    if connection.in_atomic_block:
        # Inside a caller's transaction (a job runs its work in one): held until that commits, so
        # the next creator reads this version's row. Statements read committed data, so the
        # previous version committed while waiting is seen too.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [_LOCK_CLASS, name])
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [_LOCK_CLASS, name])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [_LOCK_CLASS, name])


def _resolved_pairs(pools, judgment_sets, dataset_id, how_of_pool=None) -> Iterator[ReleasePair]:
    """One pair per (caption, clip): the first verdict in precedence order (selectors/releases).
    `how_of_pool`: the pools whose people's verdicts are named by why they were judged (an accepted
    submission's pool: "submission MODEL", which changes.json and `release diff` give as the reason)."""
    rows = release_pair_rows(pools=pools, judgment_sets=judgment_sets, dataset_id=dataset_id, how_of_pool=how_of_pool)
    for _, group in groupby(rows, key=lambda r: (r[0], r[1])):
        q, d, qx, dx, rel, how, votes = next(group)
        yield ReleasePair(q, d, qx, dx, int(rel), how, int(votes))


def _write_qrels_and_pairs(archive: ReleaseArchive, pairs_name: str, pools, judgment_sets, dataset_id,
                           step, how_of_pool=None) -> dict:
    counts = {"qrels_pairs": 0, "relevant": 0, "not_relevant": 0, "queries": 0}
    last_query = None
    with stored_file_write(EXPORTS, pairs_name) as raw, archive.text("qrels.txt") as qrels:
        pairs = _HashlessText(raw)
        for pair in _resolved_pairs(pools, judgment_sets, dataset_id, how_of_pool):
            if any(ch.isspace() for ch in pair.caption_id + pair.clip_id) or not pair.caption_id or not pair.clip_id:
                raise ReleaseError(f"caption {pair.caption_id!r} / clip {pair.clip_id!r}: an id that is empty or "
                                   f"contains whitespace cannot be written to qrels.txt")
            qrels.write(f"{pair.caption_id} 0 {pair.clip_id} {pair.relevance}\n")
            write_release_pair(pairs, pair)
            counts["qrels_pairs"] += 1
            counts["relevant" if pair.relevance else "not_relevant"] += 1
            if pair.caption != last_query:
                counts["queries"] += 1
                last_query = pair.caption
            if counts["qrels_pairs"] % 50_000 == 0:
                step(f"qrels.txt: {counts['qrels_pairs']} pairs")
        pairs.flush()
    return counts


class _HashlessText:
    """A buffered UTF-8 text sink over a binary writer."""

    def __init__(self, raw) -> None:
        self.raw, self.parts, self.pending = raw, [], 0

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.pending += len(text)
        if self.pending >= 1 << 20:
            self.flush()

    def flush(self) -> None:
        self.raw.write("".join(self.parts).encode("utf-8"))
        self.parts, self.pending = [], 0


def _write_changes(archive: ReleaseArchive, previous: Release | None, pairs_name: str, slug: str) -> dict:
    changes = new_version_changes(previous_pairs=previous.pairs_file if previous else None, pairs=pairs_name)
    with change_listing(changes) as (counts, listed), archive.text("changes.json") as out:
        out.write(json.dumps({"from": previous.slug if previous else None, "to": slug, "counts": counts})[:-1])
        pending = next(listed, None)  # (kind, change), kind by kind in CHANGE_KINDS' order
        for kind in CHANGE_KINDS:
            out.write(f', "{kind}": [')
            first = True
            while pending is not None and pending[0] == kind:
                out.write(("\n    " if first else ",\n    ") + json.dumps(pending[1], ensure_ascii=False))
                first = False
                pending = next(listed, None)
            out.write("\n  ]" if counts[kind] else "]")
        out.write("}\n")
    return counts


def _rater_names(pools) -> dict[int, str]:
    return {pseudonym: f"r{number:03d}" for number, pseudonym in
            enumerate(release_rater_pseudonyms(pools=pools), start=1)}


def _write_fire(archive: ReleaseArchive, pools, dataset_name: str, licence: str, names: dict, step) -> dict:
    metadata = {"datasets": [dataset_name], "license": licence, "creator": "Rejudge",
                "created_ds": timezone.localdate().isoformat(), "pools": [p.name for p in pools],
                "aggregation": AGGREGATION, "resolution": fire_resolution_note(AGGREGATION)}
    counts = {"annotations": 0, "disagreements": 0}
    with archive.text("fire.json") as out, FireJsonWriter(out, metadata=metadata) as writer:
        for pool in pools:
            params = export_params_clean(fmt="fire_json", params={"dataset_tag": dataset_name, "license": licence},
                                         pool=pool)
            fire_records_write(writer, pool, params, lambda done: None, rater_name=names.get)
        counts = dict(writer.counts)
    step("fire.json written")
    return counts


def _write_labels(archive: ReleaseArchive, pools, names: dict, step) -> int:
    rows = 0

    def pairs_done(pool_name: str) -> Callable[[int], None]:
        def done_so_far(done: int) -> None:
            if done % 50_000 == 0:
                step(f"labels.csv: {done} pairs of {pool_name}")
        return done_so_far

    with archive.text("labels.csv") as out:
        writer = safe_csv_writer(out)
        writer.writeheader(LABEL_COLUMNS)
        for pool in pools:
            params = export_params_clean(fmt="csv", params={}, pool=pool)
            rows += label_csv_write(writer, pool, params, pairs_done(pool.name), rater_name=names.get)
    step("labels.csv written")
    return rows


def _agreement(pools, names: dict, step) -> tuple[dict, dict]:
    """agreement.json's content (the agreement report of each pool, raters renamed) and the summary
    figures the datasheet quotes."""
    whole, summary = {}, {}
    for pool in pools:
        params = kind_params_clean(kind=agreement_kind.KIND, params={}, pool=pool)
        result = agreement_kind.agreement_report_compute(pool=pool, params=params)
        for row in result.get("raters", []):
            row["rater"] = names.get(row["rater"])
        for listed in result.get("disagreements", []):
            for vote in listed.get("votes", []):
                vote["rater"] = names.get(vote.get("rater"))
        whole[pool.name] = json_ready({"params": params, **result})
        first_two = result["agreement"]["first_two"]
        summary[pool.name] = {"alpha": first_two.get("alpha"), "percent_agreement": first_two.get("percent_agreement"),
                              "multiply_labelled_pairs": result["summary"]["multiply_labelled_pairs"]}
        step(f"agreement of {pool.name}")
    return whole, summary


def _release_verdict_rows(pools, judgment_sets, dataset_id) -> VerdictRows:
    """qrels.txt's verdicts as `(caption id, clip id, 0/1)` by caption (the same precedence:
    _resolved_pairs), read again each time it is called: the leaderboard reads it a block of
    captions at a time (corrected_leaderboard.qrels_blocks), never whole."""
    return lambda: ((pair.caption, pair.clip, pair.relevance)
                    for pair in _resolved_pairs(pools, judgment_sets, dataset_id))


def _pool_bias_beside(pool, pools, judgment_sets, dataset_id, params, by_design: bool,
                      counts) -> ReleasePoolBias | None:
    """The pool bias of the leaderboard's runs (services/releases/pool_bias.py), computed beside
    the leaderboard from its blocks; None, with the reason in the counts, where no run can be left
    out (a pool scored by its own design)."""
    if by_design:
        moment = MomentPoolDesign.objects.filter(pool=pool).exists()
        counts["pool_bias_left_out"] = MOMENT_POOL if moment else SAMPLED_POOL
        return None
    others = pools[1:] or judgment_sets
    elsewhere = _release_verdict_rows(pools[1:], judgment_sets, dataset_id) if others else None
    return ReleasePoolBias(pool=pool, ks=params["ks"], elsewhere_rows=elsewhere)


def release_submission_pools(*, name: str, pools: Sequence[Pool]) -> list[Submission]:
    """The accepted submissions to earlier versions of release `name` whose pools (their holes,
    judged) are not among `pools`: the next version publishes them too, after the sources named
    (so the release's own verdicts keep precedence), and scores their runs on its leaderboard."""
    named = {pool.pk for pool in pools}
    return [s for s in Submission.objects.filter(release__name=name, status=Submission.Status.ACCEPTED,
                                                 pool__isnull=False)
            .select_related("pool__dataset", "release", "submitted_by", "accepted_by").order_by("accepted_at", "pk")
            if s.pool_id not in named]


def _people_names(users, rater_names: dict[int, str]) -> dict[int, str]:
    """user id -> the name the release gives them: a rater of the release keeps their rNNN; anyone
    else named by a leaderboard row (who uploaded a run, who submitted or accepted one) is p01,
    p02... in the order first named. Never a username."""
    users = [u for u in users if u is not None]
    pseudonyms = dict(RaterProfile.objects.filter(user_id__in=[u.pk for u in users]).values_list("user_id", "pseudonym"))
    names: dict[int, str] = {}
    for user in users:
        if user.pk in names:
            continue
        rater = rater_names.get(pseudonyms.get(user.pk))
        names[user.pk] = rater or f"p{sum(1 for n in names.values() if n.startswith('p')) + 1:02d}"
    return names


def _run_provenance(pool, runs, submissions: list[Submission], rater_names: dict[int, str]) -> dict[int, dict]:
    """run id -> where the run on the leaderboard came from: pooled (when it was added to the
    pool, by whom) or submitted (the submission, when, by whom, who accepted it and when), people in
    the release's pseudonyms."""
    added = dict(PoolRun.objects.filter(pool=pool).values_list("run_id", "added_at"))
    by_run = {s.pool.runs.values_list("pk", flat=True).first(): s for s in submissions}
    uploaders = dict((r.pk, r.uploader) for r in Run.objects.filter(pk__in=[r.pk for r in runs]).select_related("uploader"))
    people = _people_names([uploaders.get(r.pk) for r in runs if r.pk not in by_run]
                           + [p for s in submissions for p in (s.submitted_by, s.accepted_by)], rater_names)

    def who(user) -> str | None:
        return people.get(user.pk) if user is not None else None

    out = {}
    for run in runs:
        submission = by_run.get(run.pk)
        if submission is None:
            out[run.pk] = {"kind": "pooled run", "at": _iso(added.get(run.pk)), "by": who(uploaders.get(run.pk))}
        else:
            holes = submission.holes or {}
            out[run.pk] = {"kind": "submitted run", "at": _iso(submission.created_at),
                           "by": who(submission.submitted_by) or "anonymous", "submission": submission.pk,
                           "model": submission.name, "submitted_to": submission.release.slug,
                           "accepted_at": _iso(submission.accepted_at), "accepted_by": who(submission.accepted_by),
                           "holes": len(holes.get("pairs") or []), "holes_k": holes.get("k"),
                           "pool": submission.pool.name}
    return out


def _iso(moment) -> str | None:
    return moment.isoformat() if moment is not None else None


#: The provenance columns leaderboard.csv adds to each row, in words for the pages.
PROVENANCE_COLUMNS = {"provenance": "Where the run came from: pooled run or submitted run",
                      "provenance_at": "When it was pooled or submitted",
                      "provenance_by": "By whom, in the release's pseudonyms",
                      "submission": "The submission (id) a submitted run came from"}


def _leaderboard_csv_rows(result: dict) -> list[list]:
    """leaderboard.csv: the leaderboard's rows (analysis/leaderboard.py) with each run's provenance."""
    header, *rows = leaderboard_csv_rows(result)
    at = header.index("run_id")
    provenance = {r.get("run_id"): r.get("provenance") or {} for r in result["runs"]}
    return [header + list(PROVENANCE_COLUMNS)] + [
        row + [p.get("kind"), p.get("at"), p.get("by"), p.get("submission")]
        for row in rows for p in [provenance.get(row[at], {})]]


def _write_leaderboard(archive: ReleaseArchive, pools, judgment_sets, dataset_id, step, counts,
                       submissions: Sequence[Submission] = (), rater_names: dict | None = None) -> dict | None:
    """The corrected leaderboard of the first pool's runs (the report kind corrected_leaderboard,
    with its declared defaults) as leaderboard.json, .csv and .svg, with the runs' pool bias
    (`pool_bias`); None when there is no pool or the kind refuses it (the reason goes to the
    counts). With more than one source it scores against the release's whole qrels.txt, as
    `evaluate` on the archive's files does (a sampled pool's corrected values are its own design's
    estimates, and a moment pool's its own spans: the result's `scored_against` says which)."""
    if not pools:
        counts["pool_bias_left_out"] = NO_POOL
        return None
    pool = pools[0]
    params = kind_params_clean(kind=leaderboard_kind.KIND, params={}, pool=pool)
    if leaderboard_kind.KIND.check:
        leaderboard_kind.KIND.check(pool=pool, params=params)
    by_design = leaderboard_kind.pool_scored_by_design(pool)
    whole = (len(pools) > 1 or judgment_sets) and not by_design
    qrels_rows = _release_verdict_rows(pools, judgment_sets, dataset_id) if whole else None
    runs = pool_runs(pool=pool)
    submissions = list(submissions)
    if submissions and by_design:
        # Its corrected values are its own design's (estimates or spans), which a submitted run is not part of.
        counts["submissions_left_out"] = (f"pool '{pool.name}' is scored by its own design (a sampled or moment "
                                          f"pool): the accepted submissions' runs are published with their pools' "
                                          f"verdicts but not ranked on this leaderboard")
        submissions = []
    runs += [run for s in submissions for run in s.pool.runs.order_by("name") if run.pk not in {r.pk for r in runs}]
    bias = _pool_bias_beside(pool, pools, judgment_sets, dataset_id, params, by_design, counts)
    result = leaderboard_kind.KIND.compute(pool=pool, params=params, progress=None, corrected_rows=qrels_rows,
                                           runs=runs, each_block=bias.add if bias else None)
    if bias and not result.get("runs"):
        counts["pool_bias_left_out"], bias = NO_RUNS, None
    provenance = _run_provenance(pool, runs, submissions, rater_names or {})
    for row in result.get("runs", []):
        row["provenance"] = provenance.get(row.get("run_id"))
    scored_against = ("qrels.txt: every source of the release" if whole else
                      f"the verdicts of pool '{pool.name}' and the original positives"
                      + (" (qrels.txt also holds the release's other sources)" if len(pools) > 1 or judgment_sets
                         else " (qrels.txt)"))
    table = bias.table(depth=result.get("depth")) if bias else None
    result = json_ready({"pool": pool.name, "params": params, "scored_against": scored_against, **result,
                         **({"pool_bias": table} if table else {})})
    archive.write_text("leaderboard.json", json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    with archive.text("leaderboard.csv") as out:
        writer = safe_csv_writer(out)
        header, *rows = _leaderboard_csv_rows(result)
        writer.writeheader(header)
        for row in rows:
            writer.writerow(row)
    archive.write_text("leaderboard.svg", leaderboard_svg(result) + "\n")
    step(f"leaderboard of {pool.name}")
    return result


def _write_sample_eval(archive: ReleaseArchive, pools, step) -> int:
    """TRECVID sample_eval qrels (`topic 0 shot stratum rel`) of each sampled pool: every pooled
    document with its stratum, -1 where not judged, so sample_eval.pl / infAP read the design."""
    sampled = release_sampled_pools(pools=pools)
    for pool in sampled:
        path = "sample_eval_qrels.txt" if len(sampled) == 1 else f"sample_eval_qrels-pool{pool.pk}.txt"
        with archive.text(path) as out:
            for topic, shot, stratum, rel in release_sample_eval_rows(pool=pool):
                out.write(f"{topic} 0 {shot} {stratum} {rel}\n")
        step(f"sample_eval qrels of {pool.name}")
    return len(sampled)


def _write_moments(archive: ReleaseArchive, pools, step) -> tuple[dict, dict]:
    """The moment benchmarks' ground truth of each moment pool (formats/release_moments.py), from
    the positives the corrected leaderboard scores against; (lines per file, reason per file left out)."""
    moment_pools = [p for p in pools if MomentPoolDesign.objects.filter(pool=p).exists()]
    written, left_out = {}, {}
    for pool in moment_pools:
        positives = moment_pool_inputs(pool, []).corrected  # no runs: the positives only
        captions = [(external_id, text, positives.get(str(pk)) or ())
                    for pk, external_id, text in Caption.objects.filter(dataset_id=pool.dataset_id)
                    .order_by("pk").values_list("pk", "external_id", "text")]
        for name, writer in MOMENT_WRITERS.items():
            path = name if len(moment_pools) == 1 else name.replace(".", f"-pool{pool.pk}.", 1)
            lines, reason = writer(captions)
            if lines is None:
                left_out[path] = reason
                continue
            with archive.text(path) as out:
                for line in lines:
                    out.write(line)
            written[path] = len(lines)
        step(f"moment ground truth of {pool.name}")
    return written, left_out


def _sources(pools, judgment_sets, pair_counts: dict[int, dict[str, int]]) -> list[dict]:
    """Each source with what it holds: a pool's pair counts (pool_pair_counts; "pairs" = pooled),
    a judgment set's judgments by label."""
    labels = {}
    for set_id, label, n in (ImportedJudgment.objects.filter(judgment_set__in=list(judgment_sets))
                             .values_list("judgment_set_id", "label").annotate(n=Count("id")).order_by()):
        labels.setdefault(set_id, {})[label] = n
    return ([{"kind": "pool", "id": p.pk, "name": p.name, "pairs": pair_counts[p.pk]["pooled"],
              "pair_counts": pair_counts[p.pk]} for p in pools]
            + [{"kind": "judgment_set", "id": s.pk, "name": s.name, "format": s.source_format, "checksum": s.checksum,
                "judgments": sum(labels.get(s.pk, {}).values()), "relevant": labels.get(s.pk, {}).get("relevant", 0),
                "not_relevant": labels.get(s.pk, {}).get("not_relevant", 0),
                "disagreement": labels.get(s.pk, {}).get("disagreement", 0)} for s in judgment_sets])


def _pair_count_totals(pair_counts: dict[int, dict[str, int]]) -> dict[str, int]:
    return {key: sum(counts[key] for counts in pair_counts.values()) for key in PAIR_COUNT_WORDS}


def release_create(*, pools: Sequence[Pool] = (), judgment_sets: Sequence[JudgmentSet] = (), name: str,
                   title: str = "", licence: str = "", authors: Sequence[str] = (), created_by=None,
                   allow_unresolved: bool = False, progress: Callable | None = None) -> Release:
    """Writes the next version of release `name` and records it (see the module docstring). A pool
    with unresolved pairs is refused unless `allow_unresolved` (release_unresolved_check)."""
    name = release_name_clean(name)
    pools, judgment_sets = list(pools), list(judgment_sets)
    submissions = release_submission_pools(name=name, pools=pools)
    pools += [s.pool for s in submissions]
    how_of_pool = {s.pool_id: f"submission {s.name}" for s in submissions}
    dataset_id = release_sources_check(pools=pools, judgment_sets=judgment_sets)
    release_unresolved_check(pools=pools, allow_unresolved=allow_unresolved)
    dataset = (pools[0] if pools else judgment_sets[0]).dataset
    authors = [a.strip() for a in authors if a and a.strip()]
    stage = [0]

    def step(message: str) -> None:
        stage[0] += 1
        if progress:
            progress(stage[0], None, message)

    for pool in pools:
        for user in pool_raters_without_profile(pool=pool):
            rater_profile(user=user)
    with release_name_lock(name):
        own_transaction = not connection.in_atomic_block
        written: list[str] = []
        recorded = False
        try:
            with transaction.atomic():
                if connection.vendor == "postgresql" and own_transaction:
                    with connection.cursor() as cursor:
                        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                # Counted again in the archive's snapshot: the counts the files state are the ones checked.
                pair_counts = release_unresolved_check(pools=pools, allow_unresolved=allow_unresolved)
                previous = Release.objects.filter(name=name).order_by("-version").first()
                if previous is not None and previous.dataset_id != dataset_id:
                    raise ReleaseError(f"release '{name}' is over dataset '{previous.dataset.name}'; a new version "
                                       f"cannot be over '{dataset.name}' (choose another name)")
                version = previous.version + 1 if previous else 1
                created_at = timezone.now()
                folder = f"{name}-v{version}"
                slug = f"{name}@v{version}"
                archive_name = f"releases/{name}/{folder}.zip"
                pairs_name = f"releases/{name}/{folder}.pairs.tsv"
                names = _rater_names(pools)
                written += [archive_name, pairs_name]
                # The agreement first, while this process holds least: its arrays of pairs and votes
                # and its models' work are the release's largest, and on top of what the file
                # stages leave held they were its peak (at 555K pairs 413 MB after the files, 370 MB
                # first; the leaderboard's 374 MB is then the largest: issue 40).
                agreement, agreement_summary = _agreement(pools, names, step)
                with stored_file_write(EXPORTS, archive_name) as raw:
                    archive = ReleaseArchive(raw, folder=folder, created_at=created_at)
                    counts = _write_qrels_and_pairs(archive, pairs_name, pools, judgment_sets, dataset_id, step,
                                                    how_of_pool)
                    step("qrels.txt written")
                    counts["changes"] = _write_changes(archive, previous, pairs_name, slug)
                    step("changes.json written")
                    fire = _write_fire(archive, pools, dataset.name, licence, names, step)
                    counts["fire_annotations"], counts["fire_disagreements"] = fire["annotations"], fire["disagreements"]
                    counts["label_rows"] = _write_labels(archive, pools, names, step)
                    archive.write_text("agreement.json", json.dumps(agreement, indent=1, ensure_ascii=False) + "\n")
                    counts["sample_eval_files"] = _write_sample_eval(archive, pools, step)
                    moment_files, moment_left_out = _write_moments(archive, pools, step)
                    if moment_files or moment_left_out:
                        counts["moment_files"], counts["moment_files_left_out"] = moment_files, moment_left_out
                    try:
                        leaderboard = _write_leaderboard(archive, pools, judgment_sets, dataset_id, step, counts,
                                                         submissions, names)
                    except ReportError as exc:
                        leaderboard, counts["leaderboard_left_out"] = None, str(exc)
                        counts["pool_bias_left_out"] = no_leaderboard_reason(str(exc))
                    counts["labels"] = Label.objects.filter(pair__pool__in=pools, pair__role=PooledPair.Role.POOL).count()
                    counts["raters"] = len(names)
                    counts["agreement"] = agreement_summary
                    sources = _sources(pools, judgment_sets, pair_counts)
                    for source in sources:
                        for submission in submissions:
                            if source["kind"] == "pool" and source["id"] == submission.pool_id:
                                source["submission"] = {"id": submission.pk, "model": submission.name,
                                                        "submitted_to": submission.release.slug}
                    if pools:
                        counts["pool_pairs"] = _pair_count_totals(pair_counts)
                        counts["unresolved_allowed"] = bool(allow_unresolved and counts["pool_pairs"]["unresolved"])
                    meta = {"format": RELEASE_FORMAT, "name": name, "version": version, "slug": slug,
                            "title": title or slug, "dataset": dataset.name, "created_at": created_at.isoformat(),
                            "sources": sources, "aggregation": f"{AGGREGATION}: {AGGREGATION_NOTE}", "counts": counts,
                            "licence": licence, "authors": authors, "agreement": agreement_summary,
                            "count_definitions": PAIR_COUNT_WORDS if pools else {},
                            # The depth the runs were actually cut at: a sampled pool's leaderboard cuts at
                            # the pool's depth though its parameter asks for none.
                            "leaderboard_params": ({**leaderboard.get("params", {}), "depth": leaderboard.get("depth")}
                                                   if leaderboard else None),
                            "leaderboard_estimated": bool(leaderboard and leaderboard.get("estimator")),
                            "pool_bias": leaderboard.get("pool_bias") if leaderboard else None,
                            "archive_url": (f"{settings.REJUDGE_PUBLIC_URL}/releases/{name}/v{version}/"
                                            if settings.REJUDGE_PUBLIC_URL else "")}
                    data_files = list(archive.files)
                    names_listed = [f["path"] for f in data_files] + ["README.md", "croissant.json", "CITATION.cff",
                                                                       "release.json", "SHA256SUMS"]
                    archive.write_text("README.md", datasheet(meta, names_listed))
                    archive.write_text("croissant.json", croissant(meta, data_files))
                    archive.write_text("CITATION.cff", citation_cff(meta))
                    archive.write_text("release.json", release_manifest(meta, list(archive.files)))
                    archive.write_text("SHA256SUMS", sha256sums(list(archive.files)))
                    archive.close()
                step("archive written")
                try:
                    with transaction.atomic():
                        release = Release.objects.create(
                            name=name, version=version, dataset_id=dataset_id, title=title or slug, licence=licence,
                            authors=authors, sources=sources, aggregation=AGGREGATION, counts=counts,
                            files=archive.files, leaderboard=leaderboard, archive=archive_name, pairs_file=pairs_name, bytes=archive.size,
                            sha256=archive.sha256, created_by=created_by, created_at=created_at)
                except IntegrityError as exc:
                    raise ReleaseError(f"release {slug} was made by someone else meanwhile; try again") from exc
            recorded = True
            return release
        finally:
            # No files without their release row (a killed process leaves them to the job's clean-up).
            if not recorded:
                for stored in written:
                    stored_file_delete(EXPORTS, stored)
