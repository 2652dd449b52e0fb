"""The worker's progress line: on the create page, examples written today, how many of them
fooled the model, and a campaign worker's quota ("3 of 10"); on the validate page, verdicts
given today and a validation campaign's quota.

Counts come from the example rows, not from the buffered ``WorkerStats`` counters, so an
example shows up the moment it is stored. One query, bounded: a user's rows of today are one
range of the index ``example_worker_day`` (user, task, created_at), read at most
``PROGRESS_CAP`` rows deep; a campaign worker's rows (a quota's worth) through its own
foreign-key index.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time

from django.db.models import Count, Q
from django.utils import timezone

from annotation.campaigns.actors import Actor
from annotation.models import Campaign, Example, Validation
from tasks.models import Task

# Past this many examples in a day the line says "1000+": the count stops reading there.
PROGRESS_CAP = 1000


@dataclass(frozen=True)
class WorkerProgress:
    """What the progress line shows. ``quota`` and ``done`` only for a campaign worker."""

    written_today: int
    fooled_today: int
    capped: bool = False
    quota: int | None = None
    done: int | None = None

    @property
    def quota_left(self) -> int | None:
        if self.quota is None or self.done is None:
            return None
        return max(0, self.quota - self.done)


def start_of_today(now: datetime | None = None) -> datetime:
    """Return midnight of today in the site's time zone (``TIME_ZONE``), as an aware time."""
    today = timezone.localdate(now)
    return timezone.make_aware(datetime.combine(today, time.min))


def worker_progress(task: Task, actor: Actor, *, now: datetime | None = None) -> WorkerProgress:
    """Return ``actor``'s progress on ``task`` today (retracted examples do not count)."""
    since = start_of_today(now)
    column, actor_id = actor.id_column()
    if actor.is_campaign:
        return _campaign_progress(task, actor, since)
    # One range of the index, at most PROGRESS_CAP rows deep; counted here.
    verdicts = list(
        Example.objects.filter(
            **{column: actor_id}, task=task, created_at__gte=since, retracted=False
        )
        .order_by()
        .values_list("model_wrong", flat=True)[:PROGRESS_CAP]
    )
    return WorkerProgress(
        written_today=len(verdicts),
        fooled_today=sum(1 for model_wrong in verdicts if model_wrong),
        capped=len(verdicts) >= PROGRESS_CAP,
    )


def _campaign_progress(task: Task, actor: Actor, since: datetime) -> WorkerProgress:
    campaign = actor.campaign
    counts = (
        Example.objects.filter(campaign_worker=actor.campaign_worker, task=task, retracted=False)
        .order_by()
        .aggregate(
            done=Count("id"),
            written=Count("id", filter=Q(created_at__gte=since)),
            fooled=Count("id", filter=Q(created_at__gte=since, model_wrong=True)),
        )
    )
    quota = campaign.quota if campaign.kind == Campaign.Kind.CREATE else None
    return WorkerProgress(
        written_today=counts["written"],
        fooled_today=counts["fooled"],
        quota=quota,
        done=counts["done"] if quota is not None else None,
    )


@dataclass(frozen=True)
class ValidatorProgress:
    """What the validate page's progress line shows. ``quota`` and ``done`` only for a
    worker of a validation campaign."""

    validated_today: int
    capped: bool = False
    quota: int | None = None
    done: int | None = None


def validator_progress(
    task: Task, actor: Actor, *, now: datetime | None = None
) -> ValidatorProgress:
    """Return ``actor``'s verdicts on ``task`` today (owners' final verdicts not counted)."""
    since = start_of_today(now)
    if actor.is_campaign:
        counts = (
            Validation.objects.filter(
                campaign_worker=actor.campaign_worker, example__task=task, is_owner_verdict=False
            )
            .order_by()
            .aggregate(done=Count("id"), today=Count("id", filter=Q(created_at__gte=since)))
        )
        campaign = actor.campaign
        quota = campaign.quota if campaign.kind == Campaign.Kind.VALIDATE else None
        return ValidatorProgress(
            validated_today=counts["today"],
            quota=quota,
            done=counts["done"] if quota is not None else None,
        )
    column, actor_id = actor.id_column()
    # The validator's rows of today, at most PROGRESS_CAP of them; counted here.
    today = len(
        Validation.objects.filter(
            **{column: actor_id},
            example__task=task,
            created_at__gte=since,
            is_owner_verdict=False,
        )
        .order_by()
        .values_list("id", flat=True)[:PROGRESS_CAP]
    )
    return ValidatorProgress(validated_today=today, capped=today >= PROGRESS_CAP)
