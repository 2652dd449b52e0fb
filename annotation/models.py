"""Examples written by workers, their validations, crowd campaigns and cached stats."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q


class ExampleStatus(models.TextChoices):
    AWAITING_MODEL = "awaiting_model", "Awaiting the model"
    MODEL_ANSWERED = "model_answered", "Model answered"
    MODEL_FAILED = "model_failed", "Model failed"
    NO_MODEL = "no_model", "No model in the loop"


# Examples ready for validation: a worker finished them (the model answered, or none was in
# the loop). Awaiting or failed model calls are not shown to validators.
VALIDATABLE_STATUSES = (ExampleStatus.MODEL_ANSWERED, ExampleStatus.NO_MODEL)


class VerdictSource(models.TextChoices):
    NONE = "", "None"
    METRIC = "metric", "The config's model_wrong_metric"
    WORKER = "worker", "The worker (ask_user)"
    JUDGE = "judge", "A judge model (chat tasks)"
    WORKER_AND_JUDGE = "worker_and_judge", "The worker and a judge model (chat tasks)"


class ValidationLabel(models.TextChoices):
    CORRECT = "correct", "Correct"
    INCORRECT = "incorrect", "Incorrect"
    FLAGGED = "flagged", "Flagged"


class ValidationState(models.TextChoices):
    """Where an example stands in validation; anything but PENDING is settled."""

    PENDING = "pending", "Pending"
    CORRECT = "correct", "Validated correct"
    INCORRECT = "incorrect", "Validated incorrect"
    FLAGGED = "flagged", "Flagged"


def new_campaign_token() -> str:
    return secrets.token_urlsafe(16)


class Campaign(models.Model):
    """A link for a crowd platform (Prolific-style): no account, an external worker id."""

    class Kind(models.TextChoices):
        CREATE = "create", "Create examples"
        VALIDATE = "validate", "Validate examples"

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="campaigns")
    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="campaigns")
    name = models.CharField(max_length=200)
    token = models.CharField(max_length=64, unique=True, default=new_campaign_token)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.CREATE)
    quota = models.PositiveIntegerField(default=10, help_text="Examples or validations per worker.")
    worker_id_param = models.CharField(
        max_length=64, default="PROLIFIC_PID", help_text="URL parameter with the worker id."
    )
    completion_code = models.CharField(max_length=100)
    is_active = models.BooleanField(default=True)
    signed_worker_links = models.BooleanField(
        default=False,
        help_text="Each worker needs their own link, signed for their worker id.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.task_id})"


class CampaignWorker(models.Model):
    """A crowd worker known only by the platform's id, inside one campaign.

    The first browser session that uses the id binds it: ``binding_hash`` is the SHA-256 of
    a random token kept in that session. Empty means unbound (new, or released by an owner).
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="workers")
    external_id = models.CharField(max_length=128)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    binding_hash = models.CharField(max_length=64, blank=True, default="")
    bound_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "external_id"], name="unique_campaign_worker"
            )
        ]

    def __str__(self) -> str:
        return f"campaign worker {self.pk}"


class Example(models.Model):
    """One example written by a worker, saved before the model is asked."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="examples")
    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="examples")
    context = models.ForeignKey(
        "tasks.Context", null=True, blank=True, on_delete=models.PROTECT, related_name="examples"
    )
    config_version = models.ForeignKey(
        "tasks.TaskConfigVersion", on_delete=models.PROTECT, related_name="examples"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="examples",
    )
    campaign_worker = models.ForeignKey(
        CampaignWorker, null=True, blank=True, on_delete=models.SET_NULL, related_name="examples"
    )
    # Everything the worker entered, targets included (checked against the config version).
    input = models.JSONField()
    # The goal: ``asked_label`` is the label the platform asked the worker to write for (blank
    # when it asked none, as for API clients); ``goal_label`` the one the worker chose.
    asked_label = models.CharField(max_length=200, blank=True)
    goal_label = models.CharField(max_length=200, blank=True)
    status = models.CharField(
        max_length=20, choices=ExampleStatus.choices, default=ExampleStatus.AWAITING_MODEL
    )
    model = models.ForeignKey(
        "models_hub.RegisteredModel",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    model_version = models.CharField(max_length=200, blank=True)
    model_output = models.JSONField(null=True, blank=True)
    model_latency_ms = models.FloatField(null=True, blank=True)
    model_error_code = models.CharField(max_length=64, blank=True)
    model_error_message = models.TextField(blank=True)
    model_attempts = models.PositiveSmallIntegerField(default=0)
    # Whether the model was fooled; None until decided (or when no model answered).
    model_wrong = models.BooleanField(null=True, blank=True)
    verdict_source = models.CharField(
        max_length=16, choices=VerdictSource.choices, default=VerdictSource.NONE, blank=True
    )
    metadata = models.JSONField(default=dict, blank=True)
    retracted = models.BooleanField(default=False)
    flag_count = models.PositiveIntegerField(default=0)
    # The writer's own flag (the create page's Flag button), counted once in flag_count.
    creator_flagged = models.BooleanField(default=False)
    creator_flag_reason = models.CharField(max_length=500, blank=True)
    # Validation counters, moved with F() exactly once per validation.
    validation_count = models.PositiveIntegerField(default=0)
    correct_count = models.PositiveIntegerField(default=0)
    incorrect_count = models.PositiveIntegerField(default=0)
    flagged_count = models.PositiveIntegerField(default=0)
    validation_state = models.CharField(
        max_length=16, choices=ValidationState.choices, default=ValidationState.PENDING
    )
    settled_by_owner = models.BooleanField(default=False)
    settled_at = models.DateTimeField(null=True, blank=True)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            # The validation queue: unsettled, unretracted examples, least validated first.
            models.Index(
                fields=["task", "model_wrong", "validation_count", "id"],
                name="example_validation_queue",
                condition=Q(validation_state="pending", retracted=False),
            ),
            models.Index(fields=["task", "round", "created_at"], name="example_task_round"),
            # A user's examples of a task, by day (the create page's progress line).
            models.Index(fields=["user", "task", "created_at"], name="example_worker_day"),
            models.Index(fields=["context", "validation_state"], name="example_context_state"),
            # The JSON Lines export walks a task's (or a round's) examples by id (keyset).
            models.Index(fields=["task", "id"], name="example_task_keyset"),
            models.Index(fields=["round", "id"], name="example_round_keyset"),
            # The live watchdog's look for examples still awaiting their model.
            models.Index(
                fields=["updated_at"],
                name="example_awaiting_model",
                condition=Q(status="awaiting_model"),
            ),
        ]

    def __str__(self) -> str:
        return f"example {self.pk} ({self.task_id})"


class Validation(models.Model):
    example = models.ForeignKey(Example, on_delete=models.CASCADE, related_name="validations")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="validations",
    )
    campaign_worker = models.ForeignKey(
        CampaignWorker, null=True, blank=True, on_delete=models.SET_NULL, related_name="validations"
    )
    label = models.CharField(max_length=16, choices=ValidationLabel.choices)
    metadata = models.JSONField(default=dict, blank=True)
    is_owner_verdict = models.BooleanField(default=False)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["example", "user"],
                condition=Q(user__isnull=False),
                name="one_validation_per_user",
            ),
            models.UniqueConstraint(
                fields=["example", "campaign_worker"],
                condition=Q(campaign_worker__isnull=False),
                name="one_validation_per_campaign_worker",
            ),
        ]
        indexes = [models.Index(fields=["user", "example"], name="validation_user_example")]

    def __str__(self) -> str:
        return f"validation {self.pk} of example {self.example_id}"


class RoundStats(models.Model):
    """Cached per-round counters, updated atomically with F() by the services."""

    round = models.OneToOneField("tasks.Round", on_delete=models.CASCADE, related_name="stats")
    collected = models.PositiveIntegerField(default=0)
    fooled = models.PositiveIntegerField(default=0)
    verified_fooled = models.PositiveIntegerField(default=0)
    retracted = models.PositiveIntegerField(default=0)
    validated = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "round stats"
        verbose_name_plural = "round stats"

    def __str__(self) -> str:
        return f"stats of round {self.round_id}"


class WorkerStats(models.Model):
    """Cached per-worker, per-round counters (a worker is a user or a campaign worker)."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    campaign_worker = models.ForeignKey(
        CampaignWorker, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    examples = models.PositiveIntegerField(default=0)
    fooled = models.PositiveIntegerField(default=0)
    verified_fooled = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)
    retracted = models.PositiveIntegerField(default=0)
    validations = models.PositiveIntegerField(default=0)
    time_spent_ms = models.PositiveBigIntegerField(default=0)

    class Meta:
        verbose_name = "worker stats"
        verbose_name_plural = "worker stats"
        constraints = [
            models.UniqueConstraint(
                fields=["round", "user"],
                condition=Q(user__isnull=False),
                name="one_worker_stats_per_user_round",
            ),
            models.UniqueConstraint(
                fields=["round", "campaign_worker"],
                condition=Q(campaign_worker__isnull=False),
                name="one_worker_stats_per_campaign_worker_round",
            ),
        ]
        indexes = [models.Index(fields=["task", "round", "verified_fooled"], name="worker_board")]

    def __str__(self) -> str:
        return f"worker stats {self.pk}"


# Chat collection's models live in their own module and belong to this app.
# The arena's models (battles, exclusions, frozen boards) likewise.
from annotation.arena.models import (  # noqa: E402, F401
    ArenaBattle,
    ArenaExclusion,
    ArenaSnapshot,
)
from annotation.chat.models import (  # noqa: E402, F401
    ChatReply,
    ChatTurn,
    Conversation,
    ConversationSeat,
)
