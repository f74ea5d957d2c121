"""Scoring run files against a judgments file the way the official tools do, nothing stored.

`evaluate()` reads the judgments (a format of registry.JUDGMENT_FORMATS), reads each run, scores
it with the measure family of the judgments' format (registry.FAMILIES) under the chosen
conventions (conventions.CONVENTIONS, by default the format's own tool) and returns the scores; a
writer of writers.WRITERS prints them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from annotation.analysis.judged import JUDGED_THRESHOLD
from annotation.analysis.params import ParamInvalid

from .conventions import CONVENTIONS, Conventions
from .errors import EvaluationError
from .judgments import Judgments
from .measures import RunScores
from .registry import FAMILIES, JUDGMENT_FORMATS, RUN_READERS
from .writers import WRITERS


@dataclass(frozen=True)
class Evaluation:
    judgments: Judgments
    conventions: Conventions
    runs: list[RunScores]
    #: Below it a measure cut at K is flagged not comparable with the leaderboard (every layout
    #: but the official tools' own, which print what the tools print).
    judged_threshold: float = JUDGED_THRESHOLD.default

    def write(self, output: str, stream) -> None:
        runs = [replace(r, judged_threshold=self.judged_threshold) for r in self.runs]
        WRITERS[output](runs, self.judgments, self.conventions, stream)

    def with_judged_threshold(self, threshold: float | None) -> Evaluation:
        """The same scores flagged against ``threshold`` (None: the declared default); raises
        EvaluationError for a value outside JUDGED_THRESHOLD's bounds."""
        return replace(self, judged_threshold=judged_threshold_checked(threshold))


def judged_threshold_checked(threshold: float | None) -> float:
    if threshold is None:
        return JUDGED_THRESHOLD.default
    try:
        return JUDGED_THRESHOLD.check(threshold, name="judged_threshold")
    except ParamInvalid as exc:
        raise EvaluationError(str(exc)) from None


def evaluate(run_paths: Sequence[Path], judgments_path: Path, judgments_format: str, *,
             conventions: str | None = None, measures: Sequence[str] | None = None,
             run_format: str | None = None, output: str | None = None,
             judgments_options: Mapping[str, Any] | None = None,
             judged_threshold: float | None = None) -> Evaluation:
    """Scores every run file; raises ImportRejected (a bad file, with file/line/field of each
    problem) or EvaluationError (a bad option or nothing to score) before printing anything.

    ``run_format`` defaults to the first the judgments format scores (``trec``, or the moment
    benchmark's own); ``output``, when given, is checked against the layouts the format prints.
    ``judgments_options`` go to the format's reader (``JudgmentFormat.read``): ``queries`` and
    ``originals`` for fire_json, ``columns``, ``repeats``, ``aggregate``, ``file_format`` and
    ``originals`` for rater_labels, ``originals`` for qrels; None values count as not given.
    ``judged_threshold`` (JUDGED_THRESHOLD, default 0.9): a measure cut at K whose Judged@K is
    below it is flagged not comparable with the leaderboard."""
    if judgments_format not in JUDGMENT_FORMATS:
        raise EvaluationError(f"unknown judgments format '{judgments_format}' "
                              f"(choose from {', '.join(JUDGMENT_FORMATS)})")
    fmt = JUDGMENT_FORMATS[judgments_format]
    run_format = run_format or fmt.run_formats[0]
    if run_format not in RUN_READERS:
        raise EvaluationError(f"unknown run format '{run_format}' (choose from {', '.join(RUN_READERS)})")
    if run_format not in fmt.run_formats:
        raise EvaluationError(f"--run-format {run_format} cannot be scored against {judgments_format} judgments "
                              f"(choose from {', '.join(fmt.run_formats)})")
    if output is not None and output not in fmt.outputs:
        raise EvaluationError(f"--output {output} is not available for {judgments_format} judgments: its layout "
                              f"has no {judgments_format} measures (choose from {', '.join(fmt.outputs)})")
    name = conventions or fmt.default_conventions
    if name not in CONVENTIONS:
        raise EvaluationError(f"unknown conventions '{name}' (choose from {', '.join(CONVENTIONS)})")
    conv = CONVENTIONS[name]
    threshold = judged_threshold_checked(judged_threshold)
    family = FAMILIES[fmt.measure_family]
    chosen = family.parse(measures, conv)
    judgments = fmt.read(Path(judgments_path), **dict(judgments_options or {}))
    runs = [RUN_READERS[run_format](Path(p)) for p in run_paths]
    return Evaluation(judgments, conv, [family.score(run, judgments, conv, chosen) for run in runs], threshold)
