"""A worker's examples: submit, ask the model again, the writer's verdict, metadata,
retract, flag and unflag; and the showing of a context.

An example is saved first (status ``awaiting_model``, with its round and config version) in
one INSERT; the live loop asks the model after the commit (``annotation.live.queue``), and
the example's counter increments go to Redis in the same pipeline. With no model in the
loop it is stored with status ``no_model`` and no verdict.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from annotation.campaigns.actors import Actor
from annotation.live import queue as live
from annotation.models import Example, ExampleStatus, VerdictSource
from annotation.services.answers import example_record_model_failure, normalise_input
from annotation.services.guards import (
    example_locked,
    issues_or_raise,
    require_creator,
    require_unsettled,
    retry_on_deadlock,
)
from annotation.stats import counters
from annotation.stats.buffer import counters_add, counters_add_on_commit
from core.errors import Conflict, NotFound, PermissionDenied, ServiceError
from models_hub.models import RegisteredModel
from models_hub.selectors import model_pick_for_round
from tasks.config.values import check_metadata, check_worker_input
from tasks.models import Context, Round, Task

MAX_FLAG_REASON = 500


def context_mark_served(context: Context) -> None:
    """Count one more showing of ``context`` (least-used sampling reads it; buffered)."""
    counters_add(counters.context_served(context.pk))


def _queue_for_model(example: Example, deltas: counters.CounterDeltas) -> None:
    """After the commit: queue ``example`` for its model with ``deltas``, or only buffer the
    deltas when it has no model. Without Redis the example fails with a message the worker
    sees (it is kept, and the worker asks again)."""
    example_id, attempt = example.pk, example.model_attempts
    if example.model_id is None:
        counters_add_on_commit(deltas)
        return
    timeout = live.job_timeout(example.model)

    def queue() -> None:
        if not live.example_queue(example_id, attempt, timeout, deltas):
            example_record_model_failure(
                example_id, code=live.QUEUE_UNAVAILABLE, message=live.QUEUE_UNAVAILABLE_MESSAGE
            )

    transaction.on_commit(queue)


def example_submit(
    *,
    task: Task,
    round_: Round,
    actor: Actor,
    context: Context | None,
    data: Mapping,
    goal_label: str = "",
    asked_label: str = "",
    time_spent_ms: int | None = None,
    model: RegisteredModel | None = None,
) -> Example:
    """Store a worker's example, then ask ``model`` (after the commit).

    ``goal_label`` is the label the worker chose to write for, ``asked_label`` the one the
    platform asked for (labels the goal field does not offer are stored blank).
    ``model``: the round's model picked for it (``TaskBundle.pick_model``); None for none in
    the loop. Raises ``InvalidInput`` (with the config's issues) when ``data`` does not fit
    the task's current config, ``Conflict`` when the round is closed or the context missing.
    """
    if actor is None or not actor.is_authenticated:
        raise PermissionDenied("sign in to write examples")
    if not task.active:
        raise PermissionDenied("this task takes no new examples")
    if round_ is None or round_.task_id != task.pk or not round_.is_open:
        raise Conflict("the round is closed", code="round.closed")
    version = task.current_config
    config = version.parsed
    if config.context and context is None:
        raise Conflict("this task has no context to write about yet", code="context.missing")
    if context is not None and context.round_id != round_.pk:
        raise NotFound("no such context")
    data = normalise_input(config, data)
    context_data = context.data if context is not None else {}
    issues_or_raise(
        check_worker_input(config, data, context_data), "the example does not fit the task"
    )
    goal_labels = config.goal_field.labels if config.goal_field is not None else ()
    example = Example.objects.create(
        task=task,
        round=round_,
        context=context,
        config_version=version,
        input=data,
        goal_label=goal_label if goal_label in goal_labels else "",
        asked_label=asked_label if asked_label in goal_labels else "",
        status=ExampleStatus.AWAITING_MODEL if model else ExampleStatus.NO_MODEL,
        model=model,
        model_attempts=1 if model else 0,
        time_spent_ms=time_spent_ms,
        **actor.create_kwargs(),
    )
    _queue_for_model(example, counters.example_created(example))
    return example


def example_request_model(example: Example, actor: Actor, *, stale_after: float = 0) -> Example:
    """Ask a model again for a failed example (or one waiting longer than ``stale_after`` s)."""
    require_creator(example, actor)
    with transaction.atomic():
        locked = example_locked(example.pk, "round")
        waiting_too_long = (
            locked.status == ExampleStatus.AWAITING_MODEL
            and stale_after
            and (timezone.now() - locked.updated_at).total_seconds() >= stale_after
        )
        if locked.retracted or not (
            locked.status == ExampleStatus.MODEL_FAILED or waiting_too_long
        ):
            raise Conflict("the model was already asked", code="example.not_failed")
        model = model_pick_for_round(locked.round)
        if model is None:
            raise Conflict("no model is in the loop any more", code="example.no_model")
        locked.status = ExampleStatus.AWAITING_MODEL
        locked.model = model
        locked.model_attempts += 1
        locked.model_error_code = ""
        locked.model_error_message = ""
        locked.save(
            update_fields=[
                "status",
                "model",
                "model_attempts",
                "model_error_code",
                "model_error_message",
                "updated_at",
            ]
        )
        _queue_for_model(locked, counters.CounterDeltas())
    return locked


def example_set_worker_verdict(example: Example, actor: Actor, model_wrong: bool) -> Example:
    """Record the writer's own verdict (``ask_user``): once, after the model answered."""
    require_creator(example, actor)
    with transaction.atomic():
        locked = example_locked(example.pk)
        config = locked.config_version.parsed
        if config.model_wrong_metric.type != "ask_user":
            raise Conflict("the task's metric decides the verdict", code="verdict.not_asked")
        if locked.status != ExampleStatus.MODEL_ANSWERED:
            raise Conflict("the model has not answered", code="verdict.no_answer")
        if locked.model_wrong is not None:
            raise Conflict("the verdict is already recorded", code="verdict.recorded")
        if locked.retracted:
            raise Conflict("the example was retracted", code="example.retracted")
        require_unsettled(locked)
        locked.model_wrong = bool(model_wrong)
        locked.verdict_source = VerdictSource.WORKER
        locked.save(update_fields=["model_wrong", "verdict_source", "updated_at"])
        counters_add_on_commit(counters.example_verdict(locked))
    return locked


def example_save_metadata(example: Example, actor: Actor, data: Mapping) -> Example:
    """Store the writer's ``metadata.create`` answers for the example's outcome."""
    require_creator(example, actor)
    config = example.config_version.parsed
    fields = config.create_metadata_fields(example.model_wrong)
    context = example.context.data if example.context_id else {}
    issues_or_raise(
        check_metadata(fields, data, context=context), "the answers do not fit the task"
    )
    with transaction.atomic():
        locked = example_locked(example.pk)
        if locked.retracted:
            raise Conflict("the example was retracted", code="example.retracted")
        require_unsettled(locked)
        locked.metadata = dict(data)
        locked.save(update_fields=["metadata", "updated_at"])
    return locked


@retry_on_deadlock
def example_retract(example: Example, actor: Actor) -> Example:
    """Withdraw an example (once): it leaves the validation queue and the counts."""
    require_creator(example, actor)
    with transaction.atomic():
        locked = example_locked(example.pk)
        if locked.retracted:
            return locked
        require_unsettled(locked)
        locked.retracted = True
        locked.save(update_fields=["retracted", "updated_at"])
        counters_add_on_commit(counters.example_retracted(locked))
    return locked


def example_flag(example: Example, actor: Actor, reason: str = "") -> Example:
    """Flag one's own example for the owners' review (counted once in ``flag_count``).

    ``reason`` is optional; one over ``MAX_FLAG_REASON`` characters is refused
    (``flag.reason_too_long``), never cut. Flagging a flagged example changes nothing.
    """
    require_creator(example, actor)
    reason = (reason or "").strip()
    if len(reason) > MAX_FLAG_REASON:
        raise ServiceError(
            f"The reason is {len(reason)} characters long; the limit is {MAX_FLAG_REASON}.",
            code="flag.reason_too_long",
        )
    with transaction.atomic():
        locked = example_locked(example.pk)
        if locked.creator_flagged:
            return locked
        require_unsettled(locked)
        locked.creator_flagged = True
        locked.creator_flag_reason = reason
        locked.flag_count = F("flag_count") + 1
        locked.save(
            update_fields=["creator_flagged", "creator_flag_reason", "flag_count", "updated_at"]
        )
        locked.refresh_from_db(fields=["flag_count"])
    return locked


def example_unflag(example: Example, actor: Actor) -> Example:
    """Take back one's own flag: ``flag_count`` moves back by the one the flag added.

    Under the row lock, so a flag and its undo racing each other count once at most;
    unflagging an example that is not flagged changes nothing. A settled example keeps its
    flag (``example.settled``, like every other change of its writer): taking it back would
    take the example out of the owners' review of flagged examples.
    """
    require_creator(example, actor)
    with transaction.atomic():
        locked = example_locked(example.pk)
        if not locked.creator_flagged:
            return locked
        require_unsettled(locked)
        locked.creator_flagged = False
        locked.creator_flag_reason = ""
        # The creator's flag is one of the flags counted: the count is at least 1 here.
        locked.flag_count = Greatest(F("flag_count") - 1, 0)
        locked.save(
            update_fields=["creator_flagged", "creator_flag_reason", "flag_count", "updated_at"]
        )
        locked.refresh_from_db(fields=["flag_count"])
    return locked
