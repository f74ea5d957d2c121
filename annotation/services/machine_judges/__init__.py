"""Machine judges: import an automatic assessor's verdicts and measure them against people.

A machine judge (models/judges.py) is attached to a pool, judging the pool's pairs, or to a
judgment set, judging the pairs that set has verdicts on. Its verdicts live in MachineJudgment,
never in Label: the queue, resolution, agreement, exports and rater quality control read Label
only, so a machine verdict never counts as a human one.

Import (`machine_judge_import`) is all or nothing: every problem of the file is collected with its
file, line and field (unknown caption or clip, a pair outside the pool or set, a pair judged twice,
a bad label or score, two models in one file), and if there is any nothing is written.

Report (kind `machine_judge`, declared in annotation/services/reports/kinds/machine_judge.py;
`machine_judge_report_create` in .reports for any judge; `machine_judge_result` computes it),
against the pool's resolved labels or the judgment set's verdicts:
- Cohen's kappa with a 95% bootstrap percentile interval over pairs, and the confusion matrix,
  over the pairs with both a resolved human label and a machine label;
- per-query disagreement (captions sorted by how many of their pairs the two disagree on);
- Kendall's tau-b and tau_AP (Yilmaz, Aslam & Robertson 2008; machine ranking against human)
  between the runs ranked by mean AP (trec_eval's `map` at the pool depth, or a set judge's `depth`,
  default SET_DEPTH, through pytrec_eval, the
  metrics report's `ap_textbook`, every caption of the dataset averaged in) with human and with
  machine judgments, with bootstrap percentile intervals over captions. Both qrels keep every
  caption's original clip as relevant (FIRE's convention); the human qrels add the pairs people
  resolved relevant, the machine qrels the pairs the machine judged relevant.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

import numpy as np
from django.db import IntegrityError, transaction

from annotation.analysis.machine_agreement import (cohen_kappa, relevance_probability, reliability,
                                                   system_rank_correlation)
from annotation.analysis.retrieval_metrics import corrected_qrels, evaluate_run
from annotation.formats.errors import IssueCollector
from annotation.formats.machine_judgments import file_format_from_name, read_machine_judgments
from annotation.formats.text_lines import file_checksum
from annotation.models import Caption, Clip, Dataset, MachineJudge, MachineJudgment, Pool, PooledPair, Run
from annotation.models.reports import ImportedJudgment, JudgmentSet
from annotation.selectors.reports import dataset_captions, pool_pairs, pool_runs, run_rankings

MEASURE = "AP (trec_eval map at the pool depth, every caption averaged in)"
QUERIES_LISTED = 1000
CALIBRATION_BINS = 10  # equal-width bins of the reliability curve (the report's calibration_bins default)
SET_DEPTH = 10
BATCH = 5000


class MachineJudgeError(ValueError):
    """A machine-judge request that cannot be carried out; the message says why."""


def _judgeable_pairs(*, pool: Pool | None, judgment_set: JudgmentSet | None) -> set[tuple[int, int]]:
    if pool is not None:
        rows = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).values_list("caption_id", "clip_id")
    else:
        rows = ImportedJudgment.objects.filter(judgment_set=judgment_set).values_list("caption_id", "clip_id")
    return set(rows)


@transaction.atomic
def machine_judge_import(*, dataset: Dataset, path: Path, name: str, pool: Pool | None = None,
                         judgment_set: JudgmentSet | None = None, file_format: str | None = None,
                         source_name: str = "", model_name: str = "", prompt_version: str = "",
                         created_by=None, progress=None) -> MachineJudge:
    """Reads the file and stores it as a machine judge (see the module docstring). `progress(done,
    total)` hears of the reading in bytes, then of the verdicts stored."""
    name = machine_judge_import_check(dataset=dataset, name=name, pool=pool, judgment_set=judgment_set)
    shown_name = source_name or Path(path).name
    issues = IssueCollector(shown_name)
    # An upload is stored under a name of its own: the name it came with says its format.
    file_format = file_format or (file_format_from_name(source_name) if source_name else None)
    parsed = read_machine_judgments(Path(path), issues, file_format=file_format, progress=progress)
    captions = dict(Caption.objects.filter(dataset=dataset).values_list("external_id", "id"))
    clips = dict(Clip.objects.filter(dataset=dataset).values_list("external_id", "id"))
    allowed = _judgeable_pairs(pool=pool, judgment_set=judgment_set)
    if not allowed:
        issues.add(None, None, f"'{pool or judgment_set}' has no pairs to judge")
    where = "the pool's pairs" if pool is not None else "the pairs judgment set judges"
    seen: dict[tuple[int, int], int] = {}
    rows = []
    for row in parsed.rows:
        caption_id, clip_id = captions.get(row.query), clips.get(row.item)
        if caption_id is None:
            issues.add(row.line, "query", f"no caption with id {row.query!r} in dataset '{dataset.name}'")
        if clip_id is None:
            issues.add(row.line, "item", f"no clip with id {row.item!r} in dataset '{dataset.name}'")
        if caption_id is None or clip_id is None:
            continue
        key = (caption_id, clip_id)
        if key in seen:
            issues.add(row.line, "item", f"the pair ({row.query}, {row.item}) is judged again (first on line {seen[key]})")
            continue
        seen[key] = row.line
        if allowed and key not in allowed:
            issues.add(row.line, "item", f"the pair ({row.query}, {row.item}) is not among {where}")
            continue
        rows.append((key, row))
    issues.raise_if_any()
    counts = {"records": len(parsed.rows), "relevant": sum(r.label == "relevant" for _, r in rows),
              "not_relevant": sum(r.label == "not_relevant" for _, r in rows),
              "with_score": sum(r.score is not None for _, r in rows), "judgeable_pairs": len(allowed)}
    try:
        judge = MachineJudge.objects.create(
            dataset=dataset, pool=pool, judgment_set=judgment_set, name=name,
            model_name=(model_name or parsed.model)[:300], prompt_version=(prompt_version or parsed.prompt)[:300],
            source_name=shown_name[:500], checksum=file_checksum(Path(path)), counts=counts, created_by=created_by)
    except IntegrityError as exc:  # a concurrent import took the name
        raise MachineJudgeError(f"dataset '{dataset.name}' already has a machine judge named '{name}'") from exc
    for start in range(0, len(rows), BATCH):
        MachineJudgment.objects.bulk_create(
            [MachineJudgment(judge=judge, caption_id=key[0], clip_id=key[1], label=row.label, score=row.score,
                             source_record=f"line {row.line}") for key, row in rows[start:start + BATCH]])
        if progress:
            progress(min(start + BATCH, len(rows)), len(rows), "storing the verdicts")
    return judge


def machine_judge_import_check(*, dataset: Dataset, name: str, pool: Pool | None = None,
                               judgment_set: JudgmentSet | None = None) -> str:
    """What can be refused before the file is read (an upload is refused before its job starts):
    one target of the dataset, a name not taken. Returns the name as stored."""
    if (pool is None) == (judgment_set is None):
        raise MachineJudgeError("attach the machine judge to a pool or to a judgment set (one of them)")
    target = pool or judgment_set
    if target.dataset_id != dataset.pk:
        raise MachineJudgeError(f"'{target}' belongs to another dataset than '{dataset.name}'")
    name = (name or "").strip()[:200]
    if not name:
        raise MachineJudgeError("a machine judge needs a name")
    if MachineJudge.objects.filter(dataset=dataset, name=name).exists():
        raise MachineJudgeError(f"dataset '{dataset.name}' already has a machine judge named '{name}'")
    return name


def machine_judge_get(*, judge_id: int) -> MachineJudge:
    try:
        return MachineJudge.objects.select_related("dataset", "pool", "judgment_set").get(pk=judge_id)
    except MachineJudge.DoesNotExist as exc:
        raise MachineJudgeError(f"no machine judge with id {judge_id}") from exc


def _human_labels(judge: MachineJudge) -> dict[tuple[int, int], int]:
    """(caption, clip) -> 1 relevant / 0 not relevant, from people only: the pool's resolved pairs,
    or the judgment set's verdicts (a 'disagreement' verdict is no label)."""
    if judge.pool_id is not None:
        pairs = pool_pairs(pool=judge.pool)
        keep = pairs.resolved >= 0
        return {(int(q), int(c)): int(r) for q, c, r in zip(pairs.caption[keep], pairs.clip[keep], pairs.resolved[keep])}
    rows = (ImportedJudgment.objects.filter(judgment_set=judge.judgment_set,
                                            label__in=[ImportedJudgment.Label.RELEVANT, ImportedJudgment.Label.NOT_RELEVANT])
            .values_list("caption_id", "clip_id", "label"))
    return {(q, c): int(label == ImportedJudgment.Label.RELEVANT) for q, c, label in rows}


def _runs(judge: MachineJudge) -> list[Run]:
    if judge.pool_id is not None:
        return pool_runs(pool=judge.pool)
    # Every ranked clip run of the dataset: a set has no runs of its own, and moment runs rank spans.
    return list(Run.objects.filter(dataset_id=judge.dataset_id, kind=Run.Kind.CLIP).order_by("name"))


def machine_judge_result(*, judge: MachineJudge, depth: int, n_boot: int = 1000, seed: int = 0,
                         confidence: float = 0.95, calibration_bins: int = CALIBRATION_BINS) -> dict:
    machine, score = {}, {}
    for q, c, label, value in judge.judgments.values_list("caption_id", "clip_id", "label", "score"):
        machine[(q, c)] = int(label == MachineJudgment.Label.RELEVANT)
        score[(q, c)] = math.nan if value is None else value
    human = _human_labels(judge)
    both = sorted(set(machine) & set(human))
    h = np.array([human[k] for k in both], dtype=np.int64)
    m = np.array([machine[k] for k in both], dtype=np.int64)
    kappa = cohen_kappa(h, m, n_boot=n_boot, seed=seed, confidence=confidence)
    # The datasets hold no query type (annotation/models/datasets.py), so no per-type curves.
    calibration = reliability(relevance_probability(m.astype(bool), np.array([score[k] for k in both], dtype=np.float64)),
                              h, n_bins=calibration_bins) | {
        "probability": "the machine's probability of relevance: its score's distance from 0.5 as certainty, its "
                       "verdict as the side (a verdict without a score in [0, 1] counts as certain)",
        "with_score": int(sum(math.isfinite(score[k]) for k in both)),
        "by_query_type": None, "query_type_note": "the dataset has no query types"}

    by_query: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # compared, disagree, human rel, machine rel
    for (q, _), hv, mv in zip(both, h.tolist(), m.tolist()):
        cell = by_query[q]
        cell[0] += 1
        cell[1] += int(hv != mv)
        cell[2] += hv
        cell[3] += mv
    caption_ext = dict(Caption.objects.filter(pk__in=list(by_query)).values_list("id", "external_id"))
    per_query = sorted(({"caption_id": caption_ext.get(q, str(q)), "pairs": v[0], "disagreements": v[1],
                         "disagreement_rate": v[1] / v[0], "human_relevant": v[2], "machine_relevant": v[3]}
                        for q, v in by_query.items()), key=lambda r: (-r["disagreements"], -r["disagreement_rate"],
                                                                      str(r["caption_id"])))

    caption_ids, _, originals = dataset_captions(dataset_id=judge.dataset_id)
    captions = caption_ids.tolist()
    original_qrels = {q: {c} for q, c in zip(captions, originals.tolist()) if c >= 0}
    human_qrels = corrected_qrels(original_qrels, [k for k, v in human.items() if v == 1])
    machine_qrels = corrected_qrels(original_qrels, [k for k, v in machine.items() if v == 1])
    runs = _runs(judge)
    names, human_ap, machine_ap = [], [], []
    for run in runs:
        ranking = run_rankings(run=run, depth=depth)
        names.append(run.name)
        human_ap.append(evaluate_run(ranking, human_qrels, captions, depth=depth).per_caption["ap_textbook"])
        machine_ap.append(evaluate_run(ranking, machine_qrels, captions, depth=depth).per_caption["ap_textbook"])
    shape = (len(names), len(captions))
    ranks = system_rank_correlation(names, np.array(human_ap).reshape(shape), np.array(machine_ap).reshape(shape),
                                    measure=MEASURE, n_boot=n_boot, seed=seed, confidence=confidence)
    return {
        "judge": {"id": judge.pk, "name": judge.name, "kind": judge.kind, "model": judge.model_name,
                  "prompt_version": judge.prompt_version, "pool_id": judge.pool_id,
                  "judgment_set_id": judge.judgment_set_id, "judgments": len(machine)},
        "human_labels": ("the pool's resolved labels (people only)" if judge.pool_id is not None
                         else "the judgment set's verdicts"),
        "pairs_compared": len(both),
        "machine_pairs_without_human_label": len(set(machine) - set(human)),
        "kappa": asdict(kappa) | {"interval_method": "bootstrap percentile over pairs"},
        "calibration": calibration,
        "confusion_note": "rows: human label, columns: machine label; 0 not relevant, 1 relevant",
        "per_query": per_query[:QUERIES_LISTED],
        "queries_with_disagreement": sum(1 for r in per_query if r["disagreements"]),
        "queries_listed": min(len(per_query), QUERIES_LISTED),
        "system_ranking": asdict(ranks) | {"interval_method": "bootstrap percentile over captions",
                                           "depth": depth,
                                           "tau_ap_reference": "Yilmaz, Aslam & Robertson, SIGIR 2008; machine "
                                                               "ranking scored against the human one"},
    }


def judge_named(judges, judge_id: int | None, where: str) -> MachineJudge:
    """The judge `judge_id` among `judges`, or their only one when no id is given."""
    if judge_id is not None:
        if isinstance(judge_id, bool) or not isinstance(judge_id, int):
            raise MachineJudgeError(f"the parameter 'judge' must be a machine judge's id, got {judge_id!r}")
        judge = judges.filter(pk=judge_id).first()
        if judge is None:
            raise MachineJudgeError(f"{where} has no machine judge with id {judge_id}")
        return judge
    found = list(judges[:2])
    if len(found) != 1:
        raise MachineJudgeError(f"{where} has {'no' if not found else 'several'} machine judges; "
                                f"name one with the parameter 'judge'")
    return found[0]


def judgment_set_machine_judge(*, judgment_set: JudgmentSet, judge_id: int | None = None) -> MachineJudge:
    """The set's judge `judge_id`, or its only machine judge."""
    return judge_named(MachineJudge.objects.filter(judgment_set=judgment_set).select_related("dataset", "judgment_set"),
                        judge_id, f"judgment set '{judgment_set.name}'")
