"""Moment benchmarks in `evaluate`: readers and measure families for QVHighlights, TVR and DiDeMo.

The numbers come from annotation.analysis.moment_eval (the official scripts' rules); this module
only reads the files (annotation.formats.moment_files, which raise ImportRejected naming file,
line and field) and puts the results in the RunScores shape every writer prints. A moment family
scores its own run format only: a TREC run has no windows to compare.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from annotation.analysis.moment_eval import (TVR_TASKS, MomentEvaluation, TvrTruth, didemo_metrics,
                                             qvhighlights_metrics, tvr_metrics)
from annotation.formats.moment_files import (load_didemo_ground_truth, load_didemo_predictions,
                                             load_qvhighlights_ground_truth, load_qvhighlights_predictions,
                                             load_tvr_ground_truth, load_tvr_predictions)

from .conventions import Conventions
from .judgments import Judgments
from .errors import EvaluationError
from .measures import RunScores

#: Moment-DETR's standalone_eval keeps the first 10 predictions of a query, TVRetrieval's 100.
QVH_MAX_PRED_WINDOWS = 10
TVR_MAX_PRED_PER_QUERY = 100
TVR_IOU_THRESHOLDS = (0.5, 0.7)
TVR_KS = (1, 5, 10, 100)

#: Moment-DETR prints its "brief" block sorted by name; moment_eval returns it in that order.
QVH_MEASURES = ("MR-full-R1@0.5", "MR-full-R1@0.7", "MR-full-mAP", "MR-full-mAP@0.5", "MR-full-mAP@0.75",
                "MR-long-mAP", "MR-middle-mAP", "MR-short-mAP")
TVR_MEASURES = tuple(
    [f"{task}-{t}-r{k}" for task in ("VCMR", "SVMR") for t in TVR_IOU_THRESHOLDS for k in TVR_KS]
    + [f"VR-r{k}" for k in TVR_KS])

#: LocalizingMoments' eval.py prints "Average rank@1: %f" and so on: these are its names.
DIDEMO_MEASURES = ("Average rank@1", "Average rank@5", "Average iou")
_DIDEMO_NAMES = {"rank@1": "Average rank@1", "rank@5": "Average rank@5", "miou": "Average iou"}
_DIDEMO_ALIASES = {**{n.lower(): n for n in DIDEMO_MEASURES}, "rank@1": "Average rank@1", "r@1": "Average rank@1",
                   "rank@5": "Average rank@5", "r@5": "Average rank@5", "iou": "Average iou", "miou": "Average iou"}

#: Both official scripts score a ground-truth query the run leaves out (or crash on it); these
#: families score it 0, so the outputs must not call it skipped.
UNANSWERED_RULE = "scored 0"


@dataclass(frozen=True)
class MomentRunFile:
    name: str
    tag: str
    format: str  # run format name, checked against the judgments' family
    predictions: object  # {qid: MomentRun} for QVHighlights, a TvrSubmission for TVR


def read_qvhighlights_judgments(path: Path) -> Judgments:
    return Judgments("qvhighlights", path.name, load_qvhighlights_ground_truth(path))


def read_tvr_judgments(path: Path) -> Judgments:
    return Judgments("tvr", path.name, load_tvr_ground_truth(path))


def read_qvhighlights_run(path: Path) -> MomentRunFile:
    path = Path(path)
    return MomentRunFile(path.name, path.name, "qvhighlights", load_qvhighlights_predictions(path))


def read_tvr_run(path: Path) -> MomentRunFile:
    path = Path(path)
    # The official script reads only the first 100 rows of a query; reading no further keeps
    # memory flat on a full-size submission.
    return MomentRunFile(path.name, path.name, "tvr",
                         load_tvr_predictions(path, max_pred_per_query=TVR_MAX_PRED_PER_QUERY))


def read_didemo_judgments(path: Path) -> Judgments:
    return Judgments("didemo", path.name, load_didemo_ground_truth(path))


def read_didemo_run(path: Path) -> MomentRunFile:
    path = Path(path)
    return MomentRunFile(path.name, path.name, "didemo", load_didemo_predictions(path))


class _MomentMeasures:
    name: str
    run_format: str
    conventions: str
    offered: tuple[str, ...]

    def parse(self, names: Sequence[str] | None, conventions: Conventions) -> list[str]:
        if conventions.name != self.conventions:
            raise EvaluationError(f"{self.name} judgments are scored under the '{self.conventions}' conventions "
                                  f"only ({conventions.name} was asked)")
        if not names:
            return list(self.offered)
        unknown = [n for n in names if n.strip() not in self.offered]
        if unknown:
            raise EvaluationError(f"unknown measure '{unknown[0]}' for {self.name} judgments (choose from "
                                  f"{', '.join(self.offered)})")
        chosen = {n.strip() for n in names}
        return [n for n in self.offered if n in chosen]

    def _check_run(self, run, judgments: Judgments) -> None:
        if getattr(run, "format", None) != self.run_format:
            raise EvaluationError(f"{run.name}: a {self.name} ground truth scores {self.run_format} prediction "
                                  f"files only (--run-format {self.run_format})")

    def _scores(self, run: MomentRunFile, judgments: Judgments, result, measures: list[str],
                answered: set[str]) -> RunScores:
        names = tuple(n for n in measures if n in result.measures)
        if not names:
            raise EvaluationError(f"{run.name}: none of the measures asked can be computed from this file")
        per_query = {q: {n: v for n, v in values.items() if n in names} for q, values in result.per_query.items()}
        return RunScores(run.name, run.tag, names, names, per_query, {n: result.measures[n] for n in names},
                         unanswered=tuple(q for q in judgments.qrels if q not in answered),
                         without_judgments=tuple(sorted(q for q in answered if q not in judgments.qrels)),
                         unanswered_rule=UNANSWERED_RULE)


class QvhighlightsMeasures(_MomentMeasures):
    name = "qvhighlights"
    run_format = "qvhighlights"
    conventions = "qvhighlights"
    offered = QVH_MEASURES

    def score(self, run: MomentRunFile, judgments: Judgments, conventions: Conventions,
              measures: list[str]) -> RunScores:
        self._check_run(run, judgments)
        preds = run.predictions
        result = qvhighlights_metrics({q: t.windows for q, t in judgments.qrels.items()},
                                      {q: r.windows for q, r in preds.items()},
                                      max_pred_windows=QVH_MAX_PRED_WINDOWS)
        # An empty pred_relevant_windows list answers nothing.
        return self._scores(run, judgments, result, measures, {q for q, r in preds.items() if r.windows})


class TvrMeasures(_MomentMeasures):
    name = "tvr"
    run_format = "tvr"
    conventions = "tvr"
    offered = TVR_MEASURES

    def score(self, run: MomentRunFile, judgments: Judgments, conventions: Conventions,
              measures: list[str]) -> RunScores:
        self._check_run(run, judgments)
        sub = run.predictions
        truth = {q: TvrTruth(t.video, t.windows, t.desc_type) for q, t in judgments.qrels.items()}
        result = tvr_metrics(truth, sub.tasks, sub.video_index, iou_thresholds=TVR_IOU_THRESHOLDS, ks=TVR_KS,
                             max_pred_per_query=TVR_MAX_PRED_PER_QUERY)
        answered = {q for task in TVR_TASKS for q, rows in sub.tasks.get(task, {}).items() if len(rows)}
        return self._scores(run, judgments, result, measures, answered)


class DidemoMeasures(_MomentMeasures):
    """LocalizingMoments utils/eval.py: per annotation, the mean of the three best ranks of the
    annotators' windows in the ranked moments (rank@1: that mean is <= 1, rank@5: <= 5) and the mean
    of the three highest IoUs of the top moment with them, so one annotator who disagrees with the
    others is dropped (annotation.analysis.moment_eval.didemo_metrics)."""

    name = "didemo"
    run_format = "didemo"
    conventions = "didemo"
    offered = DIDEMO_MEASURES

    def parse(self, names: Sequence[str] | None, conventions: Conventions) -> list[str]:
        spelled = None if not names else [_DIDEMO_ALIASES.get(n.strip().lower(), n) for n in names]
        return super().parse(spelled, conventions)

    def score(self, run: MomentRunFile, judgments: Judgments, conventions: Conventions,
              measures: list[str]) -> RunScores:
        self._check_run(run, judgments)
        preds = run.predictions
        if isinstance(preds, list):
            # eval_predictions zips the rankings with the ground truth and would silently score
            # only the shorter of the two; a count that differs is refused instead.
            if len(preds) != len(judgments.qrels):
                raise EvaluationError(f"{run.name}: an array of rankings is aligned with the ground truth by "
                                      f"position, but it holds {len(preds)} rankings for {len(judgments.qrels)} "
                                      f"annotations in {judgments.name} (or key the rankings by annotation_id)")
            preds = dict(zip(judgments.qrels, preds))
        result = didemo_metrics({q: t.windows for q, t in judgments.qrels.items()}, preds)
        named = MomentEvaluation(
            measures={_DIDEMO_NAMES[k]: v for k, v in result.measures.items()},
            per_query={q: {_DIDEMO_NAMES[k]: v for k, v in values.items()} for q, values in result.per_query.items()},
            detail=result.detail, counts=result.counts)
        return self._scores(run, judgments, named, measures, {q for q, r in preds.items() if r})
