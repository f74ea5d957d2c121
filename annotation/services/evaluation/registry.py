"""Everything `evaluate` knows, by name: the judgment formats (--judgments-format), the run formats
(--run-format) and the measure families, each one complete table. A new judgment format, run
format or measure family is one entry here (the output layouts are writers.WRITERS).

Readers and families are named by "module:attribute" (modules of this package) and imported when
first used: a file-only `evaluate` of TREC qrels imports none of the moment, FIRE or rater-label
modules, a tenth of its time (issue 40: at most pytrec_eval's time on TREC-sized files).

The moment benchmarks print only table and json: trec_eval's and sample_eval.pl's layouts have no
moment measures.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from .errors import EvaluationError
from .judgments import Judgments


def imported(where: str):
    """The object "module:attribute" names, module relative to this package."""
    module, _, attribute = where.partition(":")
    return getattr(import_module(f"{__package__}.{module}"), attribute)


class Imported(Mapping):
    """name -> the object its "module:attribute" names, imported at the first lookup (and built by
    ``make``, when given); the names are known without importing anything."""

    def __init__(self, where: dict[str, str], make: Callable | None = None) -> None:
        self._where = where
        self._make = make
        self._loaded: dict = {}

    def __getitem__(self, name: str):
        if name not in self._loaded:
            found = imported(self._where[name])
            self._loaded[name] = self._make(found) if self._make else found
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


@dataclass(frozen=True)
class JudgmentFormat:
    """A judgment format: its reader takes the file's path and keyword options (``--queries``,
    ``--columns`` ...), so a caller holding stored options calls every format alike:
    ``fmt.read(path, **options)``. An option the format does not take is refused by name; an
    option given as None counts as not given."""

    name: str
    reader_name: str  # "module:function" of reader(path, **options) -> Judgments
    measure_family: str  # key of FAMILIES
    default_conventions: str  # key of conventions.CONVENTIONS
    run_formats: tuple[str, ...] = ("trec",)  # keys of RUN_READERS it can score, the default first
    outputs: tuple[str, ...] = ("table", "json", "trec_eval", "sample_eval")  # keys of writers.WRITERS

    @property
    def reader(self) -> Callable[..., Judgments]:
        return imported(self.reader_name)

    @property
    def options(self) -> tuple[str, ...]:
        """The keyword options the reader takes."""
        params = inspect.signature(self.reader).parameters.values()
        return tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)

    def read(self, path: Path, **options) -> Judgments:
        given = {k: v for k, v in options.items() if v is not None}
        unknown = sorted(set(given) - set(self.options))
        if unknown:
            takes = ", ".join(f"--{o.replace('_', '-')}" for o in self.options) or "none"
            raise EvaluationError(f"--{unknown[0].replace('_', '-')} does not apply to {self.name} judgments "
                                  f"(options of {self.name}: {takes})")
        return self.reader(Path(path), **given)


_MOMENT_OUTPUTS = ("table", "json")

JUDGMENT_FORMATS: dict[str, JudgmentFormat] = {
    "qrels": JudgmentFormat("qrels", "judgments:read_trec_qrels", "trec_eval", "trec"),
    "sample_eval": JudgmentFormat("sample_eval", "judgments:read_sample_eval", "sample_eval", "trecvid"),
    # Pair judgments that need a rule to become qrels; scored by trec_eval's measures like qrels.
    "fire_json": JudgmentFormat("fire_json", "fire:read_fire_judgments", "trec_eval", "trec"),
    "rater_labels": JudgmentFormat("rater_labels", "rater_grades:read_rater_judgments", "trec_eval", "trec"),
    "qvhighlights": JudgmentFormat("qvhighlights", "moments:read_qvhighlights_judgments", "qvhighlights",
                                   "qvhighlights", ("qvhighlights",), _MOMENT_OUTPUTS),
    "tvr": JudgmentFormat("tvr", "moments:read_tvr_judgments", "tvr", "tvr", ("tvr",), _MOMENT_OUTPUTS),
    "didemo": JudgmentFormat("didemo", "moments:read_didemo_judgments", "didemo", "didemo", ("didemo",),
                             (*_MOMENT_OUTPUTS, "didemo")),
}

#: Measure families, by JudgmentFormat.measure_family (each class is instantiated once, when first used).
FAMILIES: Mapping[str, object] = Imported({
    "trec_eval": "measures:TrecEvalMeasures", "sample_eval": "measures:SampleEvalMeasures",
    "qvhighlights": "moments:QvhighlightsMeasures", "tvr": "moments:TvrMeasures", "didemo": "moments:DidemoMeasures",
}, make=lambda family: family())

#: Run formats `evaluate` reads, by --run-format name.
RUN_READERS: Mapping[str, Callable] = Imported({
    "trec": "runs:read_trec_run", "qvhighlights": "moments:read_qvhighlights_run", "tvr": "moments:read_tvr_run",
    "didemo": "moments:read_didemo_run",
})
