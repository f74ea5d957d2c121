"""Everything `evaluate` knows, by name: the judgment formats (--judgments-format), the run formats
(--run-format) and the measure families, each one complete table. A new judgment format, run
format or measure family is one entry here (the output layouts are writers.WRITERS).

The moment benchmarks print only table and json: trec_eval's and sample_eval.pl's layouts have no
moment measures.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .fire import read_fire_judgments
from .judgments import JudgmentFormat, read_sample_eval, read_trec_qrels
from .measures import SampleEvalMeasures, TrecEvalMeasures
from .moments import (DidemoMeasures, QvhighlightsMeasures, TvrMeasures, read_didemo_judgments, read_didemo_run,
                      read_qvhighlights_judgments, read_qvhighlights_run, read_tvr_judgments, read_tvr_run)
from .rater_grades import read_rater_judgments
from .runs import read_trec_run

_MOMENT_OUTPUTS = ("table", "json")

JUDGMENT_FORMATS: dict[str, JudgmentFormat] = {
    "qrels": JudgmentFormat("qrels", read_trec_qrels, "trec_eval", "trec"),
    "sample_eval": JudgmentFormat("sample_eval", read_sample_eval, "sample_eval", "trecvid"),
    # Pair judgments that need a rule to become qrels; scored by trec_eval's measures like qrels.
    "fire_json": JudgmentFormat("fire_json", read_fire_judgments, "trec_eval", "trec"),
    "rater_labels": JudgmentFormat("rater_labels", read_rater_judgments, "trec_eval", "trec"),
    "qvhighlights": JudgmentFormat("qvhighlights", read_qvhighlights_judgments, "qvhighlights", "qvhighlights",
                                   ("qvhighlights",), _MOMENT_OUTPUTS),
    "tvr": JudgmentFormat("tvr", read_tvr_judgments, "tvr", "tvr", ("tvr",), _MOMENT_OUTPUTS),
    "didemo": JudgmentFormat("didemo", read_didemo_judgments, "didemo", "didemo", ("didemo",),
                             (*_MOMENT_OUTPUTS, "didemo")),
}

#: Measure families, by JudgmentFormat.measure_family.
FAMILIES = {"trec_eval": TrecEvalMeasures(), "sample_eval": SampleEvalMeasures(),
            "qvhighlights": QvhighlightsMeasures(), "tvr": TvrMeasures(), "didemo": DidemoMeasures()}

#: Run formats `evaluate` reads, by --run-format name.
RUN_READERS: dict[str, Callable[[Path], object]] = {"trec": read_trec_run, "qvhighlights": read_qvhighlights_run,
                                                    "tvr": read_tvr_run, "didemo": read_didemo_run}
