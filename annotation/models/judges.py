"""Machine judges: an automatic assessor's verdicts (a language or vision-language model), imported
to be measured against people.

They live in their own tables, apart from `Label`, on purpose: the queue, resolution, agreement,
exports and rater quality control read `Label` only, so a machine verdict can never be counted as a
human one, whatever those rules become.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .datasets import Caption, Clip, Dataset

__all__ = ["MachineJudge", "MachineJudgment", "JudgeEndpoint", "JudgeEndpointChange", "JudgeCall"]


class MachineJudge(models.Model):
    """One import of one automatic assessor's judgments, attached to a pool (judging its pairs) or
    to a judgment set (judging the pairs that set has verdicts on)."""

    class Kind(models.TextChoices):
        MACHINE = "machine"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="machine_judges")
    pool = models.ForeignKey("annotation.Pool", on_delete=models.CASCADE, related_name="machine_judges",
                             null=True, blank=True)
    judgment_set = models.ForeignKey("annotation.JudgmentSet", on_delete=models.CASCADE, related_name="machine_judges",
                                     null=True, blank=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.MACHINE, editable=False)
    name = models.CharField(max_length=200)
    model_name = models.CharField(max_length=300, blank=True, help_text="The model the file names (e.g. gpt-4o).")
    prompt_version = models.CharField(max_length=300, blank=True, help_text="Prompt or version the file names.")
    source_name = models.CharField(max_length=500, blank=True)
    checksum = models.CharField(max_length=64, help_text="SHA-256 of the imported file.")
    counts = models.JSONField(default=dict, blank=True, help_text="Records read, judgments by label.")
    # A judge run by the platform (runner): the endpoint it asked and the job that ran it.
    endpoint = models.ForeignKey("annotation.JudgeEndpoint", on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="runs")
    job = models.ForeignKey("annotation.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="machinejudge_unique_name"),
            models.CheckConstraint(condition=(Q(pool__isnull=False) & Q(judgment_set__isnull=True))
                                   | (Q(pool__isnull=True) & Q(judgment_set__isnull=False)),
                                   name="machinejudge_pool_xor_set"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def ran_by_platform(self) -> bool:
        """A run of a registered judge (source_name then holds the URL it asked), not an imported file
        (whose SHA-256 a run never has)."""
        return self.endpoint_id is not None or not self.checksum


class MachineJudgment(models.Model):
    """The machine's verdict on one caption–clip pair, with its score when the file gives one."""

    class Label(models.TextChoices):
        RELEVANT = "relevant"
        NOT_RELEVANT = "not_relevant"

    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="judgments")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=14, choices=Label.choices)
    score = models.FloatField(null=True, blank=True, help_text="The model's confidence or grade, as the file gives it.")
    source_record = models.CharField(max_length=100, blank=True, help_text="Where in the file, e.g. 'line 12'.")
    # For a judge run by the platform: where `score` came from ('logprob': the verdict token's
    # probability; 'stated': the model's stated confidence). Blank for imported files.
    score_source = models.CharField(max_length=10, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["judge", "caption", "clip"], name="machinejudgment_unique_pair")]


#: Pairs one judge run asks at once: a thread and a connection each, and up to an answer's byte cap
#: held by each. 16 keeps a worker's share bounded (16 MiB of answers at the default cap) and is
#: already more than a single GPU server answers in parallel; hosted APIs rate-limit well below it.
#: Declared here, with the column it bounds; the runner and the API read it from here.
JUDGE_CONCURRENCY_MAX = 16


class JudgeEndpoint(models.Model):
    """A machine judge the platform runs itself: an OpenAI-compatible chat-completions server and
    how to ask it (see annotation/services/machine_judges/runner/).

    The API key is never stored: `key_env` names an environment variable REJUDGE_JUDGE_KEY_<NAME>
    of the worker that runs the judge; its value is the key, or else <that name>_FILE names a file
    holding it (the convention of SECRET_KEY / SECRET_KEY_FILE)."""

    name = models.CharField(max_length=100, unique=True)
    base_url = models.CharField(max_length=500, help_text="http(s)://host[:port][/prefix]; /v1/chat/completions is added.")
    model = models.CharField(max_length=300, help_text="The model name the server serves (sent as `model`).")
    # formats/judge_chat.DEFAULT_PROMPT (models import no formats; a test keeps the two equal).
    prompt_version = models.CharField(max_length=40, default="v2")
    frames_per_clip = models.PositiveSmallIntegerField(default=8)
    concurrency = models.PositiveSmallIntegerField(default=4)
    max_requests = models.PositiveIntegerField(null=True, blank=True, help_text="Per run; HTTP requests, retries included.")
    max_tokens = models.PositiveBigIntegerField(null=True, blank=True, help_text="Per run; prompt + completion tokens.")
    temperature = models.FloatField(default=0.0)
    timeout_seconds = models.FloatField(default=120.0)
    max_retries = models.PositiveSmallIntegerField(default=4)
    key_env = models.CharField(max_length=100, blank=True,
                               help_text="Name of the environment variable holding the key (or its _FILE twin).")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(frames_per_clip__gte=1) & Q(frames_per_clip__lte=64),
                                   name="judgeendpoint_frames_range"),
            models.CheckConstraint(condition=Q(concurrency__gte=1) & Q(concurrency__lte=JUDGE_CONCURRENCY_MAX),
                                   name="judgeendpoint_concurrency_range"),
            models.CheckConstraint(condition=Q(timeout_seconds__gt=0), name="judgeendpoint_timeout_positive"),
        ]

    def __str__(self) -> str:
        return self.name


class JudgeEndpointChange(models.Model):
    """The audit trail of where a registered judge sends its requests and which key it sends: one
    row per change of `base_url` or `key_env` (and per value given at registration, `old_value`
    empty). Kept when the judge is removed: it is evidence."""

    endpoint = models.ForeignKey(JudgeEndpoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="changes")
    endpoint_name = models.CharField(max_length=100)
    field = models.CharField(max_length=20)
    old_value = models.CharField(max_length=500, blank=True)
    new_value = models.CharField(max_length=500, blank=True)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    changed_at = models.DateTimeField()

    class Meta:
        ordering = ["changed_at", "id"]
        indexes = [models.Index(fields=["endpoint", "changed_at"], name="judgeendpointchange_time")]


class JudgeCall(models.Model):
    """One pair asked of a machine judge: the cache that makes a rerun or a resumed job send nothing
    twice (an `ok` row per endpoint that answered, model, prompt version, pair and frame sampling),
    and the record of what each run spent (requests and tokens, errors included).

    Written on its own connection as each answer arrives, outside the job's transaction, so a
    worker killed mid-run keeps what it paid for."""

    class Status(models.TextChoices):
        OK = "ok"
        ERROR = "error"

    # Who answered: the SHA-256 of the judge's normalised base URL and key variable
    # (runner/endpoints.judge_endpoint_identity). Rows written before it was kept have '' and are
    # reused by no run (migration 0016).
    answered_by = models.CharField(max_length=64, blank=True, default="")
    model = models.CharField(max_length=300)
    prompt_version = models.CharField(max_length=40)
    sampling = models.CharField(max_length=100, help_text="Frame sampling spec (count, span, size, quality).")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    clip = models.ForeignKey(Clip, on_delete=models.CASCADE, related_name="+")
    endpoint = models.ForeignKey(JudgeEndpoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="calls")
    job = models.ForeignKey("annotation.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    status = models.CharField(max_length=5, choices=Status.choices)
    relevant = models.BooleanField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True, help_text="P(relevant) from the answer.")
    score_source = models.CharField(max_length=10, blank=True)
    requests = models.PositiveIntegerField(default=1, help_text="HTTP requests sent for this pair, retries included.")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["answered_by", "model", "prompt_version", "sampling", "caption", "clip"],
                                    condition=Q(status="ok"), name="judgecall_unique_ok_answered_by"),
        ]
        indexes = [models.Index(fields=["job"], name="judgecall_job")]
