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

