"""Tasks, their config versions, rounds, contexts and task proposals."""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import models
from django.db.models import Q

from tasks.config import TaskConfig, parse_task_config


class ContextSampling(models.TextChoices):
    LEAST_USED = "least_used", "Least used first (random tie-break)"
    UNIFORM = "uniform", "Uniform at random"
    LEAST_FOOLED = "least_fooled", "Least fooled first"
    FAILED_VALIDATION = "failed_validation", "Contexts whose examples all failed validation"


class Task(models.Model):
    code = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    instructions = models.TextField(blank=True, help_text="Markdown, shown to workers.")
    owners = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="owned_tasks", blank=True
    )
    hidden = models.BooleanField(default=False, help_text="Hidden tasks are not listed publicly.")
    active = models.BooleanField(default=True, help_text="Inactive tasks take no new examples.")
    accepts_models = models.BooleanField(
        default=True, help_text="Signed-in users may register models for this task."
    )
    num_matching_validations = models.PositiveSmallIntegerField(
        default=3, help_text="Matching verdicts that settle an example."
    )
    validate_non_fooling = models.BooleanField(
        default=False, help_text="Also queue examples that did not fool the model."
    )
    context_sampling = models.CharField(
        max_length=32, choices=ContextSampling.choices, default=ContextSampling.LEAST_USED
    )
    context_sampling_tag = models.CharField(
        max_length=100, blank=True, help_text="Only sample contexts with this tag (optional)."
    )
    current_config = models.ForeignKey(
        "TaskConfigVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def config(self) -> TaskConfig | None:
        """The parsed current config (parsed once per version object)."""
        if self.current_config_id is None:
            return None
        return self.current_config.parsed


# Parsed configs shared by every TaskConfigVersion object of the process. A request loads
# fresh model instances, so a per-instance cache alone would parse the YAML again on every
# create, status and validate request. Each version's entry holds the text it was parsed
# from and is used only for an equal text: a version edited in place (allowed while no data
# refers to it) is parsed again. ``TaskConfig`` is a frozen dataclass, so sharing one object
# between requests and threads is safe.
PARSED_CACHE_SIZE = 256
_parsed_cache: dict[int | None, tuple[str, TaskConfig]] = {}
_parsed_cache_lock = threading.Lock()


def parsed_config_cached(version_id: int | None, yaml_text: str) -> TaskConfig:
    """Return ``parse_task_config(yaml_text)``, parsed once per (version, text) per process."""
    entry = _parsed_cache.get(version_id)
    if entry is not None and entry[0] == yaml_text:
        return entry[1]
    config = parse_task_config(yaml_text)  # raises TaskConfigError: nothing is cached
    with _parsed_cache_lock:
        _parsed_cache.pop(version_id, None)
        while len(_parsed_cache) >= PARSED_CACHE_SIZE:
            _parsed_cache.pop(next(iter(_parsed_cache)))
        _parsed_cache[version_id] = (yaml_text, config)
    return config


class TaskConfigVersion(models.Model):
    """One version of a task's YAML; data records the version it was made under."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="config_versions")
    version = models.PositiveIntegerField()
    yaml_text = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["task", "version"], name="unique_task_config_version")
        ]

    def __str__(self) -> str:
        return f"{self.task.code} v{self.version}"

    @property
    def parsed(self) -> TaskConfig:
        """The parsed config (once per object, and once per version and text per process)."""
        cached = getattr(self, "_parsed", None)
        if cached is None:
            cached = parsed_config_cached(self.pk, self.yaml_text)
            self._parsed = cached
        return cached


class Round(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveIntegerField()
    description = models.TextField(blank=True)
    is_open = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task", "number"]
        constraints = [
            models.UniqueConstraint(fields=["task", "number"], name="unique_round_number"),
        ]

    def __str__(self) -> str:
        return f"{self.task.code} round {self.number}"


class Context(models.Model):
    """Owner-supplied data shown read-only to workers (passage, premise, image...)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="contexts")
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="contexts")
    config_version = models.ForeignKey(
        TaskConfigVersion, on_delete=models.PROTECT, related_name="contexts"
    )
    data = models.JSONField()
    tag = models.CharField(max_length=100, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    # Usage counters, updated with F() by the annotation services.
    times_served = models.PositiveIntegerField(default=0)
    example_count = models.PositiveIntegerField(default=0)
    fooled_count = models.PositiveIntegerField(default=0)
    validated_correct_count = models.PositiveIntegerField(default=0)
    validated_incorrect_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["round", "times_served", "id"], name="context_least_used"),
            models.Index(fields=["round", "tag", "times_served"], name="context_tag_least_used"),
            models.Index(fields=["round", "fooled_count", "id"], name="context_least_fooled"),
        ]

    def __str__(self) -> str:
        return f"context {self.pk} ({self.task.code})"


class ProposalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"


class TaskProposal(models.Model):
    proposer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="task_proposals"
    )
    code = models.SlugField(max_length=64)
    name = models.CharField(max_length=200)
    description = models.TextField()
    config_yaml = models.TextField(blank=True, help_text="Optional task config (YAML).")
    status = models.CharField(
        max_length=16, choices=ProposalStatus.choices, default=ProposalStatus.PENDING
    )
    reason = models.TextField(blank=True, help_text="Why it was accepted or rejected.")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    task = models.OneToOneField(
        Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposal"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["code"],
                condition=Q(status="pending"),
                name="unique_pending_proposal_code",
            )
        ]

    def __str__(self) -> str:
        return f"proposal {self.code} ({self.status})"


class SiteSettings(models.Model):
    """Site-wide switches that an admin changes in the admin: a single row (pk 1).

    Read through ``tasks.accounts.site_settings_get`` (cached); with no row yet, the defaults
    come from the Django settings (``SIGNUP_OPEN_DEFAULT``).
    """

    SINGLETON_PK = 1

    signup_open = models.BooleanField(
        "self-sign-up open",
        default=True,
        help_text="Anyone may create a worker account on the sign-up page. Turn it off to "
        "create accounts in the admin only; existing accounts keep working.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "site settings"
        verbose_name_plural = "site settings"

    def __str__(self) -> str:
        return "Site settings"


class UploadKind(models.TextChoices):
    DATASET = "dataset", "Dataset"
    CONTEXTS = "contexts", "Contexts"


class UploadStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Importing"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class UploadJob(models.Model):
    """A big upload (a dataset, contexts) imported by an RQ job rather than in its request.

    The file waits in the default storage (``stored_name``) until the job has read it;
    ``options`` holds the importer's keyword arguments. The import is all or nothing, as
    inline: ``errors`` lists every bad line of a refused file. Live progress (bytes read)
    is in Redis while the job runs (``tasks.upload_jobs.upload_job_run``).
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="upload_jobs")
    kind = models.CharField(max_length=16, choices=UploadKind.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    filename = models.CharField(max_length=255)
    stored_name = models.CharField(max_length=500, blank=True)
    size = models.PositiveBigIntegerField(default=0)
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=UploadStatus.choices, default=UploadStatus.QUEUED
    )
    rows = models.PositiveIntegerField(default=0, help_text="Rows imported.")
    result_url = models.CharField(max_length=500, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"upload {self.pk} ({self.kind}, {self.status})"
