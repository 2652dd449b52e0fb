"""Conversations, their seats (the models in them), turns and replies.

Imported by ``annotation.models`` so that Django registers them in the ``annotation`` app.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class ConversationStatus(models.TextChoices):
    ACTIVE = "active", "In progress"
    FINISHED = "finished", "Finished"


class ReplyStatus(models.TextChoices):
    STREAMING = "streaming", "Streaming"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class Conversation(models.Model):
    """One worker's conversation with the models of its seats; an Example once finished."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="conversations")
    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="+")
    config_version = models.ForeignKey(
        "tasks.TaskConfigVersion", on_delete=models.PROTECT, related_name="+"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="conversations",
    )
    campaign_worker = models.ForeignKey(
        "annotation.CampaignWorker",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="conversations",
    )
    status = models.CharField(
        max_length=16, choices=ConversationStatus.choices, default=ConversationStatus.ACTIVE
    )
    example = models.OneToOneField(
        "annotation.Example",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="conversation",
    )
    # End of the conversation: the worker's rating, free text and metadata.create answers.
    rating = models.SmallIntegerField(null=True, blank=True)
    free_text = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # The judge model's verdict (stored like a model answer and validated with the rest).
    judge_model = models.ForeignKey(
        "models_hub.RegisteredModel",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    judge_reply = models.TextField(blank=True)
    judge_raw = models.JSONField(null=True, blank=True)
    judge_error = models.CharField(max_length=500, blank=True)
    model_wrong = models.BooleanField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["task", "id"], name="conversation_task_keyset"),
            models.Index(fields=["round", "user"], name="conversation_round_user"),
        ]

    def __str__(self) -> str:
        return f"conversation {self.pk} ({self.task_id})"


class ConversationSeat(models.Model):
    """A model drawn for a conversation, at a position (shown as "A", "B"... while hidden)."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="seats")
    position = models.PositiveSmallIntegerField()
    model = models.ForeignKey(
        "models_hub.RegisteredModel",
        null=True,
        on_delete=models.SET_NULL,
        related_name="chat_seats",
    )
    model_name = models.CharField(max_length=200)
    # Was this model fooled: by the worker's say, the judge's, and the decision.
    worker_fooled = models.BooleanField(null=True, blank=True)
    judge_fooled = models.BooleanField(null=True, blank=True)
    fooled = models.BooleanField(null=True, blank=True)

    class Meta:
        ordering = ["conversation", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "position"], name="one_seat_per_position"
            )
        ]
        indexes = [models.Index(fields=["model", "fooled"], name="seat_model_fooled")]

    def __str__(self) -> str:
        return f"seat {self.letter} of conversation {self.conversation_id}"

    @property
    def letter(self) -> str:
        return chr(ord("A") + self.position)


class ChatTurn(models.Model):
    """One worker message and the choice among its replies."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    number = models.PositiveSmallIntegerField()
    message = models.TextField()
    # best | tie | all_bad | "" (not chosen, or nothing to choose).
    choice = models.CharField(max_length=16, blank=True)
    best_position = models.PositiveSmallIntegerField(null=True, blank=True)
    slider = models.SmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    chosen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["conversation", "number"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "number"], name="one_turn_per_number")
        ]

    def __str__(self) -> str:
        return f"turn {self.number} of conversation {self.conversation_id}"


class ChatReply(models.Model):
    """One seat's reply to one turn; a retry raises ``attempt`` and starts it again."""

    turn = models.ForeignKey(ChatTurn, on_delete=models.CASCADE, related_name="replies")
    position = models.PositiveSmallIntegerField()
    model = models.ForeignKey("models_hub.RegisteredModel", null=True, on_delete=models.SET_NULL)
    model_version = models.CharField(max_length=200, blank=True)
    status = models.CharField(
        max_length=16, choices=ReplyStatus.choices, default=ReplyStatus.STREAMING
    )
    attempt = models.PositiveSmallIntegerField(default=1)
    text = models.TextField(blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    first_token_ms = models.FloatField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    finish_reason = models.CharField(max_length=32, blank=True)
    # The server's last chunk and usage, scrubbed and bounded (``pump.RAW_LIMIT``).
    raw = models.JSONField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["turn", "position"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "position"], name="one_reply_per_seat"),
        ]
        indexes = [
            models.Index(
                fields=["started_at"],
                name="chat_reply_streaming",
                condition=Q(status="streaming"),
            )
        ]

    def __str__(self) -> str:
        return f"reply {self.letter} to turn {self.turn_id}"

    @property
    def letter(self) -> str:
        return chr(ord("A") + self.position)
