"""Every registered operation refuses every kind of invalid value of every declared parameter,
naming the parameter: never a 500, never an uncaught exception (the style of scikit-learn's
sklearn/tests/test_public_functions.py, walked over annotation/services/operations/registry.py).

The invalid values are generated from each declaration (its type, bounds, choices, length), so a
new operation or parameter is covered as soon as it is registered; an operation must only add a
row to its area's module in targets/ (a valid target and its required parameters), which the
first test enforces. Each value is sent through the one start service and, where the operation
has a start endpoint, as JSON to that endpoint (as an admin): a 400 whose body names the field.
"""
from __future__ import annotations

import importlib
import json
import math
import pkgutil

import pytest
from rest_framework.test import APIClient

from annotation.analysis.params import REQUIRED, Param
from annotation.models import Job
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.operations.registry import OPERATIONS
from annotation.services.operations.start import operation_start
from tests.annotation.services.operations import targets
from tests.factories import make_pool_with_runs, make_user

HUGE = 10**400  # more digits than a float or a bigint holds
UNKNOWN = "no_such_parameter"


def _world():
    pool, runs = make_pool_with_runs()
    judgment_set = JudgmentSet.objects.create(dataset=pool.dataset, name="published", source_format="qrels",
                                              checksum="x" * 64)
    return pool, runs, judgment_set


def _merged(name: str) -> dict | set:
    """One table of every area's module in targets/ (TARGETS, ENDPOINTS or NOT_A_FIELD)."""
    merged: dict | set = set() if name == "NOT_A_FIELD" else {}
    for info in sorted(pkgutil.iter_modules(targets.__path__), key=lambda i: i.name):
        table = getattr(importlib.import_module(f"{targets.__name__}.{info.name}"), name, None)
        if table:
            overlap = set(merged) & set(table)
            assert not overlap, f"{sorted(overlap)} in two modules of targets/"
            merged |= table
    return merged


#: operation -> f(pool, runs, judgment_set) giving (a valid target, its valid required parameters).
TARGETS = _merged("TARGETS")
#: operation -> (URL of its start endpoint, request field names that differ from the parameter's,
#: other fields the request needs).
ENDPOINTS = _merged("ENDPOINTS")
NOT_A_FIELD = _merged("NOT_A_FIELD")


def _numbers(spec: Param, kind: type) -> list:
    """Numbers the declaration refuses."""
    bad: list = [math.nan, math.inf, -math.inf, HUGE, -HUGE, True, "7", [1], {}]
    if kind is int:
        bad.append(1.5)
    low_open = spec.open_interval or spec.open_low
    if spec.low is not None:
        bad.append(spec.low if low_open else spec.low - 1)
    if spec.high is not None:
        bad.append(spec.high if spec.open_interval else spec.high + 1)
    return bad


def invalid_values(spec: Param) -> list:
    """Values of every kind that `spec` must refuse (None only where the parameter is required)."""
    bad: list = [REQUIRED] if spec.required else []  # REQUIRED here stands for "sent as None"
    if spec.type in (int, float):
        return bad + _numbers(spec, spec.type)
    if spec.type is bool:
        return bad + ["yes", 1, 0.0, [True], {}]
    if spec.type is str:
        bad += [5, 1.5, True, ["a"], {}]
        if spec.choices is not None:
            bad.append("no-such-choice")
        if spec.max_length is not None:
            bad.append("x" * (spec.max_length + 1))
        return bad
    if spec.type is dict:
        return bad + ["text", 5, [1], True]
    assert spec.type is list, spec
    bad += ["1,2", 5, {"a": 1}, True]
    if spec.min_items:
        bad.append([])
    if spec.max_items is not None:
        bad.append([_a_valid_item(spec)] * (spec.max_items + 1))
    if spec.items is str:
        bad += [[5], [None], [["a"]]]
        if spec.choices is not None:
            bad.append(["no-such-choice"])
        if spec.max_length is not None:
            bad.append(["x" * (spec.max_length + 1)])
    else:
        bad += [[v] for v in _numbers(spec, spec.items) if not isinstance(v, (list, dict))] + [[None]]
    return bad


def _a_valid_item(spec: Param):
    if spec.items is str:
        return spec.choices[0] if spec.choices else "a"
    return spec.high if spec.high is not None else (spec.low if spec.low is not None and not spec.open_low else 1)


def _cases():
    for name, operation in OPERATIONS.items():
        for param, spec in operation.params.items():
            for value in invalid_values(spec):
                yield pytest.param(name, param, value, id=f"{name}-{param}-{_short(value)}")
        yield pytest.param(name, UNKNOWN, 1, id=f"{name}-unknown-name")


def _short(value) -> str:
    text = "None" if value is REQUIRED else repr(value)
    return text if len(text) <= 24 else f"{text[:12]}..{len(text)}chars"


CASES = list(_cases())


def test_every_registered_operation_has_a_target_row():
    assert set(TARGETS) == set(OPERATIONS), "add a row to TARGETS for each new operation"
    assert set(ENDPOINTS) <= set(OPERATIONS)


def test_the_cases_cover_every_parameter_with_several_kinds_of_invalid_value():
    params = sum(len(op.params) for op in OPERATIONS.values())
    assert params > 0 and len(CASES) > 8 * params  # about a dozen refused values per parameter


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "param", "value"), CASES)
def test_the_start_service_refuses_it_naming_the_parameter(name, param, value):
    operation = OPERATIONS[name]
    pool, runs, js = _world()
    target, required = TARGETS[name](pool, runs, js)
    params = dict(required) | {param: None if value is REQUIRED else value}
    with pytest.raises(ValueError) as refused:
        operation_start(operation, target=target, params=params, created_by=make_user("admin"))
    assert isinstance(refused.value, operation.error)
    assert getattr(refused.value, "param", None) == param, str(refused.value)
    assert param in str(refused.value)
    assert not Job.objects.exists()


def _text_a_form_may_send(spec: Param, value) -> bool:
    """A form (multipart) sends every value as text, so the API reads "7" as 7 and "yes" as true
    for a number or a flag, as DRF does; the start service behind it takes only the real type."""
    kind = spec.items if spec.type is list else spec.type
    items = value if isinstance(value, list) and spec.type is list else [value]
    return kind in (int, float, bool) and all(isinstance(v, str) for v in items)


def _api_cases():
    for case in CASES:
        name, param, value = case.values
        if name not in ENDPOINTS or param == UNKNOWN or (name, param) in NOT_A_FIELD:
            continue  # DRF serializers ignore unknown fields; the start service refuses them (above)
        if _text_a_form_may_send(OPERATIONS[name].params[param], value):
            continue
        yield case


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "param", "value"), list(_api_cases()))
def test_the_start_endpoint_answers_400_naming_the_field(name, param, value):
    pool, runs, js = _world()
    url, rename, extra = ENDPOINTS[name]
    target, required = TARGETS[name](pool, runs, js)
    field = rename.get(param, param)
    body = {rename.get(k, k): v for k, v in required.items()} | extra(pool, runs, js)
    body[field] = None if value is REQUIRED else value
    # Sent as JSON text: NaN and Infinity as the literals Python writes, a 400-digit integer as is.
    admin = APIClient()
    admin.force_authenticate(make_user("admin"))
    response = admin.post(url(pool, runs, js), data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400, (response.status_code, response.content[:300])
    text = response.content.decode()
    # NaN and Infinity are not JSON: the parser refuses the whole body before any field is read.
    assert field in text or "not JSON compliant" in text, response.content[:300]
    assert not Job.objects.exists()
