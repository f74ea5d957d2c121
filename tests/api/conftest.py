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

    test_fuzz = sys.modules.get("tests.api.test_fuzz")  # only when this run collected it
    if test_fuzz and sum(test_fuzz.CALLS.values()):
        calls = ", ".join(f"{role} {n}" for role, n in sorted(test_fuzz.CALLS.items()))
        terminalreporter.write_line(f"API fuzz: {sum(test_fuzz.CALLS.values())} requests without a 5xx ({calls})")
