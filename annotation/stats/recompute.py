"""The repair tool: rebuild every cached counter of a task from the data.

``stats_recompute`` gives the counter rows the values that ``annotation.stats.counters``
defines, from the examples and validations themselves. It is what an admin runs after a
Redis that lost buffered increments, and what the tests compare the buffered counters with.
"""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.db.models.functions import Coalesce

from annotation.models import Example, RoundStats, Validation, ValidationState, WorkerStats
from annotation.stats.buffer import counters_flush
from annotation.stats.counters import CONTEXT_FIELDS, ROUND_FIELDS, WORKER_FIELDS
from tasks.models import Context, Round, Task

# The context counters that the data determines (``times_served`` counts showings, which
# leave no row: it is left as it is).
RECOUNTED_CONTEXT_FIELDS = tuple(field for field in CONTEXT_FIELDS if field != "times_served")


def _example_aggregates():
    live = Q(retracted=False)
    return {
        "collected": Count("id", filter=live),
        "fooled": Count("id", filter=live & Q(model_wrong=True)),
        "verified_fooled": Count(
            "id", filter=live & Q(model_wrong=True, validation_state=ValidationState.CORRECT)
        ),
        "rejected": Count("id", filter=live & Q(validation_state=ValidationState.INCORRECT)),
        "validated": Count("id", filter=live & ~Q(validation_state=ValidationState.PENDING)),
        "retracted": Count("id", filter=Q(retracted=True)),
        "time": Coalesce(Sum("time_spent_ms"), 0),
    }


def stats_recompute(task: Task) -> dict:
    """Rebuild the task's RoundStats, WorkerStats and Context counters from the data.

    For the admin's repair action, best run while nobody works on the task: the buffered
    increments are flushed first; an event committed while the rows are rewritten is in the
    data and, once flushed, counted again. Returns how many rows of each kind were written.
    """
    counters_flush()
    return _recompute(task)


@transaction.atomic
def _recompute(task: Task) -> dict:
    round_ids = list(Round.objects.filter(task=task).values_list("id", flat=True))
    list(RoundStats.objects.select_for_update().filter(round_id__in=round_ids))
    aggregates = _example_aggregates()
    rounds = _recount_rounds(task, round_ids, aggregates)
    workers = _recount_workers(task, aggregates)
    contexts = _recount_contexts(task)
    return {"rounds": rounds, "workers": workers, "contexts": contexts}


def _recount_rounds(task: Task, round_ids: list[int], aggregates: dict) -> int:
    """Rewrite the ``RoundStats`` of every round of ``task``; return how many."""
    by_round = {
        row["round_id"]: row
        for row in Example.objects.filter(task=task)
        .order_by()
        .values("round_id")
        .annotate(**aggregates)
    }
    round_rows = []
    for round_id in round_ids:
        row = by_round.get(round_id, {})
        round_rows.append(
            RoundStats(round_id=round_id, **{field: row.get(field, 0) for field in ROUND_FIELDS})
        )
    RoundStats.objects.filter(round_id__in=round_ids).delete()
    RoundStats.objects.bulk_create(round_rows)
    return len(round_rows)


def _recount_workers(task: Task, aggregates: dict) -> int:
    """Rewrite the ``WorkerStats`` of ``task``: examples, then validations, merged per
    (round, user | campaign worker); return how many."""
    workers: dict[tuple, dict] = defaultdict(lambda: dict.fromkeys(WORKER_FIELDS, 0))
    example_rows = (
        Example.objects.filter(task=task)
        .filter(Q(user__isnull=False) | Q(campaign_worker__isnull=False))
        .order_by()
        .values("round_id", "user_id", "campaign_worker_id")
        .annotate(**aggregates)
    )
    for row in example_rows:
        key = _worker_key(row)
        counters = workers[key]
        counters["examples"] += row["collected"]
        for field in ("fooled", "verified_fooled", "rejected", "retracted"):
            counters[field] += row[field]
        counters["time_spent_ms"] += row["time"]
    validation_rows = (
        Validation.objects.filter(example__task=task, is_owner_verdict=False)
        .filter(Q(user__isnull=False) | Q(campaign_worker__isnull=False))
        .order_by()
        .values("user_id", "campaign_worker_id", round_id=F("example__round_id"))
        .annotate(count=Count("id"), time=Coalesce(Sum("time_spent_ms"), 0))
    )
    for row in validation_rows:
        counters = workers[_worker_key(row)]
        counters["validations"] += row["count"]
        counters["time_spent_ms"] += row["time"]
    WorkerStats.objects.filter(task=task).delete()
    WorkerStats.objects.bulk_create(
        [
            WorkerStats(
                task=task,
                round_id=round_id,
                user_id=user_id,
                campaign_worker_id=None if user_id is not None else campaign_worker_id,
                **counters,
            )
            for (round_id, user_id, campaign_worker_id), counters in workers.items()
        ],
        batch_size=1000,
    )
    return len(workers)


def _recount_contexts(task: Task) -> int:
    """Write the recounted fields of the contexts of ``task`` whose counts changed; return
    how many.

    One UPDATE with correlated subqueries would lock many rows for long; the counts per
    context are grouped once and written per changed context.
    """
    context_counts = {
        row["context_id"]: row
        for row in Example.objects.filter(task=task, retracted=False, context__isnull=False)
        .order_by()
        .values("context_id")
        .annotate(
            example_count=Count("id"),
            fooled_count=Count("id", filter=Q(model_wrong=True)),
            validated_correct_count=Count("id", filter=Q(validation_state=ValidationState.CORRECT)),
            validated_incorrect_count=Count(
                "id", filter=Q(validation_state=ValidationState.INCORRECT)
            ),
        )
    }
    changed = []
    for context in Context.objects.filter(task=task).only("id", *RECOUNTED_CONTEXT_FIELDS):
        row = context_counts.get(context.id, {})
        values = {field: row.get(field, 0) for field in RECOUNTED_CONTEXT_FIELDS}
        if any(getattr(context, field) != value for field, value in values.items()):
            for field, value in values.items():
                setattr(context, field, value)
            changed.append(context)
    Context.objects.bulk_update(changed, RECOUNTED_CONTEXT_FIELDS, batch_size=1000)
    return len(changed)


def _worker_key(row: dict) -> tuple:
    """One worker per round: a user, else a campaign worker (user wins if both are set)."""
    user_id = row["user_id"]
    return (row["round_id"], user_id, None if user_id is not None else row["campaign_worker_id"])
