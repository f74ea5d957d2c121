"""An admin's configuration of a pool's crowd study and of its quality rule."""
from __future__ import annotations

from django.db import transaction

from annotation.models import CrowdStudy, Pool, PooledPair, QualityRule
# The rule's and the study's dependencies on other settings are checked with every other pool
# setting's, in one place; imported here for the pages and views that save the rule.
from annotation.services.pools.settings_checks import crowd_study_warnings, quality_rule_warnings  # noqa: F401

STUDY_FIELDS = ("platform", "title", "description", "completion_code", "quota_pairs", "quota_minutes", "consent_text",
                "guidelines_extra", "training_required", "idle_timeout_seconds", "is_open", "places")
RULE_FIELDS = ("enabled", "min_gold_answers", "min_gold_accuracy", "set_aside_labels", "too_fast_seconds")


class StudyInvalid(ValueError):
    """The configuration cannot be saved; `field` names the setting at fault."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


def _check_study(study: CrowdStudy) -> None:
    if study.platform not in CrowdStudy.Platform.values:
        raise StudyInvalid("platform", "platform must be 'prolific' or 'mturk'")
    if study.quota_pairs is None and study.quota_minutes is None:
        raise StudyInvalid("quota_pairs", "give a quota: a number of pairs, of minutes, or both")
    for field in ("quota_pairs", "quota_minutes"):
        if getattr(study, field) is not None and getattr(study, field) < 1:
            raise StudyInvalid(field, f"{field} must be at least 1")
    if study.places is not None and (isinstance(study.places, bool) or not isinstance(study.places, int) or study.places < 1):
        raise StudyInvalid("places", "places must be a whole number of at least 1, or empty for no cap")
    if study.platform == CrowdStudy.Platform.PROLIFIC and not study.completion_code.strip():
        raise StudyInvalid("completion_code", "a Prolific study needs the completion code Prolific gave you")
    if study.completion_code and not study.completion_code.replace("-", "").replace("_", "").isalnum():
        raise StudyInvalid("completion_code", "the completion code may hold letters, digits, '-' and '_' only")
    if not study.consent_text.strip():
        raise StudyInvalid("consent_text", "workers must be shown a consent text")
    if study.idle_timeout_seconds < 30:
        raise StudyInvalid("idle_timeout_seconds", "idle_timeout_seconds must be at least 30")
    if study.training_required and not PooledPair.objects.filter(pool_id=study.pool_id, role=PooledPair.Role.TRAINING).exists():
        raise StudyInvalid("training_required", "the pool has no training pairs: add some, or do not require training")


@transaction.atomic
def study_save(*, pool: Pool, **settings) -> CrowdStudy:
    """Creates the pool's study, or changes the settings given (the link's token stays)."""
    unknown = set(settings) - set(STUDY_FIELDS)
    if unknown:
        raise StudyInvalid(sorted(unknown)[0], f"unknown setting '{sorted(unknown)[0]}'")
    study = CrowdStudy.objects.select_for_update().filter(pool=pool).first() or CrowdStudy(pool=pool)
    for field, value in settings.items():
        setattr(study, field, value)
    _check_study(study)
    study.save()
    return study


@transaction.atomic
def quality_rule_save(*, pool: Pool, **settings) -> QualityRule:
    unknown = set(settings) - set(RULE_FIELDS)
    if unknown:
        raise StudyInvalid(sorted(unknown)[0], f"unknown setting '{sorted(unknown)[0]}'")
    rule = QualityRule.objects.select_for_update().filter(pool=pool).first() or QualityRule(pool=pool)
    for field, value in settings.items():
        setattr(rule, field, value)
    if not 0 <= rule.min_gold_accuracy <= 1:
        raise StudyInvalid("min_gold_accuracy", "min_gold_accuracy must be between 0 and 1")
    if rule.min_gold_answers < 1:
        raise StudyInvalid("min_gold_answers", "min_gold_answers must be at least 1")
    if rule.too_fast_seconds < 0:
        raise StudyInvalid("too_fast_seconds", "too_fast_seconds must not be negative")
    rule.save()
    return rule
