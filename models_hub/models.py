"""Registered models (HTTP endpoints with a model card) and the models in the loop per round."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from models_hub.fields import SealedTokenField


class Protocol(models.TextChoices):
    DYNATASK = "dynatask", "Dynatask native (batch JSON)"
    OPENAI_CHAT = "openai_chat", "OpenAI-compatible chat server"
    HF_TEXT_CLASSIFICATION = "hf_text_classification", "Hugging Face text classification"
    NONE = "none", "No endpoint (predictions-file submissions only)"


class ModelStatus(models.TextChoices):
    UNKNOWN = "unknown", "Unknown"
    HEALTHY = "healthy", "Healthy"
    UNHEALTHY = "unhealthy", "Unhealthy"
    DISABLED = "disabled", "Disabled"


class RegisteredModel(models.Model):
    """A model registered for a task: a model card plus, usually, an HTTP endpoint.

    ``auth_token`` is write-only: forms never render it back, and it is kept out of
    ``__str__``/``__repr__``. Its column holds the token sealed with the site's keys
    (``models_hub.fields.SealedTokenField``); only ``selectors.endpoint_spec`` opens it.
    Writes go through ``models_hub.services``.

    Named ``RegisteredModel`` so that it cannot be mistaken for Django's ``models.Model``; it
    was ``Model`` until migration 0006, and its table keeps that name (``models_hub_model``).
    """

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="models")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="registered_models"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)

    # Model card.
    params = models.BigIntegerField(
        null=True, blank=True, help_text="Number of parameters.", validators=[MinValueValidator(0)]
    )
    languages = models.CharField(
        max_length=200, blank=True, help_text="Comma-separated language codes, e.g. en, ne."
    )
    license = models.CharField(max_length=100, blank=True)
    source_url = models.URLField(max_length=500, blank=True)
    card = models.TextField(blank=True, help_text="Markdown.")

    # Endpoint.
    protocol = models.CharField(max_length=32, choices=Protocol.choices, default=Protocol.DYNATASK)
    endpoint_url = models.URLField(max_length=500, blank=True)
    # Stored because the worker must send it, encrypted; never rendered (see the forms'
    # token_field). Holds ciphertext once saved or read.
    auth_token = SealedTokenField(blank=True, default="")
    connect_timeout = models.FloatField(
        default=3.0, validators=[MinValueValidator(0.1), MaxValueValidator(60)]
    )
    read_timeout = models.FloatField(
        default=30.0, validators=[MinValueValidator(0.1), MaxValueValidator(600)]
    )
    # The most ``read_timeout`` may be for this model; None: the site's cap
    # (``MODELS_HUB_READ_TIMEOUT_CAP``). Only staff with ``raise_read_timeout`` set it
    # (``models_hub.services.model_set_read_timeout_cap``): a slow endpoint holds a worker.
    read_timeout_cap = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.1), MaxValueValidator(600)],
        help_text="Staff only: this model's cap on the read timeout, in seconds "
        "(blank: the site's cap).",
    )
    batch_size = models.PositiveIntegerField(
        default=32, validators=[MinValueValidator(1), MaxValueValidator(10_000)]
    )
    max_concurrency = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(1), MaxValueValidator(64)]
    )
    options = models.JSONField(
        default=dict,
        blank=True,
        help_text="Protocol options: label_map, prompt_template, model, temperature, max_tokens.",
    )

    is_published = models.BooleanField(default=False)
    is_anonymous = models.BooleanField(
        default=False, help_text="Show the owner as 'anonymous' to everyone but the owners."
    )

    # Health, written by calls.model_record_health.
    status = models.CharField(
        max_length=16, choices=ModelStatus.choices, default=ModelStatus.UNKNOWN
    )
    last_health_at = models.DateTimeField(null=True, blank=True)
    last_health_latency_ms = models.FloatField(null=True, blank=True)
    last_health_error = models.CharField(max_length=500, blank=True)
    model_version = models.CharField(max_length=200, blank=True)
    memory_gb = models.FloatField(null=True, blank=True)

    in_loop_rounds = models.ManyToManyField(
        "tasks.Round", through="RoundModel", related_name="in_loop_models", blank=True
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The table of the class's first name: the rename moved no data and no SQL.
        db_table = "models_hub_model"
        ordering = ["task", "name"]
        constraints = [
            models.UniqueConstraint(fields=["task", "name"], name="unique_model_name_per_task"),
            models.CheckConstraint(
                condition=Q(protocol="none") | ~Q(endpoint_url=""),
                name="model_endpoint_unless_protocol_none",
            ),
        ]
        indexes = [models.Index(fields=["task", "is_published"], name="model_task_published")]
        permissions = [("raise_read_timeout", "Can raise a model's read-timeout cap")]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        # Spelled out so that no future field (least of all the token) slips into a log line.
        return f"<RegisteredModel {self.pk}: {self.name!r} task={self.task_id}>"

    @property
    def has_endpoint(self) -> bool:
        """Return True when the model answers over HTTP (not a predictions-file model)."""
        return self.protocol != Protocol.NONE and bool(self.endpoint_url)

    @property
    def has_token(self) -> bool:
        """Return True when a token is stored (safe to show; the token itself never is)."""
        return bool(self.auth_token)


class RoundModel(models.Model):
    """A model in the loop of a round: the create page picks among these."""

    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="round_models")
    model = models.ForeignKey(
        RegisteredModel, on_delete=models.CASCADE, related_name="round_models"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["round", "model"]
        constraints = [
            models.UniqueConstraint(fields=["round", "model"], name="unique_round_model"),
        ]

    def __str__(self) -> str:
        return f"{self.model} in {self.round}"


class BudgetKind(models.TextChoices):
    REGISTRATION = "registration", "Model registered"
    ENDPOINT_CHANGE = "endpoint_change", "Endpoint changed"
    RUN = "run", "Run requested"


class DailyBudget(models.Model):
    """One user's budget on one task: what their models may learn of its datasets a day.

    The row is locked while a charge is checked and recorded (``models_hub.budget``), so
    that two requests at once never both take the last unit.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="+")
    charged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "task"], name="one_daily_budget_per_user_task")
        ]

    def __str__(self) -> str:
        return f"budget of user {self.user_id} on task {self.task_id}"


class BudgetCharge(models.Model):
    """A registration, an endpoint change or a run that spent a unit of a ``DailyBudget``.

    ``dataset_id`` is a run's dataset (``leaderboards.Dataset``; None for the others, which
    spend a unit of every dataset). Charges older than the window are deleted as the budget
    is next charged.
    """

    budget = models.ForeignKey(DailyBudget, on_delete=models.CASCADE, related_name="charges")
    kind = models.CharField(max_length=16, choices=BudgetKind.choices)
    dataset_id = models.PositiveBigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["budget", "created_at"], name="budget_charge_time")]

    def __str__(self) -> str:
        return f"{self.kind} at {self.created_at:%Y-%m-%d %H:%M}"
