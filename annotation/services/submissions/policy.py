"""A release's submission policy: an admin's choice whether visitors without an account may submit
runs to it (off until changed)."""
from __future__ import annotations

from annotation.models import Release, ReleaseSubmissionPolicy


def submission_policy_set(*, release: Release, anonymous_allowed: bool) -> ReleaseSubmissionPolicy:
    policy, _ = ReleaseSubmissionPolicy.objects.update_or_create(release=release,
                                                                 defaults={"anonymous_allowed": anonymous_allowed})
    return policy
