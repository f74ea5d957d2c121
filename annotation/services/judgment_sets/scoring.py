"""`evaluate` and `agreement` over a stored judgment set (runs from files or stored runs), and the
reports that keep their results.

A stored set is scored by reading its kept file with the reader and the reading options it was
imported with, so its numbers are those of `evaluate --judgments FILE` on the same file. A stored
run is written out as a TREC run file (caption id, Q0, clip id, rank, score, run name) and read back
by the same run reader: the official tools order by score (ties by document id, descending), so a
stored run scores as the file it came from. A run stored without scores gets score = -rank, which
keeps its ranks as the order. A score-matrix run is written as the TREC run of its ranking (to the
run's depth) with the matrix's own scores, so the tools' tie rule orders it as the matrix does. A
stored moment run is written back in the benchmark's own prediction format it was imported from
(QVHighlights jsonl, a TVR submission's VCMR list), windows in rank order, which is the order both
official evaluations read.

`stored_runs_check` is the one rule of which stored runs a set can score: the command, the REST
start (`POST judgment-sets/{id}/evaluate/`, which the reports page posts to) and the job read it.
"""
from __future__ import annotations

import json
import tempfile
from itertools import groupby
from collections.abc import Sequence
from pathlib import Path

from django.db import transaction

from annotation.models import Caption, Prediction, Run
from annotation.models.judgment_sets import JudgmentSet
from annotation.models.reports import Report
from annotation.provenance import json_ready
from annotation.selectors.score_matrix_runs import score_matrix_load
from annotation.services.evaluation.errors import EvaluationError
from annotation.services.evaluation.evaluate import Evaluation, evaluate
from annotation.services.evaluation.registry import JUDGMENT_FORMATS
from annotation.services.evaluation.writers import as_json
from annotation.services.reports.kinds.evaluation import KIND as EVALUATION
from annotation.services.reports.kinds.judgment_set_agreement import KIND as JUDGMENT_SET_AGREEMENT
from annotation.services.reports.create import report_save

from .agreement import AgreementOptionsError, agreement_file_compute
from .storage import judgment_file_path

#: A set taken from a pool is read as the qrels it holds.
_READ_AS = {JudgmentSet.Format.POOL: JudgmentSet.Format.QRELS}
#: Reading options a stored set keeps that the format's reader takes (the others describe the import).
_READ_OPTIONS = ("columns", "repeats", "file_format")
#: Formats whose reader takes the benchmark's original positives.
_TAKES_ORIGINALS = (JudgmentSet.Format.QRELS, JudgmentSet.Format.FIRE_JSON, JudgmentSet.Format.RATER_LABELS)


def judgment_set_reading(judgment_set: JudgmentSet) -> tuple[Path, str, dict]:
    """(kept file, --judgments-format, reader options) of a stored set."""
    if not judgment_set.stored_file:
        raise EvaluationError(f"judgment set '{judgment_set.name}' was imported before files were kept; import the "
                              f"file again under another name to score it")
    fmt = _READ_AS.get(judgment_set.source_format, judgment_set.source_format)
    options = {k: v for k, v in (judgment_set.params or {}).items() if k in _READ_OPTIONS and v}
    return judgment_file_path(judgment_set.stored_file), fmt, options


def stored_run_format(run: Run) -> str | None:
    """The run format a stored run is written back in and read as: TREC for a clip run (rows or a
    score matrix), the benchmark's own for a moment run; None when it cannot be written back."""
    if run.kind == Run.Kind.CLIP:
        return "trec"
    return run.source_format if run.source_format in _MOMENT_WRITERS else None


def stored_runs_check(*, judgment_set: JudgmentSet, runs: Sequence[Run]) -> None:
    """Raises EvaluationError naming the first stored run the set cannot score: another dataset's,
    a moment run imported in a format that cannot be written back, or a run whose format the set's
    tool does not score (a clip run against moment ground truth, a TVR run against QVHighlights)."""
    fmt = _READ_AS.get(judgment_set.source_format, judgment_set.source_format)
    scores = JUDGMENT_FORMATS[fmt].run_formats if fmt in JUDGMENT_FORMATS else ()
    for run in runs:
        if run.dataset_id != judgment_set.dataset_id:
            raise EvaluationError(f"run '{run.name}' belongs to another dataset than judgment set "
                                  f"'{judgment_set.name}'")
        run_format = stored_run_format(run)
        if run_format is None:
            raise EvaluationError(f"run '{run.name}' is a moment run imported as "
                                  f"{run.source_format or 'an unknown format'}: stored moment runs are scored when "
                                  f"imported as {' or '.join(_MOMENT_WRITERS)}; score its prediction file with "
                                  f"--run-format")
        if run_format not in scores:
            what = "a ranked clip run" if run.kind == Run.Kind.CLIP else f"a {run_format} moment run"
            raise EvaluationError(f"run '{run.name}' is {what}: judgment set '{judgment_set.name}' "
                                  f"({judgment_set.source_format}) scores {' or '.join(scores) or 'no'} runs")


def _write_stored_run(run: Run, folder: Path) -> Path:
    """The run as a file named after the run (outputs name runs by their file name): a TREC run,
    or a moment run in the format it was imported from."""
    path = folder / str(run.pk) / (run.name.replace("/", "_").replace("\x00", "") or str(run.pk))
    path.parent.mkdir()
    with path.open("w") as out:
        if run.scores_file:
            _write_score_matrix(run, out)
            return path
        writer = _TREC if run.kind == Run.Kind.CLIP else _MOMENT_WRITERS[run.source_format]
        rows = (Prediction.objects.filter(run=run).order_by("caption_id", "rank")
                .values_list("caption__external_id", "clip__external_id", "rank", "score", "start", "end"))
        writer(run, rows.iterator(chunk_size=20_000), out)
    return path


def _write_score_matrix(run: Run, out) -> None:
    """The matrix's ranking of each caption (trec_eval's order, to the run's depth) as TREC lines
    with the matrix's scores: read back, the tools order it exactly as the matrix ranks."""
    loaded = score_matrix_load(run=run)
    caption_ids = dict(Caption.objects.filter(dataset_id=run.dataset_id).values_list("pk", "external_id"))
    tag = "".join(ch if not ch.isspace() else "_" for ch in run.name)
    top = loaded.top()
    for row, caption_pk in enumerate(loaded.caption_pks.tolist()):
        caption = caption_ids[caption_pk]
        columns = top[row].tolist()
        scores = loaded.scores[row, columns].tolist()
        out.writelines(f"{caption} Q0 {loaded.clip_external_ids[column]} {rank} {score!r} {tag}\n"
                       for rank, (column, score) in enumerate(zip(columns, scores), start=1))


def _write_trec(run: Run, rows, out) -> None:
    tag = "".join(ch if not ch.isspace() else "_" for ch in run.name)
    for caption, clip, rank, score, _, _ in rows:
        out.write(f"{caption} Q0 {clip} {rank} {-rank if score is None else repr(score)} {tag}\n")


def _write_qvhighlights(run: Run, rows, out) -> None:
    """One line a query: its video (each QVHighlights query has one) and its windows in rank order."""
    for caption, windows in groupby(rows, key=lambda row: row[0]):
        windows = list(windows)
        out.write(json.dumps({"qid": caption, "vid": windows[0][1],
                              "pred_relevant_windows": [[start, end, score] for _, _, _, score, start, end in windows]})
                  + "\n")


def _write_tvr(run: Run, rows, out) -> None:
    """A submission with the VCMR list the run stored (TVR's evaluation reads rows in file order and
    ignores scores, which the import did not keep: -rank stands in)."""
    video_index: dict[str, int] = {}
    vcmr = []
    for caption, predictions in groupby(rows, key=lambda row: row[0]):
        vcmr.append({"desc_id": caption, "predictions": [
            [video_index.setdefault(clip, len(video_index)), start, end, -rank]
            for _, clip, rank, _, start, end in predictions]})
    json.dump({"video2idx": video_index, "VCMR": vcmr}, out)


_TREC = _write_trec
_MOMENT_WRITERS = {"qvhighlights": _write_qvhighlights, "tvr": _write_tvr}


def _write_dataset_tables(judgment_set: JudgmentSet, fmt: str, folder: Path, with_originals: bool) -> dict:
    options: dict = {}
    captions = Caption.objects.filter(dataset_id=judgment_set.dataset_id).order_by("pk")
    if fmt == JudgmentSet.Format.FIRE_JSON:
        path = folder / "queries.tsv"
        with path.open("w") as out:
            for external_id, text in captions.values_list("external_id", "text").iterator(chunk_size=20_000):
                out.write(f"{external_id}\t{' '.join(text.split())}\n")
        options["queries"] = path
    if with_originals:
        if fmt not in _TAKES_ORIGINALS:
            raise EvaluationError(f"original positives apply to qrels, FIRE and rater_labels sets, not {fmt}")
        path = folder / "originals.qrels"
        rows = captions.filter(original_clip__isnull=False).values_list("external_id", "original_clip__external_id")
        with path.open("w") as out:
            for caption, clip in rows.iterator(chunk_size=20_000):
                out.write(f"{caption} 0 {clip} 1\n")
        options["originals"] = path
    return options


def judgment_set_evaluate(*, judgment_set: JudgmentSet, run_paths: Sequence[Path] = (), runs: Sequence[Run] = (),
                          conventions: str | None = None, measures: Sequence[str] | None = None,
                          run_format: str | None = None, output: str | None = None, with_originals: bool = False,
                          judgments_options: dict | None = None) -> Evaluation:
    """Scores run files and stored runs of the set's dataset against the stored set.
    `judgments_options` adds reader options the set does not store (e.g. rater_labels' aggregate)."""
    if not run_paths and not runs:
        raise EvaluationError("name at least one run: a file, or --run NAME for a stored run")
    stored_runs_check(judgment_set=judgment_set, runs=runs)
    path, fmt, options = judgment_set_reading(judgment_set)
    with tempfile.TemporaryDirectory(prefix="rejudge-evaluate-") as folder:
        stored = [_write_stored_run(run, Path(folder)) for run in runs]
        options |= _write_dataset_tables(judgment_set, judgment_set.source_format, Path(folder), with_originals)
        options |= {k: v for k, v in (judgments_options or {}).items() if v is not None}
        return evaluate([*map(Path, run_paths), *stored], path, fmt, conventions=conventions, measures=measures,
                        run_format=run_format, output=output, judgments_options=options)


def evaluation_report_store(*, evaluation: Evaluation, judgment_set: JudgmentSet, params: dict, created_by=None,
                            job=None) -> Report:
    """Report(kind="evaluation"): the json output of every run, the conventions, the parameters
    (judgment set, runs with their checksums, measures) and the library versions."""
    result = {"judgment_set": {"id": judgment_set.pk, "name": judgment_set.name,
                               "format": judgment_set.source_format, "checksum": judgment_set.checksum},
              "runs": [json_ready(as_json(scores, evaluation.judgments, evaluation.conventions))
                       for scores in evaluation.runs]}
    with transaction.atomic():
        return report_save(kind=EVALUATION.name, dataset_id=judgment_set.dataset_id, job=job,
                           title=f"Evaluation against {judgment_set.name}", params=params, result=result,
                           created_by=created_by)


def judgment_set_agreement(*, judgment_set: JudgmentSet, level: str = "nominal", binarize_at: float | None = None,
                           repeats: str | None = None, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95,
                           progress=None) -> dict:
    """`agreement` over a stored rater_labels set, read with the options it was imported with;
    `repeats` defaults to the rule stored with the set."""
    if judgment_set.source_format != JudgmentSet.Format.RATER_LABELS:
        raise AgreementOptionsError(f"judgment set '{judgment_set.name}' is {judgment_set.source_format}: agreement "
                                    f"needs raw multi-rater labels (a rater_labels set)")
    path, _, options = judgment_set_reading(judgment_set)
    return agreement_file_compute(path=path, columns=options.get("columns"), file_format=options.get("file_format"),
                                  level=level, binarize_at=binarize_at, repeats=repeats or options.get("repeats", "last"),
                                  n_boot=n_boot, seed=seed, confidence=confidence, progress=progress)


def agreement_report_store(*, result: dict, judgment_set: JudgmentSet, params: dict, created_by=None,
                           job=None) -> Report:
    """Report(kind="judgment_set_agreement") with the agreement result and its parameters."""
    return report_save(kind=JUDGMENT_SET_AGREEMENT.name, dataset_id=judgment_set.dataset_id, job=job,
                       title=f"Agreement of {judgment_set.name}", params={"judgment_set_id": judgment_set.pk, **params},
                       versions=result.get("versions"), result=result, created_by=created_by)
