"""Request fields built from an operation's declared parameters (annotation/analysis/params.py), so
a start endpoint validates, names the field in its errors and describes itself in the OpenAPI
schema from the one declaration: the DRF field carries the type, bounds and `description` for
drf-spectacular, and its validator is the declaration's own check (open bounds, finiteness, a
list's items), so the API refuses exactly what the start service would.

A refusal of the start service (the area's error) that names a declared parameter becomes a 400
keyed by that field (`refused`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotation.analysis.params import BIGGEST_WHOLE, Param, ParamInvalid, param_value


class _DeclaredCheck:
    """The declaration's check as a DRF validator (what DRF's field did not already refuse)."""

    def __init__(self, name: str, spec: Param) -> None:
        self.name, self.spec = name, spec

    def __call__(self, value) -> None:
        if value is None or (value == "" and not self.spec.required):
            return  # "the default": a form's empty field (a "Guess from the file" choice) chooses nothing
        try:
            param_value(self.name, self.spec, value)
        except ParamInvalid as exc:
            raise serializers.ValidationError(str(exc)) from None


def _strict(field_class: type, name: str, spec: Param) -> type:
    """`field_class` that takes a JSON value only of the declared type (DRF would read 5 as "5",
    1 as true, 1.0 as 1). Text is still parsed as DRF does: a form sends every value as text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            try:
                param_value(name, spec, data)
            except ParamInvalid as exc:
                raise serializers.ValidationError(str(exc)) from None
        return field_class.to_internal_value(self, data)

    return type(f"Declared{field_class.__name__}", (field_class,), {"to_internal_value": to_internal_value})


def _scalar(spec: Param, kind: type, name: str, **common) -> serializers.Field:
    field = _field_class(spec, kind)
    scalar = spec if spec.type is kind else replace(spec, type=kind)
    return _strict(type(field), name, scalar)(**_field_kwargs(spec, kind), **common)


def _field_class(spec: Param, kind: type) -> serializers.Field:
    return (serializers.BooleanField() if kind is bool else serializers.IntegerField() if kind is int
            else serializers.FloatField() if kind is float else serializers.ChoiceField(choices=[])
            if spec.choices is not None else serializers.CharField())


def _field_kwargs(spec: Param, kind: type) -> dict:
    # The schema states both ends (an open end as its limit: the declaration's check, run as the
    # field's validator, refuses the limit itself).
    inclusive_low, inclusive_high = spec.low, spec.high
    if kind is bool:
        return {}
    if kind is int:
        return {"min_value": inclusive_low,
                "max_value": inclusive_high if inclusive_high is not None else BIGGEST_WHOLE}
    if kind is float:
        return {"min_value": inclusive_low, "max_value": inclusive_high}
    if spec.choices is not None:
        return {"choices": list(spec.choices)}
    return {"max_length": spec.max_length}


def param_field(name: str, spec: Param, *, source: str | None = None, allow_null: bool | None = None) -> serializers.Field:
    """The DRF field of one declared parameter: optional unless required, null allowed (unless
    `allow_null` says otherwise) where the declaration says None means something (nullable) or the
    default."""
    help_text = spec.description
    if not spec.required and spec.default is not None and not callable(spec.default):
        help_text = f"{help_text} Default: {spec.default}."
    bounds = spec.bounds_text()
    if bounds:
        help_text = f"{help_text} Must be {bounds}."
    common = {"required": spec.required, "help_text": help_text}
    if not spec.required:
        common["allow_null"] = True if allow_null is None else allow_null
        if spec.type is str:
            common["allow_blank"] = True
    if source:
        common["source"] = source
    validators = [_DeclaredCheck(name, spec)]
    if spec.type is list:
        child = (serializers.ListField(child=_scalar(spec, float, name, required=True), min_length=1)
                 if spec.items is list else _scalar(spec, spec.items, name, required=True))
        return serializers.ListField(child=child, min_length=spec.min_items or None, max_length=spec.max_items,
                                     validators=validators, **common)
    if spec.type is dict:
        return serializers.DictField(**common)
    return _scalar(spec, spec.type, name, validators=validators, **common)


def declared_serializer(name: str, params: Mapping[str, Param], *, rename: Mapping[str, str] | None = None,
                        exclude: Iterable[str] = (), base: type = serializers.Serializer,
                        extra: Mapping[str, serializers.Field] | None = None) -> type:
    """A Serializer class whose fields are the declared parameters (`rename`: param -> request
    field name, the param stays its source; `exclude`: declared but not taken from this request)
    plus `extra` fields that are not parameters (the target's id, an upload)."""
    rename = dict(rename or {})
    fields: dict[str, serializers.Field] = {}
    for param, spec in params.items():
        if param in exclude:
            continue
        field_name = rename.get(param, param)
        fields[field_name] = param_field(param, spec, source=param if field_name != param else None)
    fields.update(extra or {})
    return type(name, (base,), fields)


def given(validated: Mapping) -> dict:
    """The validated values the client gave (None, or a form's empty text, = "the default", left to
    the declaration)."""
    return {name: value for name, value in validated.items() if value is not None and value != ""}


def refused(exc: Exception, *, rename: Mapping[str, str] | None = None) -> ValidationError:
    """A start refused by the service, as a 400 naming the parameter when one is to blame."""
    param = getattr(exc, "param", None)
    if param:
        return ValidationError({(rename or {}).get(param, param): [str(exc)], "detail": str(exc)})
    return ValidationError({"detail": str(exc)})
