"""Arena storage: a battle (a chat conversation with two hidden seats and a vote), the
exclusions of a worker's votes, and frozen boards.

Imported by ``annotation.models`` so that Django registers them in the ``annotation`` app.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Vote(models.TextChoices):
    A = "a", "A is better"
    B = "b", "B is better"
    TIE = "tie", "Tie"
    BOTH_BAD = "both_bad", "Both are bad"


class ArenaBattle(models.Model):
    """Two anonymous models answer one worker; the worker votes, then sees who they were."""

    conversation = models.OneToOneField(
        "annotation.Conversation", on_delete=models.CASCADE, related_name="battle"
    )
    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="battles")
    # The voter (the conversation's worker), kept here for the daily cap and exclusions.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="arena_battles",
    )
    campaign_worker = models.ForeignKey(
        "annotation.CampaignWorker",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="arena_battles",
    )
    model_a = models.ForeignKey(
        "models_hub.RegisteredModel", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    model_b = models.ForeignKey(
        "models_hub.RegisteredModel", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    model_a_name = models.CharField(max_length=200)
    model_b_name = models.CharField(max_length=200)
    vote = models.CharField(max_length=16, choices=Vote.choices, blank=True)
    voted_at = models.DateTimeField(null=True, blank=True)
    revealed_at = models.DateTimeField(null=True, blank=True)
    # Why the vote does not count ("" when it does): an answer named its model.
    void_reason = models.CharField(max_length=300, blank=True)
    # Characters of each side's answers, for style control.
    length_a = models.PositiveIntegerField(null=True, blank=True)
    length_b = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(
                fields=["task", "voted_at"], name="battle_task_voted", condition=~Q(vote="")
            ),
            models.Index(fields=["user", "voted_at"], name="battle_user_day"),
            models.Index(fields=["campaign_worker", "voted_at"], name="battle_worker_day"),
        ]

    def __str__(self) -> str:
        return f"battle {self.pk} ({self.task_id})"


class ArenaExclusion(models.Model):
    """The owner leaves a worker's votes out of the board, with a reason (kept, exported)."""

    task = models.ForeignKey(
        "tasks.Task", on_delete=models.CASCADE, related_name="arena_exclusions"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="arena_exclusions",
    )
    campaign_worker = models.ForeignKey(
        "annotation.CampaignWorker",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="arena_exclusions",
    )
    reason = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False) | Q(campaign_worker__isnull=False),
                name="arena_exclusion_has_worker",
            )
        ]

    def __str__(self) -> str:
        return f"arena exclusion {self.pk} ({self.task_id})"


class ArenaSnapshot(models.Model):
    """A frozen arena board, as its JSON export was when the owner took it: the whole board
    (for the task's owners) and the public one (without the unpublished models)."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="arena_snapshots")
    name = models.CharField(max_length=200, blank=True)
    board = models.JSONField()
    # The board as visitors saw it then; null for snapshots frozen before it was kept.
    public_board = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"arena snapshot {self.pk} ({self.task_id})"
