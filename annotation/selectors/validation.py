"""The validation queue: which example a validator gets next. Every query walks the partial
index ``example_validation_queue`` and is bounded, whatever the table's size."""

from __future__ import annotations

import random

from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet

from annotation.campaigns.actors import Actor
from annotation.models import VALIDATABLE_STATUSES, Example, Validation, ValidationState
from tasks.models import Task

# How many of the queue's least validated examples a validator is offered one of, at random
# among those validated least: validators who open the page at the same moment then rarely
# meet on one example, which would settle before most of them could answer.
VALIDATION_SPREAD = 32

_VERDICTS = {
    "fooled": {"model_wrong": True},
    "not_fooled": {"model_wrong": False},
    "no_verdict": {"model_wrong__isnull": True},
}


def _in_queue_of(column: str, actor_id: int) -> Q:
    """The condition of an example in the queue of the actor whose ``column`` (``user_id``
    or ``campaign_worker_id``) is ``actor_id``: pending, not retracted, answered or without
    a model, not the actor's own, not validated by them."""
    validated = Validation.objects.filter(example=OuterRef("pk"), **{column: actor_id})
    return (
        Q(
            validation_state=ValidationState.PENDING,
            retracted=False,
            status__in=VALIDATABLE_STATUSES,
        )
        & ~Q(**{column: actor_id})
        & ~Q(Exists(validated))
    )


def validation_queue(task: Task, actor: Actor) -> QuerySet[Example]:
    """Examples ``actor`` may validate; the filter matches ``example_validation_queue``."""
    column, actor_id = actor.id_column()
    return Example.objects.filter(_in_queue_of(column, actor_id), task_id=task.pk)


def next_to_validate_query(task: Task, actor: Actor, verdict: str) -> QuerySet[Example]:
    """The examples with ``verdict`` among the queue's first ``VALIDATION_SPREAD``, least
    validated first, at random among equals: the subquery walks the index in order and
    stops."""
    first = (
        validation_queue(task, actor)
        .filter(**_VERDICTS[verdict])
        .order_by("validation_count", "id")
        .values("pk")[:VALIDATION_SPREAD]
    )
    return (
        Example.objects.filter(pk__in=first)
        .select_related("context")
        .order_by("validation_count", "?")
    )


def with_current_version(example: Example | None, task: Task) -> Example | None:
    """``example`` with its config version set from ``task`` (read with its current one)
    when that is the version it was written under: no read of the version's row."""
    if example is not None and example.config_version_id == task.current_config_id:
        example.config_version = task.current_config
    return example


def _next_of(task: Task, actor: Actor, verdict: str) -> Example | None:
    return with_current_version(next_to_validate_query(task, actor, verdict).first(), task)


def example_next_to_validate(task: Task, actor: Actor) -> Example | None:
    """The next example for ``actor`` to validate, least validated first.

    Fooling examples come first, then examples without a verdict (no model in the loop);
    examples that did not fool the model are queued only with ``validate_non_fooling``, and
    then the least validated comes first whatever the verdict. At most three queries.
    """
    if not task.validate_non_fooling:
        return _next_of(task, actor, "fooled") or _next_of(task, actor, "no_verdict")
    candidates = [
        example
        for example in (_next_of(task, actor, verdict) for verdict in _VERDICTS)
        if example is not None
    ]
    if not candidates:
        return None
    least = min(example.validation_count for example in candidates)
    return random.choice([example for example in candidates if example.validation_count == least])


def in_queue_query(actor: Actor, example_id: int) -> QuerySet[Example]:
    """Example ``example_id`` with ``in_queue``: whether it is in ``actor``'s queue."""
    column, actor_id = actor.id_column()
    return (
        Example.objects.filter(pk=example_id)
        .annotate(
            in_queue=ExpressionWrapper(_in_queue_of(column, actor_id), output_field=BooleanField())
        )
        .select_related("context")
    )


def example_for_validation(task: Task, example_id: int | None, actor: Actor) -> Example | None:
    """Example ``example_id`` of ``task`` if it is still in ``actor``'s validation queue.

    Read by its primary key, with the queue's condition as a column: as a filter, the
    planner could walk the task's whole partial queue index to find one row.
    """
    if example_id is None:
        return None
    try:
        example = in_queue_query(actor, example_id).get()
    except Example.DoesNotExist:
        return None
    if example.task_id != task.pk or not example.in_queue:
        return None
    return with_current_version(example, task)
