"""Command-line options from declared parameters (annotation/analysis/params.py): a command that
starts the same work as an operation or an API endpoint takes the same parameters, with the same
types, choices, bounds, defaults and descriptions, read from the one declaration.

Every option defaults to None ("not given"), so a command can tell a value given from the
declared default (`build_pool --add` refuses options a pool keeps from its build); the values
given are checked against the declarations by `declared_clean`, whose errors name the option.
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping
from typing import Any

from annotation.analysis.params import Param, ParamInvalid, params_clean


def option_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def declared_help(spec: Param) -> str:
    """The declaration's description, default and bounds, as --help shows them."""
    text = spec.description.rstrip(".")
    extra = []
    if not spec.required and spec.default not in (None, "", [], {}) and not callable(spec.default):
        extra.append(f"default {spec.default}")
    if spec.bounds_text():
        extra.append(spec.bounds_text())
    if extra:
        text = f"{text} ({'; '.join(extra)})"
    return text.replace("%", "%%")  # argparse formats help text with %


def _json_object(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def add_declared_arguments(parser, params: Mapping[str, Param], *, names: Iterable[str] | None = None) -> None:
    """One option per declared parameter (`names`: only these, in this order): --name-with-dashes,
    typed as declared, choices as declared, a flag as --x / --no-x, a list as several values or as
    text separated by commas (--strategies bandit,sampled), an object as JSON text."""
    for name in names if names is not None else params:
        spec = params[name]
        kwargs: dict[str, Any] = {"dest": name, "default": None, "help": declared_help(spec)}
        if spec.type is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif spec.type is list:
            # Text, split and typed by declared_given: "a,b" and "a b" both give [a, b].
            kwargs |= {"nargs": "+", "metavar": name.upper()}
        elif spec.type is dict:
            kwargs |= {"type": _json_object, "metavar": "JSON"}
        else:
            kwargs["type"] = spec.type
            if spec.choices is not None:
                kwargs["choices"] = spec.choices
        if spec.required:
            kwargs["required"] = True
        parser.add_argument(option_name(name), **kwargs)


def declared_given(opts: Mapping, params: Mapping[str, Param], *, names: Iterable[str] | None = None) -> dict:
    """The declared options the caller gave (not None), a list's text split at commas and typed."""
    given = {}
    for name in names if names is not None else params:
        value = opts.get(name)
        if value is None:
            continue
        spec = params[name]
        if spec.type is list and isinstance(value, (list, tuple)):
            value = [_item(name, spec, part.strip()) for text in value for part in str(text).split(",") if part.strip()]
        given[name] = value
    return given


def _item(name: str, spec: Param, text: str):
    if spec.items is str:
        return text
    from django.core.management.base import CommandError  # see declared_clean

    try:
        return spec.items(text)
    except ValueError:
        what = "whole numbers" if spec.items is int else "numbers"
        raise CommandError(f"{option_name(name)} must be {what} (separated by commas or spaces), got {text!r}") from None


def declared_clean(params: Mapping[str, Param], given: Mapping, *, target: Any = None, owner: str = "this command") -> dict:
    """`given` checked against the declarations, defaults filled in; a refusal is a CommandError
    naming the option (--depth), not the API's parameter name."""
    # Imported here: `evaluate` reads its options from this module before importing Django at all
    # (commands/_evaluate_files.py).
    from django.core.management.base import CommandError

    try:
        return params_clean(params, given, target=target, owner=owner)
    except ParamInvalid as exc:
        message = str(exc)
        if exc.param:
            message = message.replace(f"parameter '{exc.param}'", option_name(exc.param))
        raise CommandError(message) from None
