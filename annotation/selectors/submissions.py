"""Submissions to a release (services/submissions): who may submit and who sees which.

The one rule, read by the API and the release page:
- admins submit to any release and see every submission;
- a reader of releases (annotation/roles.py may_read_releases: researchers, and with
  REJUDGE_RELEASES_PUBLIC anyone but raters) submits to a release they can read and sees their own;
- anyone else but a rater (a visitor without an account, an account in no role) submits only where
  an admin allowed anonymous submissions on that release (ReleaseSubmissionPolicy), and not while it
  is held back from the public (selectors/release_access.py), and sees none;
- raters never (a release holds resolved labels, which may be gold answers of a pool they judge).
"""
from __future__ import annotations

from django.db.models import QuerySet

from annotation import roles
from annotation.models import Release, ReleaseSubmissionPolicy, Submission
from annotation.selectors.release_access import releases_held_back


def release_anonymous_submissions_allowed(*, release_id: int) -> bool:
    return ReleaseSubmissionPolicy.objects.filter(release_id=release_id, anonymous_allowed=True).exists()


def submission_readers_may_submit(user) -> bool:
    """Whether `user` submits as a reader (their submissions kept under their name and shown to them)."""
    return roles.is_admin(user) or (bool(getattr(user, "is_authenticated", False)) and roles.may_read_releases(user))


def submission_release_for(*, user, release_id: int) -> Release | None:
    """The release `user` may submit to, or None (not there, not readable, or not open to them)."""
    if roles.is_rater(user) and not roles.is_admin(user):
        return None
    if submission_readers_may_submit(user):
        return roles.releases_readable_by(user, Release.objects.select_related("dataset")).filter(pk=release_id).first()
    if release_anonymous_submissions_allowed(release_id=release_id):
        release = Release.objects.select_related("dataset").filter(pk=release_id).first()
        # A release held back from the public while a campaign runs (its verdicts may be gold
        # answers there) takes no anonymous run: a run's scores and holes would tell its verdicts.
        if release is not None and release.pk not in releases_held_back([release]):
            return release
    return None


def submissions_visible_to(user, *, release: Release | None = None) -> QuerySet:
    """Admins: every submission; a reader: their own; anyone else: none."""
    rows = Submission.objects.select_related("release", "submitted_by", "job")
    if release is not None:
        rows = rows.filter(release=release)
    if roles.is_admin(user):
        return rows
    if submission_readers_may_submit(user):
        return rows.filter(submitted_by=user)
    return rows.none()
