"""Raters: accounts, access to pools, pausing, training state."""
from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max

from annotation import roles
from annotation.formats.csv_uploads import csv_rows
from annotation.formats.errors import IssueCollector
from annotation.models import Label, Lease, Pool, PooledPair, PoolMembership, RaterProfile
from annotation.services.queue.leases import lease_release
from annotation.services.accounts.invitations import invitation_create
from annotation.services.accounts.users import user_create


def _next_pseudonym() -> int:
    return (RaterProfile.objects.aggregate(m=Max("pseudonym"))["m"] or 1000) + 1


def rater_profile(*, user) -> RaterProfile:
    """The rater's profile, created on first use (a rater made through Django admin has none yet)."""
    profile = RaterProfile.objects.filter(user=user).first()
    if profile:
        return profile
    for _ in range(5):
        try:
            with transaction.atomic():
                return RaterProfile.objects.create(user=user, pseudonym=_next_pseudonym())
        except IntegrityError:
            existing = RaterProfile.objects.filter(user=user).first()
            if existing:
                return existing
    raise RuntimeError("could not allocate a rater pseudonym")


@dataclass(frozen=True)
class NewRater:
    user: object
    invitation_token: str | None  # the one-use link's token when no password was given; shown once


@transaction.atomic
def rater_create(*, username: str, password: str | None = None, email: str = ""):
    user = user_create(username=username, password=password, role=roles.RATER, email=email)
    rater_profile(user=user)
    return user


@transaction.atomic
def rater_create_or_invite(*, username: str, password: str | None = None, email: str = "", created_by=None) -> NewRater:
    """A rater who can log in: with the password given, or else with an invitation to set their own
    (never a generated password nobody is shown)."""
    user = rater_create(username=username, password=password, email=email)
    token = None if password else invitation_create(user=user, created_by=created_by).token
    return NewRater(user=user, invitation_token=token)


def raters_import_csv(*, content: bytes, source_name: str = "raters.csv") -> list:
    """The accounts raters_import makes (for callers that hand no links out: they are made anyway,
    and an admin's reset issues new ones)."""
    return [new.user for new in raters_import(content=content, source_name=source_name)]


def raters_import(*, content: bytes, source_name: str = "raters.csv", created_by=None) -> list[NewRater]:
    """Creates raters from a CSV with a header `username[,email][,password]`; all or none.
    A row without a password gets an invitation link instead (its token is in the answer, once)."""
    issues = IssueCollector(source_name)
    User = get_user_model()
    rows, seen = [], {}
    for line, row in csv_rows(content, issues, required=("username",), optional=("email", "password")):
        username = row["username"]
        if not username:
            issues.add(line, "username", "missing user name")
            continue
        # The account's own field rules (length, allowed characters, e-mail syntax), checked here
        # so each refusal names its line and field instead of failing on the database.
        bad = [(name, problem) for name in ("username", "email") if (problem := _field_problem(User, name, row.get(name, "")))]
        for name, problem in bad:
            issues.add(line, name, problem)
        if bad:
            continue
        if username in seen:
            issues.add(line, "username", f"'{username}' appears twice (first on line {seen[username]})")
            continue
        seen[username] = line
        rows.append((line, username, row.get("email", ""), row.get("password", "")))
    taken = set(User.objects.filter(username__in=[r[1] for r in rows]).values_list("username", flat=True))
    for line, username, _, _ in rows:
        if username in taken:
            issues.add(line, "username", f"a user named '{username}' already exists")
    if not rows and not issues:
        issues.add(None, None, "the file lists no raters")
    issues.raise_if_any()
    with transaction.atomic():
        return [rater_create_or_invite(username=username, password=password or None, email=email, created_by=created_by)
                for _, username, email, password in rows]


def _field_problem(user_model, name: str, value: str) -> str | None:
    try:
        user_model._meta.get_field(name).clean(value, None)
    except ValidationError as exc:
        return " ".join(exc.messages)
    return None


def rater_password_reset(*, user, created_by=None) -> str:
    """An admin's reset: a new invitation link for an existing rater (earlier unused links stop
    working; the current password keeps working until the rater sets a new one). Returns the token."""
    if not roles.is_rater(user):
        raise ValueError(f"'{user.username}' is not an active rater")
    return invitation_create(user=user, created_by=created_by).token


def rater_set_paused(*, user, paused: bool) -> RaterProfile:
    profile = rater_profile(user=user)
    profile.paused = paused
    profile.save(update_fields=["paused"])
    return profile


def memberships_grant(*, pool: Pool, users) -> int:
    return access_grant(PoolMembership, users, pool=pool)


@transaction.atomic
def access_grant(membership_model, users, **target) -> int:
    """Gives raters access to a pool or a ranking study (`target`); all or none, and only raters.
    Returns how many memberships are new."""
    added = 0
    for user in users:
        if not roles.is_rater(user):
            raise ValueError(f"'{user.username}' is not a rater")
        rater_profile(user=user)
        _, created = membership_model.objects.get_or_create(rater=user, **target)
        added += created
    return added


def membership_revoke(*, pool: Pool, user) -> None:
    PoolMembership.objects.filter(pool=pool, rater=user).delete()


@transaction.atomic
def training_reset(*, pool: Pool, user) -> PoolMembership:
    """Lets a rater take the training queue again: their training answers are removed, and the
    pairs they hold in the pool go back to the queue (their page would otherwise keep judging
    them, past the training gate)."""
    membership = PoolMembership.objects.select_for_update().get(pool=pool, rater=user)
    Label.objects.filter(rater=user, pair__pool=pool, pair__role=PooledPair.Role.TRAINING).delete()
    held = Lease.objects.filter(rater=user, pair__pool=pool, state=Lease.State.ACTIVE).values_list("token", flat=True)
    for token in list(held):
        lease_release(token=token, rater=user)
    membership.training, membership.training_score = PoolMembership.Training.PENDING, None
    membership.save(update_fields=["training", "training_score"])
    return membership
