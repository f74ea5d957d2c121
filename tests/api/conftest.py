import pytest
from rest_framework.test import APIClient

from tests.factories import make_user


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def as_role(db):
    """as_role('admin' | 'rater' | 'researcher' | None) -> an APIClient signed in with that role."""

    def client(role):
        c = APIClient()
        if role is not None:
            c.force_authenticate(make_user(role))
        return c

    return client


@pytest.fixture
def run_jobs(django_capture_on_commit_callbacks):
    """Context manager: jobs enqueued inside it run (eagerly) when it exits, as after a commit."""

    def ctx():
        return django_capture_on_commit_callbacks(execute=True)

    return ctx


def pytest_terminal_summary(terminalreporter):
    """How much the API fuzz run covered (tests/api/test_fuzz.py), so a CI log shows it."""
    import sys

    from django.db import connection

    test_fuzz = sys.modules.get("tests.api.test_fuzz")  # only when this run collected it
    calls = {role: n for role, n in test_fuzz.CALLS.items() if role in test_fuzz.FUZZ_CALLERS} if test_fuzz else {}
    if sum(calls.values()):
        by_role = ", ".join(f"{role} {n}" for role, n in sorted(calls.items()))
        big = test_fuzz.CALLS["big-integer cases"]
        # A request is counted once it has passed the not-a-server-error check.
        terminalreporter.write_line(f"API fuzz on {connection.vendor}: {sum(calls.values())} requests without a 5xx "
                                    f"({by_role}; "
                                    f"{big} cases with integers beyond 64 bits)")
