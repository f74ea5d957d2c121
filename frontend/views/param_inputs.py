"""Form fields built from declared parameters (annotation/analysis/params.py `Param`), so a page's
form for a report kind or an export format offers exactly what the kind declares: its name, type,
bounds, default and description, with nothing typed twice. The API's request fields come from the
same declarations (api/operations.py) and refuse what the declaration refuses; a page sends what
the admin filled in and shows the API's refusal beside the field it names."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from annotation.analysis.params import Param

#: How each declared type is sent from the page (frontend/static/frontend/reports/reports.js reads it).
_SENT_AS = {int: "int", float: "float", bool: "bool", str: "str"}


@dataclass(frozen=True)
class ParamInput:
    """One form field of a declared parameter."""

    name: str
    label: str
    #: "number", "text", "checkbox" or "select".
    widget: str
    #: How the page types the value it sends: int, float, bool, str, or list-int / list-float / list-str.
    sent_as: str
    value: str
    placeholder: str
    help: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    step: str = ""
    checked: bool = False


def _shown(value) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def param_input(name: str, spec: Param) -> ParamInput:
    """The field of one parameter. An empty field sends nothing, which is the declared default:
    a default that depends on the target (the pool's depth) or that means "none" (null) is left
    empty with the description saying what it is; any other default is filled in."""
    label = name.replace("_", " ")
    help_text = spec.description[:1].upper() + spec.description[1:]
    bounds = spec.bounds_text()
    if bounds:
        help_text += f" ({'each ' if spec.type is list else ''}{bounds})"
    depends = callable(spec.default) or spec.default is None
    value = "" if depends or spec.required else _shown(spec.default)
    placeholder = "default" if callable(spec.default) else "none" if spec.default is None else ""
    if spec.type is bool:
        return ParamInput(name, label, "checkbox", "bool", "", "", help_text, checked=bool(spec.default))
    if spec.type is list:
        return ParamInput(name, label, "text", f"list-{_SENT_AS.get(spec.items, 'str')}", value,
                          placeholder or "comma-separated", help_text + ", separated by commas")
    if spec.choices is not None:
        return ParamInput(name, label, "select", "str", value, placeholder, help_text, choices=spec.choices)
    if spec.type in (int, float):
        # Open bounds are refused by the API with their reason; the browser keeps to the closed ones.
        return ParamInput(name, label, "number", _SENT_AS[spec.type], value, placeholder, help_text,
                          low=None if spec.open_interval or spec.open_low else spec.low,
                          high=None if spec.open_interval else spec.high,
                          step="1" if spec.type is int else "any")
    return ParamInput(name, label, "text", "str", value, placeholder, help_text)


def param_inputs(params: Mapping[str, Param]) -> list[ParamInput]:
    """The fields of every declared parameter, in the declaration's order (dict parameters, whose
    contents only the operation's check reads, have no field)."""
    return [param_input(name, spec) for name, spec in params.items() if spec.type is not dict]
