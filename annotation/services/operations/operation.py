"""What a background operation is: one declaration that the start service, the runner, the API,
the CLI and the meta-test read.

An operation names its `target` (the row it works on: a pool, a dataset, a judgment set... or
none) and declares the parameters a caller chooses (`Param`, analysis/params.py). Starting it
checks the parameters against the declarations, then `check(target, params)` refuses what is
wrong together or for this target (a name taken, runs of another dataset) and may return the
parameters completed (a name normalised); `pack(target, params)` gives what the job row stores
(by default the target's id beside the parameters). The runner calls `run(job, progress)` with
the job whose `params` are those packed ones and stores what it returns as the job's result.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from annotation.analysis.params import Param

#: A job's work: run(job, progress) -> the job's result (JSON).
Work = Callable[..., dict]


@dataclass(frozen=True)
class Operation:
    """One background operation. See the module docstring for the order things are called in."""

    #: Registered name, stored on the job row (Job.operation).
    name: str
    #: The operation in words (job pages, docs).
    title: str
    run: Work
    params: Mapping[str, Param] = field(default_factory=dict)
    #: check(target=, params=) -> None or the completed parameters; raises `error`.
    check: Callable[..., dict | None] | None = None
    #: The model of the row the operation works on (None: none; a tuple: one of these), stored as
    #: `target_field`.
    target: type | tuple[type, ...] | None = None
    target_field: str = ""
    #: pack(target, params) -> the job's stored params; default {target_field: target.pk, **params}.
    pack: Callable[[Any, dict], dict] | None = None
    #: The job's kind as the job pages list it: a string or a function of the packed params.
    job_kind: str | Callable[[dict], str] | None = None
    #: summary(result) -> the result in a sentence, shown on the job's card instead of its fields
    #: (services/operations/describe.py).
    summary: Callable[[dict], str] | None = None
    #: The exception a refused start raises (what the area's views and commands already catch).
    error: type[Exception] = ValueError
    #: Read the whole work from one REPEATABLE READ snapshot (PostgreSQL): exports, releases.
    snapshot: bool = False
    #: For work in two phases (a machine judge's run): a factory of (outside, work), where
    #: `outside` commits as it goes, before the work's transaction (lifecycle.job_execute).
    phases: Callable[[], tuple[Work, Work]] | None = None
    #: around(params) -> a context manager held while the job runs (a release's name lock).
    around: Callable[[dict], AbstractContextManager] | None = None
    #: The Celery task name jobs of this operation were queued under before the registry: still
    #: registered, as an alias of the one runner (annotation/tasks/operations.py).
    legacy_task: str | None = None

    def kind_of(self, packed: dict) -> str:
        if callable(self.job_kind):
            return self.job_kind(packed)
        return self.job_kind or self.name

    def packed(self, target: Any, params: dict) -> dict:
        if self.pack is not None:
            return self.pack(target, params)
        if self.target_field:
            return {self.target_field: target.pk, **params}
        return dict(params)


def refusal_naming(error: Exception, param: str | None) -> Exception:
    """`error` (an area's refusal) marked with the parameter to blame: the start service's caller,
    the API (api/operations.py `refused`: a 400 keyed by that field) and the meta-test read `param`."""
    error.param = param
    return error
