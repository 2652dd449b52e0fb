"""Validations: a worker's verdict on an example, consensus, and the owners' final verdicts.

The example is locked while its validation counters and state change, so a consensus is
reached once: an example settles when ``task.num_matching_validations`` verdicts of one
label agree, or at once on an owner's verdict (which also overrides an earlier consensus).
The stats' counters move after the commit (``annotation.stats``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from annotation.campaigns.actors import Actor
from annotation.models import (
    VALIDATABLE_STATUSES,
    Example,
    Validation,
    ValidationLabel,
    ValidationState,
)
from annotation.services.guards import (
    example_locked,
    is_creator,
    issues_or_raise,
    retry_on_deadlock,
)
from annotation.stats import counters
from annotation.stats.buffer import counters_add_on_commit
from core.errors import Conflict, NotFound, PermissionDenied, ServiceError
from tasks.config.values import check_metadata
from tasks.models import Task
from tasks.permissions import is_task_owner

LABEL_COUNTER = {
    ValidationLabel.CORRECT: "correct_count",
    ValidationLabel.INCORRECT: "incorrect_count",
    ValidationLabel.FLAGGED: "flagged_count",
}


def _counters_of(label: str) -> tuple[str, ...]:
    """The example's counters that one more validation with ``label`` moves by one."""
    moved = ("validation_count", LABEL_COUNTER[label])
    return (*moved, "flag_count") if label == ValidationLabel.FLAGGED else moved


def _check_validate_metadata(example: Example, label: str, metadata: Mapping) -> dict:
    fields = example.config_version.parsed.validate_metadata_fields(label)
    if not fields and not metadata:
        return {}
    context = example.context.data if example.context_id else {}
    issues_or_raise(
        check_metadata(fields, metadata, context=context), "the answers do not fit the task"
    )
    return dict(metadata)


def _locked_for_validation(example_id: int, actor: Actor, task: Task | None) -> Example:
    """The example locked, with ``validated_by_actor``: whether ``actor`` validated it
    already (true until the commit: every validation locks the example first). Its config
    version is ``task``'s current one when it was written under that (no read of it)."""
    column, actor_id = actor.id_column()
    validated = Validation.objects.filter(example_id=OuterRef("pk"), **{column: actor_id})
    try:
        example = (
            Example.objects.select_for_update()
            .annotate(validated_by_actor=Exists(validated))
            .get(pk=example_id)
        )
    except Example.DoesNotExist:
        raise NotFound("no such example") from None
    if task is not None and example.config_version_id == task.current_config_id:
        example.config_version = task.current_config
    return example


def _settled_values(example: Example, state: str, *, by_owner: bool) -> dict[str, Any]:
    """Move ``example`` (locked) to ``state`` in memory; the columns to write."""
    example.validation_state = state
    example.settled_by_owner = example.settled_by_owner or by_owner
    example.settled_at = timezone.now()
    return {
        "validation_state": state,
        "settled_by_owner": example.settled_by_owner,
        "settled_at": example.settled_at,
    }


@retry_on_deadlock
def validation_submit(
    *,
    example_id: int,
    actor: Actor,
    label: str,
    metadata: Mapping | None = None,
    time_spent_ms: int | None = None,
    task: Task | None = None,
) -> Validation:
    """Record ``actor``'s verdict on an example and settle it on consensus (or an owner's).

    Refuses the writer's own example, a second verdict by the same actor, and retracted or
    settled examples (``Conflict``). ``task``: the task the caller works on (with its
    ``owner_ids``), if it has it; an example of another task is NotFound.
    """
    if label not in LABEL_COUNTER:
        raise ServiceError("choose correct, incorrect or flag", code="validation.label")
    if actor is None or not actor.is_authenticated:
        raise PermissionDenied("sign in to validate examples")
    with transaction.atomic():
        example = _locked_for_validation(example_id, actor, task)
        if task is not None and example.task_id != task.pk:
            raise NotFound("no such example")
        if task is None:
            task = example.task
        if is_creator(example, actor):
            raise PermissionDenied("you cannot validate your own example")
        if example.retracted:
            raise Conflict("the example was retracted", code="validation.retracted")
        if example.validation_state != ValidationState.PENDING:
            raise Conflict("the example is already settled", code="validation.settled")
        if example.status not in VALIDATABLE_STATUSES:
            raise Conflict("the example is not ready for validation", code="validation.not_ready")
        if example.validated_by_actor:
            raise Conflict("you already validated this example", code="validation.duplicate")
        metadata = _check_validate_metadata(example, label, metadata or {})
        owner_verdict = actor.user is not None and is_task_owner(actor.user, task)
        validation = Validation.objects.create(
            example=example,
            label=label,
            metadata=metadata,
            is_owner_verdict=owner_verdict,
            time_spent_ms=time_spent_ms,
            **actor.create_kwargs(),
        )
        # The row is locked: the counters' new values are the old ones plus one.
        updates: dict[str, Any] = {}
        for name in _counters_of(label):
            setattr(example, name, getattr(example, name) + 1)
            updates[name] = F(name) + 1
        previous = example.validation_state
        if owner_verdict:
            updates.update(_settled_values(example, label, by_owner=True))
        elif getattr(example, LABEL_COUNTER[label]) >= max(1, task.num_matching_validations):
            updates.update(_settled_values(example, label, by_owner=False))
        Example.objects.filter(pk=example.pk).update(**updates)
        deltas = counters.validation_created(validation, example)
        deltas.merge(counters.example_settled(example, previous))
        counters_add_on_commit(deltas)
    return validation


def owner_review_submit(
    *, example_id: int, user, label: str, metadata: Mapping | None = None
) -> Example:
    """Record an owner's final verdict: it settles the example, or overrides a consensus.

    An owner's earlier verdict on the example is replaced (its counter moves back). The
    stats move once, by the difference between the previous and the new state.
    """
    if label not in LABEL_COUNTER:
        raise ServiceError("choose correct, incorrect or flag", code="validation.label")
    with transaction.atomic():
        example = example_locked(example_id, "context", "task")
        if not is_task_owner(user, example.task):
            raise PermissionDenied("only the task's owners review examples")
        if example.retracted:
            raise Conflict("the example was retracted", code="validation.retracted")
        # The owner's verdict is final even without the validators' optional answers.
        metadata = _check_validate_metadata(example, label, metadata) if metadata else {}
        counter = LABEL_COUNTER[label]
        previous_verdict = Validation.objects.filter(example=example, user=user).first()
        updates: dict[str, Any] = {}
        if previous_verdict is None:
            Validation.objects.create(
                example=example, user=user, label=label, metadata=metadata, is_owner_verdict=True
            )
            updates = {"validation_count": F("validation_count") + 1, counter: F(counter) + 1}
            if label == ValidationLabel.FLAGGED:
                updates["flag_count"] = F("flag_count") + 1
        else:
            old_counter = LABEL_COUNTER.get(previous_verdict.label)
            if previous_verdict.label != label and old_counter:
                updates = {counter: F(counter) + 1, old_counter: F(old_counter) - 1}
            previous_verdict.label = label
            previous_verdict.metadata = metadata
            previous_verdict.is_owner_verdict = True
            previous_verdict.save(update_fields=["label", "metadata", "is_owner_verdict"])
        previous_state = example.validation_state
        if previous_state != label or not example.settled_by_owner:
            updates.update(_settled_values(example, label, by_owner=True))
        if updates:
            Example.objects.filter(pk=example.pk).update(**updates)
        counters_add_on_commit(counters.example_settled(example, previous_state))
    example.refresh_from_db()
    return example
