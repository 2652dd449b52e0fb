"""Reads of the annotation app: the task and round an actor works on, contexts, examples,
the validation queue and the owners' review queue. Every query is bounded and index-backed."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet

from annotation.actors import Actor
from annotation.models import Example, ExampleStatus, Validation, ValidationState
from annotation.sampling import sample_context
from annotation.services import MODEL_ANSWER_FIELDS
from dynatask_site.auth_backends import user_lookup
from dynatask_site.precompiled import PrecompiledQuery, first_together
from tasks.errors import NotFound, PermissionDenied
from tasks.models import Context, Round, Task
from tasks.permissions import can_contribute, can_review_examples, can_view_task
from tasks.selectors import round_current, task_get_visible, with_ownership_of

# Examples ready for validation: a worker finished them (the model answered, or none was in
# the loop). Awaiting or failed model calls are not shown to validators.
VALIDATABLE_STATUSES = (ExampleStatus.MODEL_ANSWERED, ExampleStatus.NO_MODEL)


def _one(queryset: QuerySet):
    """Return the first row of ``queryset`` by a unique key, or None.

    Unlike ``.first()`` it adds no ORDER BY: on a hot path compiling the model's ordering
    (through every ``select_related`` table) cost about half a millisecond per query.
    """
    return next(iter(queryset.order_by()[:1]), None)


def _task_by_code(code: str) -> QuerySet[Task]:
    return Task.objects.select_related("current_config").filter(code=code).order_by()


# The hot lookups of the create and validate pages, compiled once (``PrecompiledQuery``).
_TASK = PrecompiledQuery(lambda code: _task_by_code(code)[:1], code=str)
_TASK_WITH_OWNERSHIP = PrecompiledQuery(
    lambda code, user_id: with_ownership_of(_task_by_code(code), user_id)[:1],
    code=str,
    user_id=int,
)
_OPEN_ROUND_WITH_TASK = PrecompiledQuery(
    lambda code, user_id: Round.objects.filter(task__code=code, is_open=True)
    .select_related("task", "task__current_config")
    .annotate(
        viewer_owns=Exists(
            Task.owners.through.objects.filter(task_id=OuterRef("task_id"), user_id=user_id)
        )
    )
    .order_by("-number")[:1],
    code=str,
    user_id=int,
)
_CONTEXT_BY_PK = PrecompiledQuery(lambda pk: Context.objects.filter(pk=pk).order_by()[:1], pk=int)
_CONTEXT = PrecompiledQuery(
    lambda round_id, pk: Context.objects.filter(round_id=round_id, pk=pk).order_by()[:1],
    round_id=int,
    pk=int,
)


@dataclass(frozen=True)
class Prefetched:
    """What a signed-in user's request read before its view ran, with the user's row, in
    one statement (``prefetch``). ``task_for_actor``, ``task_and_round_for_actor`` and
    ``context_get`` take their rows from it instead of querying, for that user and task."""

    user_id: int
    code: str
    user: Any
    task: Task | None = None
    # Whether the latest open round was read (``round`` None then: no round is open).
    round_read: bool = False
    round: Round | None = None
    context_id: str | None = None
    context: Context | None = None
    # The example to validate, with whether it is in the user's queue (``in_queue``).
    example_id: int | None = None
    example: Example | None = None

    def serves(self, code: str, actor: Actor | None) -> bool:
        return (
            self.code == code
            and actor is not None
            and actor.campaign_worker is None
            and actor.user is not None
            and actor.user.pk == self.user_id
        )


def prefetch(
    user_id: Any,
    code: str,
    *,
    with_round: bool = False,
    context_id: str | None = None,
    example_id: int | None = None,
) -> Prefetched | None:
    """Read user ``user_id`` (as the auth backend does), task ``code`` with whether the user
    owns it (``with_round``: its latest open round with the task), context ``context_id``
    and example ``example_id`` with whether it is in the user's validation queue, in one
    statement. None when there is no such user."""
    users = user_lookup()
    if users is None:
        return None
    task_read = _OPEN_ROUND_WITH_TASK if with_round else _TASK_WITH_OWNERSHIP
    reads = [(users, {"pk": user_id}), (task_read, {"code": code, "user_id": user_id})]
    if context_id:
        reads.append((_CONTEXT_BY_PK, {"pk": context_id}))
    if example_id is not None:
        reads.append((_IN_QUEUE["user_id"], {"actor_id": user_id, "pk": example_id}))
    user, found, *rest = first_together(*reads)
    if user is None:
        return None
    if with_round:
        task = _task_of_round(found, user.pk) if found is not None else None
        round_ = found
    else:
        task, round_ = found, None
        if task is not None:
            task.viewer_owns_for = user.pk
    return Prefetched(
        user_id=user.pk,
        code=code,
        user=user,
        task=task,
        round_read=with_round,
        round=round_,
        context_id=context_id or None,
        context=rest.pop(0) if context_id else None,
        example_id=example_id,
        example=rest.pop(0) if example_id is not None else None,
    )


def task_for_actor(code: str, actor: Actor | None, prefetched: Prefetched | None = None) -> Task:
    """Return task ``code`` if ``actor`` may work on it (current config and, for a signed-in
    actor, whether they own it: one query, none with ``prefetched``)."""
    if prefetched is not None and prefetched.task is not None and prefetched.serves(code, actor):
        task = prefetched.task
    elif actor is not None and actor.user is not None and actor.user.is_authenticated:
        task = _TASK_WITH_OWNERSHIP.first(code=code, user_id=actor.user.pk)
        if task is not None:
            task.viewer_owns_for = actor.user.pk
    else:
        task = _TASK.first(code=code)
    return _checked(task, code, actor)


def _checked(task: Task | None, code: str, actor: Actor | None) -> Task:
    """``task`` if ``actor`` may work on it, else raise (``task_for_actor``)."""
    if task is None:
        raise NotFound(f"no task {code!r}")
    if actor is None:
        raise PermissionDenied("sign in to work on this task")
    if actor.user is not None:
        if not can_view_task(actor.user, task):
            raise NotFound(f"no task {code!r}")
        if not can_contribute(actor.user, task):
            raise PermissionDenied("this task takes no new work at the moment")
    elif not (task.active and actor.may_act_on(task)):
        raise PermissionDenied("your campaign link is for another task")
    if task.current_config_id is None:
        raise NotFound("this task has no config yet")
    return task


def _task_of_round(round_: Round, user_id: int) -> Task:
    """The task read with ``round_`` (``_OPEN_ROUND_WITH_TASK``), knowing whether the user
    owns it."""
    task = round_.task
    task.viewer_owns = round_.viewer_owns
    task.viewer_owns_for = user_id
    return task


def task_and_round_for_actor(
    code: str, actor: Actor | None, prefetched: Prefetched | None = None
) -> tuple[Task, Round | None]:
    """``task_for_actor`` and ``round_for_actor`` together.

    For a signed-in user whose task has an open round it is one query (none with
    ``prefetched``): the latest open round with its task, the task's config and whether the
    user owns the task. Otherwise (no open round, no such task, a campaign worker, nobody
    signed in) it is ``task_for_actor``, then ``round_for_actor``.
    """
    user = actor.user if actor is not None else None
    if user is not None and user.is_authenticated and actor.campaign_worker is None:
        if prefetched is not None and prefetched.round_read and prefetched.serves(code, actor):
            round_ = prefetched.round
        else:
            round_ = _OPEN_ROUND_WITH_TASK.first(code=code, user_id=user.pk)
        if round_ is not None:
            return _checked(_task_of_round(round_, user.pk), code, actor), round_
    task = task_for_actor(code, actor)
    return task, round_for_actor(task, actor)


def task_for_reviewer(code: str, user) -> Task:
    """Return task ``code`` for one of its owners (the review queue), else raise."""
    task = task_get_visible(code, user)
    if not can_review_examples(user, task):
        raise PermissionDenied("only the task's owners review examples")
    return task


def round_for_actor(task: Task, actor: Actor) -> Round | None:
    """The campaign's round for a campaign worker, else the task's latest open round."""
    if actor.campaign_worker is not None:
        return actor.campaign_worker.campaign.round
    return round_current(task)


def context_sample(
    task: Task, round_: Round, strategy: str, tag: str, actor: Actor | None = None
) -> Context | None:
    """Return a context of ``round_`` sampled by ``strategy`` (see ``annotation.sampling``)."""
    del task, actor  # the round names the task; every actor gets the same strategy
    return sample_context(round_, strategy, tag, random.Random())  # noqa: S311


def example_model_answer(example_id: int) -> dict:
    """Return what the live job writes on example ``example_id`` (``MODEL_ANSWER_FIELDS``)."""
    values = Example.objects.filter(pk=example_id).values_list(*MODEL_ANSWER_FIELDS).get()
    return dict(zip(MODEL_ANSWER_FIELDS, values, strict=True))


def context_get(
    round_: Round, context_id: int | str | None, prefetched: Prefetched | None = None
) -> Context | None:
    """Return context ``context_id`` of ``round_``; None for none, another round's or a
    value that is not an id. ``prefetched``: read with the request's user (``prefetch``)."""
    if not context_id:
        return None
    if prefetched is not None and prefetched.context_id == context_id:
        context = prefetched.context
        if context is not None and context.round_id != round_.pk:
            context = None
    else:
        context = _CONTEXT.first(round_id=round_.pk, pk=context_id)
    if context is not None:
        context.round = round_
    return context


def _examples_with_config() -> QuerySet[Example]:
    return Example.objects.select_related("config_version", "context", "model")


def example_get_for_actor(task: Task, example_id: int, actor: Actor) -> Example:
    """Return the actor's own example ``example_id`` of ``task`` (owners may see any)."""
    example = _one(_examples_with_config().filter(task=task, pk=example_id))
    if example is None:
        raise NotFound("no such example")
    own = (actor.user is not None and example.user_id == actor.user.pk) or (
        actor.campaign_worker is not None and example.campaign_worker_id == actor.campaign_worker.pk
    )
    if not own and not (actor.user is not None and can_review_examples(actor.user, task)):
        raise NotFound("no such example")
    return example


def _in_queue_of(column: str, actor_id: int) -> Q:
    """The condition of an example in the validation queue of the actor whose ``column``
    (``user_id`` or ``campaign_worker_id``) is ``actor_id``: pending, not retracted, with an
    answer or no model, not the actor's own, not validated by them (NOT EXISTS)."""
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


def _queue_of(task_id: int, column: str, actor_id: int) -> QuerySet[Example]:
    return Example.objects.filter(_in_queue_of(column, actor_id), task_id=task_id)


def validation_queue(task: Task, actor: Actor) -> QuerySet[Example]:
    """Examples ``actor`` may validate: pending, not retracted, not theirs, not validated.

    The filter matches the partial index ``example_validation_queue``.
    """
    column, actor_id = actor.id_column()
    return _queue_of(task.pk, column, actor_id)


# How many of the queue's least validated examples (by validation count, then age) a
# validator is offered one of, at random among those validated least. Offering every
# validator the very first example, as the queue once did, sent everyone who opened the page
# at about the same time to the same example: once enough agreed it settled, and the rest
# were turned away. In the load test (50 workers) 64% of the validations sent were lost that
# way. Spread over this many, concurrent validators rarely meet on one example.
VALIDATION_SPREAD = 32

# The validate page's reads, compiled once per shape (``PrecompiledQuery``): the next example
# of each verdict, and an example still in the queue, for a user or a campaign worker.
_VERDICTS = {
    "fooled": {"model_wrong": True},
    "not_fooled": {"model_wrong": False},
    "no_verdict": {"model_wrong__isnull": True},
}


def _next_of(task_id: int, column: str, actor_id: int, lookup: dict) -> QuerySet[Example]:
    """One example at random among the least validated of the first ``VALIDATION_SPREAD``
    of the queue: the subquery walks ``example_validation_queue`` in its order and stops."""
    first = (
        _queue_of(task_id, column, actor_id)
        .filter(**lookup)
        .order_by("validation_count", "id")
        .values("pk")[:VALIDATION_SPREAD]
    )
    return (
        Example.objects.filter(pk__in=first)
        .select_related("config_version", "context")
        .order_by("validation_count", "?")[:1]
    )


_NEXT_TO_VALIDATE = {
    (verdict, column): PrecompiledQuery(
        lambda task_id, actor_id, column=column, lookup=lookup: _next_of(
            task_id, column, actor_id, lookup
        ),
        task_id=int,
        actor_id=int,
    )
    for verdict, lookup in _VERDICTS.items()
    for column in ("user_id", "campaign_worker_id")
}
# The validate POST's example, read by its primary key with whether it is still in the
# actor's queue as a column (``in_queue``); its task is checked on the row. As a filter, the
# queue's condition let PostgreSQL take the partial index ``example_validation_queue`` for
# the lookup, when its statistics lagged behind a growing table (the load test's), and walk
# the task's whole queue in it (1.0-1.4 ms a call at 3,000 examples, growing with the queue)
# instead of one row.
_IN_QUEUE = {
    column: PrecompiledQuery(
        lambda actor_id, pk, column=column: Example.objects.filter(pk=pk)
        .annotate(
            in_queue=ExpressionWrapper(_in_queue_of(column, actor_id), output_field=BooleanField())
        )
        .select_related("config_version", "context")
        .order_by()[:1],
        actor_id=int,
        pk=int,
    )
    for column in ("user_id", "campaign_worker_id")
}


def example_next_to_validate(task: Task, actor: Actor) -> Example | None:
    """Return the next example for ``actor`` to validate, least validated first.

    Fooling examples come first, then examples without a verdict (no model in the loop);
    examples that did not fool the model are queued only with ``validate_non_fooling``, and
    then the order is least validated first whatever the verdict. Each candidate query walks
    ``example_validation_queue`` (task, model_wrong, validation_count, id) for at most
    ``VALIDATION_SPREAD`` rows and takes one at random among the least validated of them
    (so that validators who come at once get different examples): at most three queries,
    whatever the table size.
    """
    column, actor_id = actor.id_column()

    def first(verdict: str) -> Example | None:
        return _NEXT_TO_VALIDATE[verdict, column].first(task_id=task.pk, actor_id=actor_id)

    if not task.validate_non_fooling:
        return first("fooled") or first("no_verdict")
    candidates = [
        example
        for example in (first("fooled"), first("not_fooled"), first("no_verdict"))
        if example is not None
    ]
    if not candidates:
        return None
    least = min(example.validation_count for example in candidates)
    return random.choice([example for example in candidates if example.validation_count == least])


def example_for_validation(
    task: Task, example_id: int | None, actor: Actor, prefetched: Prefetched | None = None
) -> Example | None:
    """Return example ``example_id`` if it is still in ``actor``'s validation queue of
    ``task``. ``prefetched``: read with the request's user (``prefetch``)."""
    if example_id is None:
        return None
    if (
        prefetched is not None
        and prefetched.example_id == example_id
        and prefetched.serves(task.code, actor)
    ):
        example = prefetched.example
    else:
        column, actor_id = actor.id_column()
        example = _IN_QUEUE[column].first(actor_id=actor_id, pk=example_id)
    if example is None or example.task_id != task.pk or not example.in_queue:
        return None
    return example


REVIEW_PAGE_SIZE = 50


def review_queue(
    task: Task,
    min_flags: int = 0,
    disagreement: bool = False,
    include_settled: bool = False,
    limit: int = REVIEW_PAGE_SIZE,
) -> list[Example]:
    """Examples for the owners' review: most flagged first, optionally with disagreement.

    Disagreement means validators gave different verdicts (at least two kinds of label).
    Settled examples are left out unless ``include_settled`` (an owner may override them).
    """
    queryset = Example.objects.filter(task=task, retracted=False).exclude(
        status=ExampleStatus.AWAITING_MODEL
    )
    if not include_settled:
        queryset = queryset.filter(validation_state=ValidationState.PENDING)
    if min_flags:
        queryset = queryset.filter(flag_count__gte=min_flags)
    if disagreement:
        queryset = queryset.filter(
            (Q(correct_count__gt=0) & (Q(incorrect_count__gt=0) | Q(flagged_count__gt=0)))
            | (Q(incorrect_count__gt=0) & Q(flagged_count__gt=0))
        )
    return list(
        queryset.select_related("config_version", "context", "user").order_by(
            "-flag_count", "-validation_count", "id"
        )[:limit]
    )
