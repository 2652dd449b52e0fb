"""The daily budget: what one user's models may learn of a task's datasets in 24 hours.

Every evaluation of a model tells its owner something of a dataset's gold answers, so
probing must not scale. Each user has, on each task and for each of its datasets,
``MODELS_HUB_REGISTRATIONS_PER_DAY`` units in any 24 hours (default 5; 0 turns the budget
off; the task's owners are not limited):

- registering a model spends a unit of every dataset (it is evaluated on all of them);
- changing a model's endpoint (its URL or protocol) spends a unit of every dataset (the
  next run may reach another model);
- a run asked for (``POST /models/{id}/runs/``) or a predictions file spends a unit of its
  dataset (a ``public`` dataset's gold is published: runs on it are free).

Beyond the budget the action is refused with ``TooManyRequests`` (429) whose
``details.wait_seconds`` says when a unit comes back (the API adds ``Retry-After``).

The check is atomic: ``budget_charge`` locks the user's ``DailyBudget`` row on the task
(an ``UPDATE`` of it: a row lock on PostgreSQL, the database's write lock on SQLite) before
it counts and records the charge, in the caller's transaction, so concurrent requests are
counted one after the other and a refused or failed action records nothing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import TooManyRequests
from models_hub.models import BudgetCharge, BudgetKind, DailyBudget
from tasks.models import Task
from tasks.permissions import can_manage_task

BUDGET_WINDOW = timedelta(days=1)
LIMIT_CODES = {
    BudgetKind.REGISTRATION: "model.registration_limit",
    BudgetKind.ENDPOINT_CHANGE: "model.endpoint_change_limit",
    BudgetKind.RUN: "run.daily_limit",
}
WHAT = {
    BudgetKind.REGISTRATION: "register another model",
    BudgetKind.ENDPOINT_CHANGE: "change the model's endpoint",
    BudgetKind.RUN: "run a model on this dataset",
}


def budget_limit() -> int:
    """Return the units per user, task and dataset in 24 hours (0: no budget)."""
    return max(0, int(getattr(settings, "MODELS_HUB_REGISTRATIONS_PER_DAY", 0) or 0))


def budget_wait_seconds(
    charges: Iterable[tuple[int | None, datetime]],
    dataset_id: int | None,
    limit: int,
    now: datetime,
) -> int:
    """Return the seconds until a charge for ``dataset_id`` (None: every dataset) fits
    among ``charges`` (``(dataset id or None, time)`` in the window); 0 when it fits now.

    A dataset's units are spent by the charges of no dataset and by its own runs.
    """
    every: list[datetime] = []
    runs: dict[int, list[datetime]] = defaultdict(list)
    for charged_dataset, at in charges:
        (every if charged_dataset is None else runs[charged_dataset]).append(at)
    if dataset_id is not None:
        scopes = [every + runs[dataset_id]]
    else:
        scopes = [every, *(every + own for own in runs.values())]
    wait = 0
    for spent in scopes:
        if len(spent) >= limit:
            oldest_to_expire = sorted(spent, reverse=True)[limit - 1]
            seconds = (oldest_to_expire + BUDGET_WINDOW - now).total_seconds()
            wait = max(wait, max(1, math.ceil(seconds)))
    return wait


def budget_charge(user, task: Task, kind: str, *, dataset_id: int | None = None) -> None:
    """Spend a unit of ``user``'s budget on ``task`` for ``kind`` (a run: of ``dataset_id``),
    or raise ``TooManyRequests``. Call it in the transaction that makes the change."""
    limit = budget_limit()
    if limit <= 0 or user is None or can_manage_task(user, task):
        return
    now = timezone.now()
    with transaction.atomic():
        budget, _ = DailyBudget.objects.get_or_create(user=user, task=task)
        # The lock: every charge of this (user, task) waits here for the one before it.
        DailyBudget.objects.filter(pk=budget.pk).update(charged_at=now)
        BudgetCharge.objects.filter(budget=budget, created_at__lte=now - BUDGET_WINDOW).delete()
        charges = BudgetCharge.objects.filter(budget=budget).values_list("dataset_id", "created_at")
        wait = budget_wait_seconds(charges, dataset_id, limit, now)
        if wait:
            raise _refusal(kind, limit, wait)
        BudgetCharge.objects.create(budget=budget, kind=kind, dataset_id=dataset_id, created_at=now)


def _refusal(kind: str, limit: int, wait: int) -> TooManyRequests:
    return TooManyRequests(
        f"you cannot {WHAT[kind]} now: registrations, endpoint changes and runs share a "
        f"budget of {limit} per task and dataset in 24 hours, and yours is spent; try again "
        f"in {_duration(wait)}",
        code=LIMIT_CODES[kind],
        details={"limit": limit, "wait_seconds": wait},
    )


def _duration(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    if hours:
        return f"{hours} h {rest // 60} min"
    return f"{max(1, math.ceil(rest / 60))} min"
