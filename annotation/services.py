"""Writes of the annotation app: examples (submit, model answers, verdicts, metadata, retract,
flag), validations and the owners' review.

Rules kept here, nowhere else:

- An example is saved first (status ``awaiting_model``, with its round and config version);
  the model is asked afterwards by a drain job of the ``live`` queue
  (``annotation.jobs.enqueue_live_prediction``, after commit). With no model in the loop
  it is stored with status ``no_model`` and no verdict.
- Cached counters move with ``F()`` inside the transaction that made the change, through the
  ``annotation.stats`` hooks, exactly once per event. Examples are locked with
  ``select_for_update`` before a validation or a review changes them.
- An example settles when ``task.num_matching_validations`` verdicts of one label agree, or
  at once on an owner's verdict (which also overrides an earlier consensus).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import OperationalError, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from annotation import stats
from annotation.actors import Actor
from annotation.models import (
    Example,
    ExampleStatus,
    Validation,
    ValidationLabel,
    ValidationState,
    VerdictSource,
)
from dynatask_site.precompiled import (
    ColumnUpdate,
    PrecompiledInsert,
    PrecompiledQuery,
    PrecompiledUpdate,
    chains_writes,
)
from models_hub.selectors import model_pick_for_round
from tasks.config.types import FieldType, TaskConfig
from tasks.config.values import check_metadata, check_worker_input
from tasks.errors import Conflict, NotFound, PermissionDenied, ServiceError
from tasks.metrics.errors import MetricError
from tasks.metrics.fooling import model_fooled
from tasks.models import Context, Round, Task
from tasks.permissions import is_task_owner

logger = logging.getLogger(__name__)

MAX_FLAG_REASON = 500


class InvalidInput(ServiceError):
    """What the worker entered does not fit the config; ``details["issues"]`` lists why."""

    code = "example.invalid"


def _issues_or_raise(issues, message: str) -> None:
    if issues:
        raise InvalidInput(message, details={"issues": issues})


def _is_creator(example: Example, actor: Actor) -> bool:
    if actor.user is not None:
        return example.user_id == actor.user.pk
    return actor.campaign_worker is not None and example.campaign_worker_id == (
        actor.campaign_worker.pk
    )


def _require_creator(example: Example, actor: Actor) -> None:
    if not _is_creator(example, actor):
        raise PermissionDenied("only the example's writer can do this")


# -- deadlocks ----------
# PostgreSQL's "deadlock detected" and "could not serialize access": the transaction was rolled
# back as a whole, so running it again is safe.
RETRYABLE_SQLSTATES = frozenset({"40P01", "40001"})
DEADLOCK_ATTEMPTS = 3


def _retry_on_deadlock(function):
    """Run ``function`` again (up to ``DEADLOCK_ATTEMPTS`` times) after a deadlock.

    The counters are always taken in one order (see ``annotation.stats._apply``); a worker
    acting in two tabs at once can still cross a validation with its own submit. Inside an
    outer transaction nothing is retried: only the outermost block may start over.
    """

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        for attempt in range(1, DEADLOCK_ATTEMPTS + 1):
            try:
                return function(*args, **kwargs)
            except OperationalError as error:
                retryable = getattr(error.__cause__, "sqlstate", None) in RETRYABLE_SQLSTATES
                if (
                    not retryable
                    or attempt == DEADLOCK_ATTEMPTS
                    or transaction.get_connection().in_atomic_block
                ):
                    raise
                logger.warning("%s: deadlock, attempt %s, retrying", function.__name__, attempt)
        raise AssertionError("unreachable")

    return wrapper


# -- the model inputs ----------
def model_inputs(config: TaskConfig, data: Mapping, context_data: Mapping | None, uid: str) -> dict:
    """Return the one input sent to the model: uid, the non-target inputs, the context."""
    inputs: dict[str, Any] = {"uid": uid}
    for spec in config.worker_input_fields:
        if spec.name in data:
            inputs[spec.name] = data[spec.name]
    for spec in config.context:
        if context_data and spec.name in context_data:
            inputs[spec.name] = context_data[spec.name]
    return inputs


def targets_of(config: TaskConfig, data: Mapping) -> dict:
    return {spec.name: data[spec.name] for spec in config.target_fields if spec.name in data}


def verdict_for(config: TaskConfig, data: Mapping, output: Mapping) -> bool | None:
    """Return whether the model was fooled under the config's metric (None: ask the worker)."""
    try:
        return model_fooled(config, targets_of(config, data), output)
    except MetricError:
        logger.warning("model_wrong_metric could not be computed", exc_info=True)
        return None


def normalise_input(config: TaskConfig, data: Mapping) -> dict:
    """Keep only the config's inputs; a selection given as plain text becomes ``{"text": ...}``."""
    clean = {}
    for spec in config.input:
        if spec.name in data:
            value = data[spec.name]
            if spec.type == FieldType.CONTEXT_STRING_SELECTION and isinstance(value, str):
                value = {"text": value}
            clean[spec.name] = value
    return clean


# -- contexts ----------
def context_mark_served(context: Context) -> None:
    """Count one more showing of ``context`` (least-used sampling reads this)."""
    stats.context_count_served(context.pk)


# -- examples ----------
def _enqueue_live(example: Example) -> None:
    from annotation import jobs  # jobs import services

    example_id, attempt = example.pk, example.model_attempts
    timeout = jobs.job_timeout(example.model)
    transaction.on_commit(lambda: jobs.enqueue_live_prediction(example_id, attempt, timeout))


_EXAMPLE_INSERT = PrecompiledInsert(Example)
_VALIDATION_INSERT = PrecompiledInsert(Validation)


@_retry_on_deadlock
def example_submit(
    *,
    task: Task,
    round_: Round,
    actor: Actor,
    context: Context | None,
    data: Mapping,
    goal_label: str = "",
    time_spent_ms: int | None = None,
) -> Example:
    """Store a worker's example, then ask a model of the round (after commit).

    Raises ``InvalidInput`` (with the config issues) when ``data`` does not fit the task's
    current config, ``Conflict`` when the round is closed or the context is missing.
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
    _issues_or_raise(
        check_worker_input(config, data, context_data), "the example does not fit the task"
    )
    goal = config.goal_field
    if goal is None or goal_label not in goal.labels:
        goal_label = ""
    model = model_pick_for_round(round_)
    values = {
        "task": task,
        "round": round_,
        "context": context,
        "config_version": version,
        "input": data,
        "goal_label": goal_label,
        "status": ExampleStatus.AWAITING_MODEL if model else ExampleStatus.NO_MODEL,
        "model": model,
        "model_attempts": 1 if model else 0,
        "time_spent_ms": time_spent_ms,
        **actor.create_kwargs(),
    }
    if chains_writes():
        # The row and its counters in one statement: no BEGIN and COMMIT round trips, and
        # the round's counter row, which every submission moves, is locked the shortest.
        example, _moved = _EXAMPLE_INSERT.create_chained(stats.new_example_writes, **values)
    else:
        with transaction.atomic():
            example = _EXAMPLE_INSERT.create(**values)
            if context is not None:
                stats.context_count_example(context.pk)
            stats.stats_example_created(example)
    if model is not None:
        _enqueue_live(example)
    return example


@dataclass(frozen=True)
class ModelAnswer:
    """A model's answer to an example, as a drain stores it: ``example`` as read with its
    config version (unchanged since, it is written in one statement)."""

    example: Example
    output: Mapping
    latency_ms: float | None = None
    model_version: str | None = None


# What the live job writes (an answer, or with a subset of them a failure): the create page
# reads back only these after waiting for the job.
MODEL_ANSWER_FIELDS = (
    "status",
    "model_output",
    "model_latency_ms",
    "model_version",
    "model_error_code",
    "model_error_message",
    "model_wrong",
    "verdict_source",
    "updated_at",
)


@functools.cache
def _locking_read(related: tuple[str, ...], validated_by: str | None = None) -> PrecompiledQuery:
    """The example, locked, with ``config_version`` and ``related`` in the one statement, and
    with ``validated_by``, whether the actor whose id is in that column (``user_id`` or
    ``campaign_worker_id``, the parameter ``actor_id``) validated it already. Compiled once
    per shape: building it through the ORM cost more than running it."""

    def build(pk, actor_id=None):
        # No ORDER BY (``.first()`` would add one): a lookup by primary key needs none.
        queryset = Example.objects.select_for_update(of=("self",)).select_related(
            "config_version", *related
        )
        if validated_by is not None:
            validated = Validation.objects.filter(
                example_id=OuterRef("pk"), **{validated_by: actor_id}
            )
            queryset = queryset.annotate(validated_by_actor=Exists(validated))
        return queryset.filter(pk=pk).order_by()[:1]

    if validated_by is None:
        return PrecompiledQuery(build, pk=int)
    return PrecompiledQuery(build, pk=int, actor_id=int)


def _locked(
    example_id: int, *related: str, validated_by: str | None = None, actor_id: int | None = None
) -> Example:
    """Lock and return the example (with ``config_version`` and ``related`` in the one
    statement, and ``validated_by_actor`` when ``validated_by`` names the actor's column and
    ``actor_id`` its id: see ``_locking_read``), or NotFound."""
    read = _locking_read(related, validated_by)
    if validated_by is None:
        example = read.first(pk=example_id)
    else:
        example = read.first(pk=example_id, actor_id=actor_id)
    if example is None:
        raise NotFound("no such example")
    return example


def _answer_values(config: TaskConfig, data: Mapping, output: Mapping, latency_ms, version):
    model_wrong = verdict_for(config, data, output)
    return {
        "status": ExampleStatus.MODEL_ANSWERED,
        "model_output": dict(output),
        "model_latency_ms": latency_ms,
        "model_version": (version or "")[:200],
        "model_error_code": "",
        "model_error_message": "",
        "model_wrong": model_wrong,
        "verdict_source": VerdictSource.METRIC if model_wrong is not None else VerdictSource.NONE,
        "updated_at": timezone.now(),
    }


# The live job's answer, written on every submission: one statement built once (the ORM's
# ``update()`` compiled it anew each time, more time than PostgreSQL took to run it).
_CLAIM_ANSWER = ColumnUpdate(
    Example,
    set_fields=MODEL_ANSWER_FIELDS,
    where_fields=("id", "status", "retracted", "validation_state"),
)


def _claim_answer(known: Example, values: Mapping) -> bool:
    """Write ``values`` in one UPDATE if the row is still as ``known`` saw it; say if it was.

    The UPDATE locks the row until the end of the transaction and matches only while the
    example awaits the model with the retraction and validation state ``known`` carries, so
    the counters moved afterwards are the ones ``_locked`` would have read.
    """
    return bool(_CLAIM_ANSWER.run(values, _claim_where(known)))


def _claim_where(known: Example) -> dict:
    """The state of the row the answer is written to: still awaiting the model, with the
    retraction and validation state the counters were computed from."""
    return {
        "id": known.pk,
        "status": ExampleStatus.AWAITING_MODEL,
        "retracted": known.retracted,
        "validation_state": known.validation_state,
    }


@_retry_on_deadlock
def example_record_model_answer(
    example_id: int,
    *,
    output: Mapping,
    latency_ms: float | None = None,
    model_version: str | None = None,
    example: Example | None = None,
) -> Example | None:
    """Store the model's answer and the metric's verdict (once; later answers are ignored).

    ``example``: the row as the caller read it (with its config version), if it has it. While
    the row is unchanged since, the answer is written in one statement instead of a locking
    read and a write; otherwise the row is locked and read again.
    """
    known = example if example is not None and example.pk == example_id else None
    with transaction.atomic():
        stored = _store_answer(example_id, known, output, latency_ms, model_version)
        if stored is not None and stored.model_wrong is not None:
            stats.stats_example_verdict(stored)
    return stored


def examples_record_model_answers(answers: list[ModelAnswer]) -> dict[int, Example | None]:
    """``example_record_model_answer`` of several examples; by example id, the row as stored,
    or None for one that no longer awaits the model.

    On PostgreSQL each answer is one statement with its counters (``_claim_answer_chained``);
    elsewhere all are one transaction (``_record_answers_together``).
    """
    ordered = sorted(answers, key=lambda answer: answer.example.pk)
    if not chains_writes():
        return _record_answers_together(ordered)
    stored: dict[int, Example | None] = {}
    for answer in ordered:
        example = _claim_answer_chained(answer)
        if example is None:  # changed since it was read: locked, read again and written
            example = example_record_model_answer(
                answer.example.pk,
                output=answer.output,
                latency_ms=answer.latency_ms,
                model_version=answer.model_version,
            )
        stored[answer.example.pk] = example
    return stored


@_retry_on_deadlock
def _claim_answer_chained(answer: ModelAnswer) -> Example | None:
    """Store ``answer`` and move its verdict's counters in one statement, while the example
    is as the job read it (``_claim_answer``); return the example, or None when it changed.

    No BEGIN and COMMIT round trips, and the counter rows are locked for one round trip.
    """
    known = answer.example
    if known.status != ExampleStatus.AWAITING_MODEL:
        return None
    values = _answer_values(
        known.config_version.parsed,
        known.input,
        answer.output,
        answer.latency_ms,
        answer.model_version,
    )
    writes = stats.verdict_writes(known, values["model_wrong"])
    claimed, _moved = _CLAIM_ANSWER.run_chained(values, _claim_where(known), writes)
    return _with_values(known, values) if claimed else None


@_retry_on_deadlock
def _record_answers_together(answers: list[ModelAnswer]) -> dict[int, Example | None]:
    """The answers (in the order of their examples' ids) in one transaction, the counters of
    all moved once per row after them (``stats.stats_examples_verdict``), in the order every
    transaction takes them (context, worker, round)."""
    stored: dict[int, Example | None] = {}
    with transaction.atomic():
        for answer in answers:
            example = answer.example
            stored[example.pk] = _store_answer(
                example.pk, example, answer.output, answer.latency_ms, answer.model_version
            )
        stats.stats_examples_verdict(
            [example for example in stored.values() if example and example.model_wrong is not None]
        )
    return stored


def _store_answer(
    example_id: int, known: Example | None, output: Mapping, latency_ms, model_version
) -> Example | None:
    """Write the answer to example ``example_id`` (inside a transaction), without counters.

    In one statement while the row is as ``known`` read it; else locked and read again.
    Returns the example as stored, or None when it no longer awaits the model.
    """
    if known is not None and known.status == ExampleStatus.AWAITING_MODEL:
        values = _answer_values(
            known.config_version.parsed, known.input, output, latency_ms, model_version
        )
        if _claim_answer(known, values):
            return _with_values(known, values)
    example = _locked(example_id)
    if example.status != ExampleStatus.AWAITING_MODEL:
        return None
    values = _answer_values(
        example.config_version.parsed, example.input, output, latency_ms, model_version
    )
    _with_values(example, values).save(update_fields=MODEL_ANSWER_FIELDS)
    return example


def _with_values(example: Example, values: Mapping) -> Example:
    """``example`` with the answer's ``values`` set on it (not saved)."""
    for name, value in values.items():
        setattr(example, name, value)
    return example


def example_record_model_failure(example_id: int, *, code: str, message: str) -> Example | None:
    """Store that the model failed (a safe code and message); the example is kept."""
    with transaction.atomic():
        example = _locked(example_id)
        if example.status != ExampleStatus.AWAITING_MODEL:
            return None
        example.status = ExampleStatus.MODEL_FAILED
        example.model_error_code = code[:64]
        example.model_error_message = message[:2000]
        example.save(
            update_fields=["status", "model_error_code", "model_error_message", "updated_at"]
        )
    return example


def example_request_model(example: Example, actor: Actor, *, stale_after: float = 0) -> Example:
    """Ask a model again for a failed example (or one waiting longer than ``stale_after`` s)."""
    _require_creator(example, actor)
    with transaction.atomic():
        locked = _locked(example.pk)
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
        _enqueue_live(locked)
    return locked


def example_set_worker_verdict(example: Example, actor: Actor, model_wrong: bool) -> Example:
    """Record the writer's own verdict (``ask_user``): once, after the model answered."""
    _require_creator(example, actor)
    with transaction.atomic():
        locked = _locked(example.pk)
        config = locked.config_version.parsed
        if config.model_wrong_metric.type != "ask_user":
            raise Conflict("the task's metric decides the verdict", code="verdict.not_asked")
        if locked.status != ExampleStatus.MODEL_ANSWERED:
            raise Conflict("the model has not answered", code="verdict.no_answer")
        if locked.model_wrong is not None:
            raise Conflict("the verdict is already recorded", code="verdict.recorded")
        if locked.retracted:
            raise Conflict("the example was retracted", code="example.retracted")
        locked.model_wrong = bool(model_wrong)
        locked.verdict_source = VerdictSource.WORKER
        locked.save(update_fields=["model_wrong", "verdict_source", "updated_at"])
        stats.stats_example_verdict(locked)
    return locked


def example_save_metadata(example: Example, actor: Actor, data: Mapping) -> Example:
    """Store the writer's ``metadata.create`` answers for the example's outcome."""
    _require_creator(example, actor)
    config = example.config_version.parsed
    fields = config.create_metadata_fields(example.model_wrong)
    context = example.context.data if example.context_id else {}
    _issues_or_raise(
        check_metadata(fields, data, context=context), "the answers do not fit the task"
    )
    with transaction.atomic():
        locked = _locked(example.pk)
        if locked.retracted:
            raise Conflict("the example was retracted", code="example.retracted")
        locked.metadata = dict(data)
        locked.save(update_fields=["metadata", "updated_at"])
    return locked


@_retry_on_deadlock
def example_retract(example: Example, actor: Actor) -> Example:
    """Withdraw an example (once): it leaves the validation queue and the counts."""
    _require_creator(example, actor)
    with transaction.atomic():
        locked = _locked(example.pk)
        if locked.retracted:
            return locked
        locked.retracted = True
        locked.save(update_fields=["retracted", "updated_at"])
        if locked.context_id is not None:
            Context.objects.filter(pk=locked.context_id, example_count__gt=0).update(
                example_count=F("example_count") - 1
            )
        stats.stats_example_retracted(locked)
    return locked


def example_flag(example: Example, actor: Actor, reason: str = "") -> Example:
    """Flag one's own example for the owners' review (counted once in ``flag_count``)."""
    _require_creator(example, actor)
    with transaction.atomic():
        locked = _locked(example.pk)
        if locked.creator_flagged:
            return locked
        locked.creator_flagged = True
        locked.creator_flag_reason = (reason or "")[:MAX_FLAG_REASON]
        locked.flag_count = F("flag_count") + 1
        locked.save(
            update_fields=["creator_flagged", "creator_flag_reason", "flag_count", "updated_at"]
        )
        locked.refresh_from_db(fields=["flag_count"])
    return locked


# -- validation ----------
LABEL_COUNTER = {
    ValidationLabel.CORRECT: "correct_count",
    ValidationLabel.INCORRECT: "incorrect_count",
    ValidationLabel.FLAGGED: "flagged_count",
}


def _counters_of(label: str) -> tuple[str, ...]:
    """The example's counters that one more validation with ``label`` moves by one."""
    counters = ("validation_count", LABEL_COUNTER[label])
    return (*counters, "flag_count") if label == ValidationLabel.FLAGGED else counters


def _count_validation(label: str) -> PrecompiledUpdate:
    """One more validation with ``label`` on the example (its counters, one UPDATE)."""
    counters = _counters_of(label)
    return PrecompiledUpdate(
        lambda pk: (Example.objects.filter(pk=pk), {name: F(name) + 1 for name in counters}),
        pk=int,
    )


# The counters' UPDATE of every validation, compiled once per process (as its locking read).
_COUNT_VALIDATION = {label: _count_validation(label) for label in LABEL_COUNTER}


def _check_validate_metadata(example: Example, label: str, metadata: Mapping) -> dict:
    config = example.config_version.parsed
    fields = config.validate_metadata_fields(label)
    context = example.context.data if example.context_id else {}
    _issues_or_raise(
        check_metadata(fields, metadata, context=context), "the answers do not fit the task"
    )
    return dict(metadata)


def _settle(example: Example, state: str, *, by_owner: bool) -> None:
    """Move ``example`` (locked) to ``state`` and the counters with it, once."""
    previous = example.validation_state
    if previous == state and example.settled_by_owner == by_owner:
        return
    example.validation_state = state
    example.settled_by_owner = example.settled_by_owner or by_owner
    example.settled_at = timezone.now()
    Example.objects.filter(pk=example.pk).update(
        validation_state=state,
        settled_by_owner=example.settled_by_owner,
        settled_at=example.settled_at,
    )
    if previous != state:
        stats.stats_example_settled(example, previous)


@_retry_on_deadlock
def validation_submit(
    *,
    example_id: int,
    actor: Actor,
    label: str,
    metadata: Mapping | None = None,
    time_spent_ms: int | None = None,
    task: Task | None = None,
) -> Validation:
    """Record ``actor``'s verdict on an example and settle it on consensus (or an owner).

    Refuses the writer's own example, a second verdict by the same actor, and retracted or
    settled examples (``Conflict``). An owner's verdict settles the example at once.
    ``task``: the example's task as the caller loaded it (with the viewer's ownership, from
    ``selectors.task_for_actor``), if it has it; an example of another task is NotFound.
    """
    if label not in LABEL_COUNTER:
        raise ServiceError("choose correct, incorrect or flag", code="validation.label")
    if actor is None or not actor.is_authenticated:
        raise PermissionDenied("sign in to validate examples")
    # Whether this actor gave a verdict already, read with the lock: every path that inserts a
    # Validation locks the example first, so the answer holds until the insert (no savepoint).
    column, actor_id = actor.id_column()
    with transaction.atomic():
        example = _locked(example_id, "context", validated_by=column, actor_id=actor_id)
        if task is not None and example.task_id != task.pk:
            raise NotFound("no such example")
        if task is None:
            task = example.task
        if _is_creator(example, actor):
            raise PermissionDenied("you cannot validate your own example")
        if example.retracted:
            raise Conflict("the example was retracted", code="validation.retracted")
        if example.validation_state != ValidationState.PENDING:
            raise Conflict("the example is already settled", code="validation.settled")
        if example.validated_by_actor:
            raise Conflict("you already validated this example", code="validation.duplicate")
        metadata = _check_validate_metadata(example, label, metadata or {})
        owner_verdict = actor.user is not None and is_task_owner(actor.user, task)
        values = {
            "example": example,
            "label": label,
            "metadata": metadata,
            "is_owner_verdict": owner_verdict,
            "time_spent_ms": time_spent_ms,
            **actor.create_kwargs(),
        }
        counters = _counters_of(label)
        if chains_writes():
            # One statement: the validation, the example's counters, the validator's row.
            validation, _ = _VALIDATION_INSERT.create_chained(
                lambda validation: [
                    stats.counter_move(Example, example.pk, dict.fromkeys(counters, 1)),
                    *stats.new_validation_writes(validation, example),
                ],
                **values,
            )
        else:
            validation = _VALIDATION_INSERT.create(**values)
            _COUNT_VALIDATION[label].run(pk=example.pk)
            stats.stats_validation_created(validation)
        counter = LABEL_COUNTER[label]
        # The row is locked: the new values are the old ones plus one.
        for name in counters:
            setattr(example, name, getattr(example, name) + 1)
        if owner_verdict:
            _settle(example, label, by_owner=True)
        elif getattr(example, counter) >= max(1, task.num_matching_validations):
            _settle(example, label, by_owner=False)
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
        example = _locked(example_id, "context", "task")
        if not is_task_owner(user, example.task):
            raise PermissionDenied("only the task's owners review examples")
        if example.retracted:
            raise Conflict("the example was retracted", code="validation.retracted")
        # The owner's verdict is final even without the validators' optional answers.
        metadata = _check_validate_metadata(example, label, metadata) if metadata else {}
        counter = LABEL_COUNTER[label]
        previous = Validation.objects.filter(example=example, user=user).first()
        updates: dict[str, Any] = {}
        if previous is None:
            validation = Validation.objects.create(
                example=example, user=user, label=label, metadata=metadata, is_owner_verdict=True
            )
            updates = {"validation_count": F("validation_count") + 1, counter: F(counter) + 1}
            if label == ValidationLabel.FLAGGED:
                updates["flag_count"] = F("flag_count") + 1
        else:
            old_counter = LABEL_COUNTER.get(previous.label)
            if previous.label != label and old_counter:
                updates = {counter: F(counter) + 1, old_counter: F(old_counter) - 1}
            previous.label = label
            previous.metadata = metadata
            previous.is_owner_verdict = True
            previous.save(update_fields=["label", "metadata", "is_owner_verdict"])
            validation = previous
        if updates:
            Example.objects.filter(pk=example.pk).update(**updates)
        _settle(example, label, by_owner=True)
        del validation
    example.refresh_from_db()
    return example
