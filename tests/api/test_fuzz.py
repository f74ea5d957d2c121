"""Property-based fuzzing of every API operation against the project's own OpenAPI schema: whatever
schemathesis derives from /api/v1/schema/ (valid bodies, and invalid ones: wrong types, missing
fields, out-of-range values, odd strings), no operation may answer with a 5xx.

The WSGI app runs in-process on the test database, on a platform with data in it (tests/api/
api_world.py), and every other generated case has its ids replaced by ids of objects that exist,
so calls reach the views' real code rather than stopping at a 404 (the rest keep the odd ids
schemathesis chose: zero, negative, huge, not numbers). Each operation is called
with the token of every caller the permission table admits (admin, rater; an operation neither may
call is fuzzed as admin). The budget is small and fixed (MAX_EXAMPLES per operation, a fixed seed
through derandomize), so a run is reproducible and takes about a minute and a half.

A failure prints the request that got the 5xx (as a curl command). Fix it; do not exclude it.
"""
from __future__ import annotations

import collections
import itertools
import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tests.api.api_world import ROLES, build_world
from tests.api.test_permission_table import ALLOW, PERMISSIONS

# On both databases: CI's SQLite pass (REJUDGE_ONLY_DATABASE_TESTS) runs it too, where ids beyond
# 64 bits used to raise OverflowError (a 500) that PostgreSQL never showed (issue 22, finding 6).
pytestmark = [pytest.mark.django_db]

# A deeper local search: REJUDGE_FUZZ_EXAMPLES=200 bash scripts/test.sh tests/api/test_fuzz.py
MAX_EXAMPLES = int(os.environ.get("REJUDGE_FUZZ_EXAMPLES", "20"))
CALLS: collections.Counter = collections.Counter()  # requests sent, per caller: printed after the run
# Integers beyond what the database holds, put in every fourth case (the schema's strategies
# rarely draw past 2**63): the first just over the 64-bit range, the other 21 digits long.
BIG_INTEGERS = (2**63, 10**20)
FUZZ_CALLERS = ("admin", "rater")

schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", get_wsgi_application())


def callers(operation) -> list[str]:
    row = PERMISSIONS.get(f"{operation.method.upper()} {operation.path}")
    if row is None:  # an operation the permission table does not know yet (its own test says so)
        return list(FUZZ_CALLERS)
    admitted = [role for role in FUZZ_CALLERS if row[ROLES.index(role)] == ALLOW]
    return admitted or ["admin"]


def _with_real_ids(case, world):
    """The case with its path ids, and the ids its body names, pointing at objects that exist."""
    path = case.operation.path
    if case.path_parameters:
        real = world.path_values(path)
        case.path_parameters = {k: real.get(k, v) for k, v in case.path_parameters.items()}
    if isinstance(case.body, dict):
        ids = world.ids
        lease = ids["ranking_lease"] if "ranking" in path else ids["lease"]
        real = {"dataset": ids["dataset"], "run": ids["run"], "runs": [r.pk for r in world.runs],
                "raters": [ids["rater"]], "lease_id": lease, "order": ids["ranking_order"]}
        case.body = {k: real.get(k, v) for k, v in case.body.items()}
    return case


def _big(value, n: int):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return BIG_INTEGERS[n % 2]
    if isinstance(value, list):
        return [_big(v, n) for v in value]
    return value


def _with_big_integers(case, n: int):
    """The case with every integer of its path, query and body (lists of ids too) beyond 64 bits."""
    if case.path_parameters:
        case.path_parameters = {k: _big(v, n) for k, v in case.path_parameters.items()}
    if isinstance(case.query, dict):
        case.query = {k: _big(v, n) for k, v in case.query.items()}
    if isinstance(case.body, dict):
        case.body = {k: _big(v, n) for k, v in case.body.items()}
    return case


@pytest.fixture
def fuzz_world(settings):
    # Rate limits would turn most calls into 429s and hide what the views do.
    settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {
        "DEFAULT_THROTTLE_RATES": {scope: None for scope in settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_RATES", {})}}
    # The raw WSGI handler closes "old" connections around each request, which would close the
    # test's own connection inside its transaction; Django's test client unhooks this the same way.
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    world = build_world()
    world.cases = itertools.count()
    yield world
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_no_operation_answers_with_a_server_error(case, fuzz_world):
    # Taking turns (not drawn) so that the coverage phase's fixed cases get real ids and big
    # integers too: half the cases real ids, a quarter integers beyond 64 bits, a quarter as drawn.
    n = next(fuzz_world.cases)
    if n % 2:
        _with_real_ids(case, fuzz_world)
    elif n % 4 == 2:
        _with_big_integers(case, n // 4)
        CALLS["big-integer cases"] += 1
    for role in callers(case.operation):
        case.call_and_validate(headers=fuzz_world.headers(role), checks=[not_a_server_error])
        CALLS[role] += 1
