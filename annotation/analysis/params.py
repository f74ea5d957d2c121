"""How a parameter is declared, once: its type, default, bounds and description (`Param`), and the
one check of a value against its declaration (`param_value`, `params_clean`).

Report kinds (services/reports/kind.py) and background operations (services/operations/) declare
their parameters with it; the API builds its request fields and its OpenAPI text from the same
declarations, and the CLI its options. Plain Python, so the analysis code, the models (a column's
default) and the services all read one declaration: `sample_rate` is declared once, in
analysis/judging/strategies.py, and read everywhere it is used.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a parameter the caller must give.
REQUIRED: Any = _Required()

#: The largest whole number a parameter takes unless it declares a lower `high`: what a
#: PostgreSQL bigint column holds, so a huge number is refused by name, not by the database.
BIGGEST_WHOLE = 2**63 - 1


class ParamInvalid(ValueError):
    """A parameter value that its declaration refuses; `param` names the parameter."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Param:
    """One parameter.

    `type` is int, float, bool, str, list or dict (an object of names and values, whose contents
    the operation's check reads). A list holds `items` (int, float or str, or list: rows of
    numbers, each number within the bounds); with `unique_sorted` (the default) it is stored
    sorted without repeats, else in the order given (rows: always in the order given).
    `default` may be a function of the target (a report's pool; None when there is none), or
    REQUIRED. A value of None means "the default" unless the parameter is `nullable`, whose None
    is kept (a rule switched off). `choices` limits a str (or the items of a list of str).
    Bounds: `low`/`high` (inclusive; `open_interval` makes both exclusive, `open_low` only the
    low one); for lists they bound each item, and `min_items`/`max_items` the length.
    """

    type: type
    default: Any
    description: str
    low: float | None = None
    high: float | None = None
    open_interval: bool = False  # for fractions: strictly between low and high
    nullable: bool = False
    open_low: bool = False  # (low, high]: a share that may be all but not none
    choices: tuple[str, ...] | None = None
    items: type = int
    unique_sorted: bool = True
    min_items: int = 1
    max_items: int | None = None
    max_length: int | None = None
    #: What one choice is called ("strategy"), for the error naming a value that is none of them.
    what: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def default_for(self, target: Any = None) -> Any:
        value = self.default(target) if callable(self.default) else self.default
        return list(value) if isinstance(value, (list, tuple)) else value

    def bounds_text(self) -> str:
        """The bounds in words ("" when there are none), as errors and descriptions say them."""
        low_open = self.open_interval or self.open_low
        low, high = _bound(self.low), _bound(self.high)
        if self.low is not None and self.high is not None:
            if low_open and not self.open_interval:
                return f"in ({low}, {high}]"
            return f"between {low} and {high}{' (exclusive)' if self.open_interval else ''}"
        if self.low is not None:
            return f"above {low}" if low_open else f"at least {low}"
        if self.high is not None:
            return f"at most {high}"
        return ""

    def check(self, value: Any, *, name: str = "value") -> Any:
        """The value, checked and normalised; raises ParamInvalid naming `name`."""
        return param_value(name, self, value)


def _bound(value: float | None) -> str:
    """A bound as people read it: a whole number in full (4611686018427387904, not 4.61169e+18)."""
    if value is None:
        return ""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:g}"


def _number(name: str, spec: Param, value: Any, kind: type) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParamInvalid(f"parameter '{name}' must be a number, got {value!r}", param=name)
    if kind is int:
        if isinstance(value, float) and not value.is_integer():
            raise ParamInvalid(f"parameter '{name}' must be a whole number, got {value!r}", param=name)
        value = int(value)
        high = spec.high if spec.high is not None else BIGGEST_WHOLE
        if abs(value) > BIGGEST_WHOLE or value > high:
            # Checked before float(): a 400-digit integer would overflow it.
            raise ParamInvalid(f"parameter '{name}' must be {spec.bounds_text() or f'at most {high}'}, "
                               f"got {value!r}", param=name)
    else:
        try:
            value = float(value)
        except OverflowError:
            raise ParamInvalid(f"parameter '{name}' must be finite", param=name) from None
    if not math.isfinite(value):
        raise ParamInvalid(f"parameter '{name}' must be finite", param=name)
    low_open = spec.open_interval or spec.open_low
    low_ok = spec.low is None or (value > spec.low if low_open else value >= spec.low)
    high_ok = spec.high is None or (value < spec.high if spec.open_interval else value <= spec.high)
    if not (low_ok and high_ok):
        raise ParamInvalid(f"parameter '{name}' must be {spec.bounds_text()}, got {value!r}", param=name)
    return value


def _text(name: str, spec: Param, value: Any) -> str:
    if not isinstance(value, str):
        raise ParamInvalid(f"parameter '{name}' must be text, got {value!r}", param=name)
    if spec.choices is not None and value not in spec.choices:
        if spec.what:
            raise ParamInvalid(f"unknown {spec.what} {value!r} in parameter '{name}'; use {', '.join(spec.choices)}",
                               param=name)
        raise ParamInvalid(f"parameter '{name}' must be one of {', '.join(spec.choices)}, got {value!r}", param=name)
    if spec.max_length is not None and len(value) > spec.max_length:
        raise ParamInvalid(f"parameter '{name}' must be at most {spec.max_length} characters", param=name)
    return value


def _item(name: str, spec: Param, value: Any) -> Any:
    if spec.items is str:
        return _text(name, spec, value)
    if spec.items is list:
        # A row of numbers (a sampled pool's stratum: first rank, last rank, share); what the row
        # means together is the operation's check.
        if not isinstance(value, (list, tuple)) or not value:
            raise ParamInvalid(f"parameter '{name}' must be a list of non-empty lists of numbers, got {value!r}",
                               param=name)
        return [_number(name, spec, v, float) for v in value]
    return _number(name, spec, value, spec.items)


def param_value(name: str, spec: Param, value: Any) -> Any:
    """One given (not None) value checked against its declaration."""
    if spec.type is list:
        what = {int: "whole numbers", float: "numbers", str: "names", list: "lists of numbers"}[spec.items]
        if not isinstance(value, (list, tuple)) or len(value) < max(spec.min_items, 1 if spec.min_items else 0):
            raise ParamInvalid(f"parameter '{name}' must be a non-empty list of {what}" if spec.min_items
                               else f"parameter '{name}' must be a list of {what}", param=name)
        if spec.max_items is not None and len(value) > spec.max_items:
            raise ParamInvalid(f"parameter '{name}' must be a list of at most {spec.max_items} {what}", param=name)
        items = [_item(name, spec, v) for v in value]
        if spec.items is list:
            return items
        return sorted(set(items)) if spec.unique_sorted else list(dict.fromkeys(items))
    if spec.type is dict:
        if not isinstance(value, Mapping):
            raise ParamInvalid(f"parameter '{name}' must be an object of names and values, got {value!r}", param=name)
        return dict(value)
    if spec.type is bool:
        if not isinstance(value, bool):
            raise ParamInvalid(f"parameter '{name}' must be true or false, got {value!r}", param=name)
        return value
    if spec.type is str:
        return _text(name, spec, value)
    return _number(name, spec, value, spec.type)


def params_clean(specs: Mapping[str, Param], params: Mapping | None, *, target: Any = None,
                 owner: str = "this operation") -> dict:
    """The full parameter set: every given value checked, defaults filled in. Raises ParamInvalid
    naming the first parameter refused (an unknown name, a wrong type, a value out of bounds, a
    required one missing)."""
    if params is not None and not isinstance(params, Mapping):
        raise ParamInvalid(f"parameters must be an object of names and values, got {params!r}", param="params")
    params = dict(params or {})
    unknown = sorted(set(params) - set(specs), key=str)
    if unknown:
        raise ParamInvalid(f"unknown parameter(s) {', '.join(map(str, unknown))} for {owner}; "
                           f"known: {', '.join(specs)}", param=str(unknown[0]))
    clean: dict[str, Any] = {}
    for name, spec in specs.items():
        value = params.get(name)
        if value is None:
            if spec.nullable and name in params:
                clean[name] = None
            elif spec.required:
                raise ParamInvalid(f"parameter '{name}' is required", param=name)
            else:
                clean[name] = spec.default_for(target)
            continue
        clean[name] = param_value(name, spec, value)
    return clean


def param_check(spec: Param, *, name: str) -> Callable[[Any], Any]:
    """A one-argument checker for a value of `spec` (for validators that take a callable)."""
    return lambda value: param_value(name, spec, value)
