"""Crowdworker statistics: cached counters (hooks), their reads and their repair.

The annotation services call the ``stats_*`` hooks inside their own transactions, once per
event. Each hook moves the cached counters of ``RoundStats``, ``WorkerStats`` and
``tasks.Context`` with ``F()`` expressions, so concurrent requests never lose an update.
``stats_recompute`` rebuilds every cached counter of a task from the data; tests assert that
the cached numbers always equal the recomputed ones. On PostgreSQL a new example's counters
move in its INSERT's own statement instead (``new_example_writes``), by the same amounts.

What the counters mean (the contract shared by the hooks and ``stats_recompute``):

- ``RoundStats.collected`` / ``WorkerStats.examples``: examples that are not retracted.
- ``fooled``: of those, the ones where ``model_wrong`` is True.
- ``verified_fooled``: of those, the ones settled ``correct`` (validators or owner).
- ``WorkerStats.rejected``: non-retracted examples settled ``incorrect``.
- ``RoundStats.validated``: non-retracted examples settled (any state but ``pending``).
- ``retracted``: retracted examples.
- ``WorkerStats.validations``: crowd validations (owner verdicts are not counted).
- ``WorkerStats.time_spent_ms``: the sum of ``time_spent_ms`` of the worker's examples and
  validations (retracted examples included: the time was spent).
- ``Context.fooled_count`` / ``validated_correct_count`` / ``validated_incorrect_count``:
  non-retracted examples of the context that fooled the model / were settled correct /
  were settled incorrect. (``example_count`` and ``times_served`` are moved by the services,
  through ``context_count_example`` and ``context_count_served``.)
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Q, Sum, Value
from django.db.models.functions import Coalesce, Greatest

from annotation.models import (
    Example,
    RoundStats,
    Validation,
    ValidationState,
    WorkerStats,
)
from dynatask_site.precompiled import ChainedWrite, PrecompiledUpdate
from tasks.models import Context, Round, Task

ROUND_FIELDS = ("collected", "fooled", "verified_fooled", "retracted", "validated")
WORKER_FIELDS = (
    "examples",
    "fooled",
    "verified_fooled",
    "rejected",
    "retracted",
    "validations",
    "time_spent_ms",
)
CONTEXT_FIELDS = ("fooled_count", "validated_correct_count", "validated_incorrect_count")


# --------------------------------------------------------------------------------------------
# Atomic counter moves
# --------------------------------------------------------------------------------------------


def _increments(deltas: Mapping[str, int]) -> dict:
    """Turn ``{field: delta}`` into ``update()`` kwargs; never let a counter go below zero."""
    updates = {}
    for field, delta in deltas.items():
        if delta > 0:
            updates[field] = F(field) + delta
        elif delta < 0:
            # A negative move on a row that drifted must not crash the caller's transaction;
            # ``stats_recompute`` repairs drift.
            updates[field] = Greatest(F(field) - (-delta), Value(0))
    return updates


# One compiled UPDATE per (table, lookup, counters moved and their directions): the hooks run
# on every submission and model answer, and compiling the UPDATE cost more than running it.
_counter_updates: dict[tuple, PrecompiledUpdate] = {}


def _move_counters(model, lookup: Mapping[str, int], deltas: Mapping[str, int]) -> int:
    """Add ``deltas`` to the rows of ``model`` matching ``lookup`` (``_increments``); return
    how many rows moved. The amounts are parameters of an UPDATE compiled once per shape."""
    moves = tuple((field, delta > 0) for field, delta in deltas.items() if delta)
    if not moves:
        return 0
    names = tuple(lookup)
    key = (model._meta.label, names, moves)
    update = _counter_updates.get(key)
    if update is None:

        def build(**values):
            changes = _increments(
                {
                    field: values[f"by_{field}"] if up else -values[f"by_{field}"]
                    for field, up in moves
                }
            )
            return model.objects.filter(**{name: values[name] for name in names}), changes

        update = PrecompiledUpdate(
            build, **dict.fromkeys(names, int), **{f"by_{field}": int for field, _ in moves}
        )
        _counter_updates[key] = update
    return update.run(**lookup, **{f"by_{field}": abs(deltas[field]) for field, _ in moves})


def _bump(model, lookup: dict, deltas: Mapping[str, int]) -> None:
    """Add ``deltas`` to the row of ``model`` matching ``lookup``, creating it if missing.

    One UPDATE in the common case. A missing row is inserted inside a savepoint; if a
    concurrent request inserted it first, the unique constraint fires and we update instead.
    """
    if not any(deltas.values()):
        return
    if _move_counters(model, lookup, deltas):
        return
    initial = {field: max(delta, 0) for field, delta in deltas.items()}
    try:
        with transaction.atomic():
            model.objects.create(**lookup, **initial)
    except IntegrityError:
        _move_counters(model, lookup, deltas)


def context_count_example(context_id: int) -> None:
    """Count one more example written on the context (``Context.example_count``)."""
    _move_counters(Context, {"pk": context_id}, {"example_count": 1})


def context_count_served(context_id: int) -> None:
    """Count one more showing of the context (``Context.times_served``)."""
    _move_counters(Context, {"pk": context_id}, {"times_served": 1})


def _worker_lookup(*, task_id, round_id, user_id, campaign_worker_id) -> dict | None:
    if user_id is not None:
        return {"task_id": task_id, "round_id": round_id, "user_id": user_id}
    if campaign_worker_id is not None:
        return {"task_id": task_id, "round_id": round_id, "campaign_worker_id": campaign_worker_id}
    return None


def _writer_lookup(example: Example) -> dict | None:
    """The key of the counter row of ``example``'s writer (``_worker_lookup``)."""
    return _worker_lookup(
        task_id=example.task_id,
        round_id=example.round_id,
        user_id=example.user_id,
        campaign_worker_id=example.campaign_worker_id,
    )


def _apply(example: Example, round_deltas, worker_deltas, context_deltas) -> None:
    """Move the counters of ``example``'s context, worker and round: one UPDATE each at most.

    Lock order, the same in every hook and in the services: the context row, then the
    worker row, then the round row (the hottest: every submit and every model answer of the
    round moves it, so it is taken last and held the shortest). Two transactions that took
    these rows in opposite orders deadlocked under load (the 500 of the load test).
    """
    if example.context_id is not None:
        _move_counters(Context, {"pk": example.context_id}, context_deltas)
    lookup = _writer_lookup(example)
    if lookup is not None and any(worker_deltas.values()):
        _bump(WorkerStats, lookup, worker_deltas)
    if any(round_deltas.values()):
        _bump(RoundStats, {"round_id": example.round_id}, round_deltas)


@dataclass(frozen=True)
class _Contribution:
    """What one non-retracted example adds to the counters beyond being collected."""

    fooled: int = 0
    verified_fooled: int = 0
    rejected: int = 0
    validated: int = 0
    context_correct: int = 0
    context_incorrect: int = 0


def _contribution(model_wrong: bool | None, state: str) -> _Contribution:
    settled = state != ValidationState.PENDING
    return _Contribution(
        fooled=int(model_wrong is True),
        verified_fooled=int(model_wrong is True and state == ValidationState.CORRECT),
        rejected=int(state == ValidationState.INCORRECT),
        validated=int(settled),
        context_correct=int(state == ValidationState.CORRECT),
        context_incorrect=int(state == ValidationState.INCORRECT),
    )


def _deltas(old: _Contribution, new: _Contribution, *, collected: int = 0):
    """Return the (round, worker, context) deltas of ``new - old`` plus ``collected``."""
    fooled = new.fooled - old.fooled
    verified = new.verified_fooled - old.verified_fooled
    rejected = new.rejected - old.rejected
    return (
        {
            "collected": collected,
            "fooled": fooled,
            "verified_fooled": verified,
            "validated": new.validated - old.validated,
        },
        {
            "examples": collected,
            "fooled": fooled,
            "verified_fooled": verified,
            "rejected": rejected,
        },
        {
            "fooled_count": fooled,
            "validated_correct_count": new.context_correct - old.context_correct,
            "validated_incorrect_count": new.context_incorrect - old.context_incorrect,
        },
    )


def _move(example: Example, old: _Contribution, new: _Contribution, *, collected: int = 0):
    """Apply ``new - old`` (plus ``collected`` examples) to every counter of ``example``."""
    _apply(example, *_deltas(old, new, collected=collected))


NOTHING = _Contribution()


# --------------------------------------------------------------------------------------------
# Hooks called by the annotation services (inside their transactions)
# --------------------------------------------------------------------------------------------


def stats_example_created(example: Example) -> None:
    """Count a new example (and its verdict and time, if already known at creation).

    Call once, right after the example row is inserted. If ``model_wrong`` is already set
    (e.g. no model in the loop and the worker gave the verdict), do not call
    ``stats_example_verdict`` again for it.
    """
    _apply(example, *_created_deltas(example))


def _created_deltas(example: Example) -> tuple[dict, dict, dict]:
    """The (round, worker, context) deltas of a new example."""
    if example.retracted:
        round_deltas, worker_deltas, context_deltas = {"retracted": 1}, {"retracted": 1}, {}
    else:
        contribution = _contribution(example.model_wrong, example.validation_state)
        round_deltas, worker_deltas, context_deltas = _deltas(NOTHING, contribution, collected=1)
    # The time spent moves with the same worker row: one UPDATE instead of two.
    if example.time_spent_ms and example.time_spent_ms > 0:
        worker_deltas = {**worker_deltas, "time_spent_ms": int(example.time_spent_ms)}
    return round_deltas, worker_deltas, context_deltas


def new_example_writes(example: Example) -> list[ChainedWrite]:
    """What ``context_count_example`` and ``stats_example_created`` write for the unsaved
    ``example``, as writes chained to its INSERT (``PrecompiledInsert.create_chained``).

    The same rows move by the same amounts, in the order of ``_apply``: the context, then
    the worker, then the round. A missing worker or round row is inserted by the same write
    (``INSERT ... ON CONFLICT DO UPDATE``), where ``_bump`` inserts it after its UPDATE found
    nothing.
    """
    round_deltas, worker_deltas, context_deltas = _created_deltas(example)
    return _chained_moves(
        example, round_deltas, worker_deltas, {**context_deltas, "example_count": 1}
    )


def verdict_writes(example: Example, model_wrong: bool | None) -> list[ChainedWrite]:
    """What ``stats_example_verdict`` writes for ``example``'s first verdict, ``model_wrong``,
    as writes chained to the UPDATE that stores it (``ColumnUpdate.run_chained``): the same
    rows by the same amounts, in the order of ``_apply``, a missing worker or round row
    inserted. Empty when nothing moves (a verdict that is not "fooled")."""
    if example.retracted:
        return []
    return _chained_moves(example, *_first_verdict_deltas(example, model_wrong))


def _first_verdict_deltas(example: Example, model_wrong: bool | None):
    """The (round, worker, context) deltas of ``example``'s first verdict, ``model_wrong``."""
    state = example.validation_state
    return _deltas(_contribution(None, state), _contribution(model_wrong, state))


def _chained_moves(example: Example, round_deltas, worker_deltas, context_deltas):
    """``_apply`` as chained writes: the context, then the worker, then the round; the rows
    that do not move are left out."""
    writes = []
    if example.context_id is not None and any(context_deltas.values()):
        writes.append(counter_move(Context, example.context_id, context_deltas))
    lookup = _writer_lookup(example)
    if lookup is not None and any(worker_deltas.values()):
        writes.append(_worker_upsert(lookup, worker_deltas))
    if any(round_deltas.values()):
        lookup = {"round_id": example.round_id}
        writes.append(_upsert(RoundStats, lookup, ("round_id",), round_deltas))
    return writes


def new_validation_writes(validation: Validation, example: Example) -> list[ChainedWrite]:
    """What ``stats_validation_created`` writes for the unsaved ``validation`` of
    ``example``, as writes chained to its INSERT: the validator's counter row (inserted if
    missing). Nothing for an owner's verdict."""
    lookup = _validator_lookup(validation, example)
    if lookup is None:
        return []
    return [_worker_upsert(lookup, _validation_deltas(validation))]


def _worker_upsert(lookup: dict, deltas: Mapping[str, int]) -> ChainedWrite:
    """``_upsert`` of the worker's counter row of ``lookup`` (``_worker_lookup``)."""
    owner = "user_id" if "user_id" in lookup else "campaign_worker_id"
    return _upsert(WorkerStats, lookup, ("round_id", owner), deltas)


def counter_move(model, pk: int, deltas: Mapping[str, int]) -> ChainedWrite:
    """Add ``deltas`` (none negative) to the counters of ``model``'s row ``pk``, as a write
    chained to an INSERT (``PrecompiledInsert.create_chained``)."""
    moves = _moves(deltas)
    return ChainedWrite(_counter_update_sql(model, tuple(moves)), (*moves.values(), pk))


def _moves(deltas: Mapping[str, int]) -> dict[str, int]:
    """The counters that move, in a fixed order (the compiled statement's shape)."""
    if any(delta < 0 for delta in deltas.values()):
        raise ValueError("a chained write only adds to the counters")
    return {field: delta for field, delta in sorted(deltas.items()) if delta}


def _upsert(model, lookup: dict, conflict: tuple[str, ...], deltas: Mapping[str, int]):
    """Add ``deltas`` to ``model``'s row of ``lookup``, inserting it if missing (one write).

    ``conflict`` names the columns of the unique constraint on the row's key (a partial one
    gets its predicate in the statement).
    """
    moves = _moves(deltas)
    sql, fields = _counter_upsert_sql(model, conflict, tuple(lookup), tuple(moves))
    row = model(**lookup, **moves)
    params = tuple(
        field.get_db_prep_save(field.pre_save(row, True), connection=connection) for field in fields
    )
    return ChainedWrite(sql, params)


@functools.cache
def _counter_update_sql(model, fields: tuple[str, ...]) -> str:
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    sets = ", ".join(
        f"{quote(column)} = {table}.{quote(column)} + %s"
        for column in (model._meta.get_field(field).column for field in fields)
    )
    key = quote(model._meta.pk.column)
    # Names from the model's meta, values as parameters.
    return f"UPDATE {table} SET {sets} FROM {{after}} WHERE {table}.{key} = %s RETURNING 1"  # noqa: S608


@functools.cache
def _counter_upsert_sql(
    model, conflict: tuple[str, ...], keys: tuple[str, ...], fields: tuple[str, ...]
):
    """The statement and the fields whose values it takes, in order.

    The row's key (``keys``, attnames) and the counters that move (``fields``) are
    parameters; every other column takes its default, written into the statement when it is
    an integer or NULL. The statement then has few parameters, which keeps psycopg's cache of
    converted statements (at most 50 parameters) working for the INSERT it is chained to.
    """
    quote = connection.ops.quote_name
    meta = model._meta
    table = quote(meta.db_table)
    columns = tuple(field for field in meta.local_concrete_fields if field not in meta.pk_fields)
    taken = []
    values = []
    for field in columns:
        default = None if field.name in fields or field.attname in keys else _literal(field)
        if default is None:
            taken.append(field)
            default = "%s"
        values.append(f"CAST({default} AS {field.cast_db_type(connection)})")
    # A partial unique constraint is a conflict target only with its predicate.
    by_column = {field.column: field for field in columns}
    predicate = " AND ".join(
        f"{quote(column)} IS NOT NULL" for column in conflict if by_column[column].null
    )
    target = f"({', '.join(quote(column) for column in conflict)})" + (
        f" WHERE {predicate}" if predicate else ""
    )
    sets = ", ".join(
        f"{quote(column)} = {table}.{quote(column)} + EXCLUDED.{quote(column)}"
        for column in (meta.get_field(field).column for field in fields)
    )
    names = ", ".join(quote(field.column) for field in columns)
    # Names from the model's meta, integer defaults, values as parameters.
    sql = (
        f"INSERT INTO {table} ({names}) "  # noqa: S608
        f"SELECT {', '.join(values)} FROM {{after}} "
        f"ON CONFLICT {target} DO UPDATE SET {sets} RETURNING 1"
    )
    return sql, tuple(taken)


def _literal(field) -> str | None:
    """``field``'s default as SQL text when it is an integer or NULL (else None)."""
    if not field.has_default():
        return "NULL" if field.null else None
    default = field.get_default()
    return str(default) if type(default) is int else None


def stats_example_verdict(example: Example, previous_model_wrong: bool | None = None) -> None:
    """Count the verdict once ``example.model_wrong`` is known (fooled when True).

    ``previous_model_wrong`` is the value before the change (None the first time); pass it
    if a verdict is ever revised so its contribution is undone.
    """
    if example.retracted:
        return
    state = example.validation_state
    _move(
        example,
        _contribution(previous_model_wrong, state),
        _contribution(example.model_wrong, state),
    )


def stats_examples_verdict(examples: list[Example]) -> None:
    """``stats_example_verdict`` (a first verdict) of several examples at once: each counter
    row moves once, by the sum of its examples' deltas, in the order of ``_apply`` (all the
    contexts, then all the workers, then all the rounds, each by key). A drain of the live
    queue stores a batch of answers in one transaction with this."""
    contexts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    workers: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rounds: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for example in examples:
        if example.retracted:
            continue
        round_deltas, worker_deltas, context_deltas = _first_verdict_deltas(
            example, example.model_wrong
        )
        lookup = _writer_lookup(example)
        for target, key, deltas in (
            (contexts, example.context_id, context_deltas),
            (workers, tuple(lookup.items()) if lookup else None, worker_deltas),
            (rounds, example.round_id, round_deltas),
        ):
            if key is not None:
                for field, delta in deltas.items():
                    target[key][field] += delta
    for context_id in sorted(contexts):
        _move_counters(Context, {"pk": context_id}, contexts[context_id])
    for lookup in sorted(workers):
        if any(workers[lookup].values()):
            _bump(WorkerStats, dict(lookup), workers[lookup])
    for round_id in sorted(rounds):
        if any(rounds[round_id].values()):
            _bump(RoundStats, {"round_id": round_id}, rounds[round_id])


def stats_example_retracted(example: Example) -> None:
    """Move an example from the collected counters to ``retracted`` (call once per retraction).

    ``example`` carries its state at retraction time (``model_wrong``, ``validation_state``).
    """
    old = _contribution(example.model_wrong, example.validation_state)
    round_deltas, worker_deltas, context_deltas = _deltas(old, NOTHING, collected=-1)
    # One move, so the rows are taken once and in the order of ``_apply``.
    _apply(
        example,
        {**round_deltas, "retracted": 1},
        {**worker_deltas, "retracted": 1},
        context_deltas,
    )


def stats_example_settled(example: Example, previous_state: str) -> None:
    """Count a change of ``example.validation_state`` from ``previous_state``.

    Called once per change out of PENDING (consensus) and once per owner override, with the
    new state already on ``example``. Verified fooled when settled correct and model_wrong;
    rejected when settled incorrect; the previous state's contribution is undone.
    """
    if example.retracted or previous_state == example.validation_state:
        return
    _move(
        example,
        _contribution(example.model_wrong, previous_state),
        _contribution(example.model_wrong, example.validation_state),
    )


def stats_validation_created(validation: Validation) -> None:
    """Count a crowd validation for its worker, in the round of the validated example.

    Owner verdicts are not crowd work and are not counted here (the settle hook counts
    their effect on the example).
    """
    lookup = _validator_lookup(validation, validation.example)
    if lookup is not None:
        _bump(WorkerStats, lookup, _validation_deltas(validation))


def _validator_lookup(validation: Validation, example: Example) -> dict | None:
    """The key of the counter row of a crowd validation's validator (``_worker_lookup``);
    None for an owner's verdict, which is not crowd work."""
    if validation.is_owner_verdict:
        return None
    return _worker_lookup(
        task_id=example.task_id,
        round_id=example.round_id,
        user_id=validation.user_id,
        campaign_worker_id=validation.campaign_worker_id,
    )


def _validation_deltas(validation: Validation) -> dict[str, int]:
    return {"validations": 1, "time_spent_ms": validation.time_spent_ms or 0}


def stats_time_spent(item: Example | Validation, milliseconds: int) -> None:
    """Add ``milliseconds`` to the worker's time (``item`` is the example or validation)."""
    if milliseconds <= 0:
        return
    example = item.example if isinstance(item, Validation) else item
    lookup = _worker_lookup(
        task_id=example.task_id,
        round_id=example.round_id,
        user_id=item.user_id,
        campaign_worker_id=item.campaign_worker_id,
    )
    if lookup is not None:
        _bump(WorkerStats, lookup, {"time_spent_ms": int(milliseconds)})


# --------------------------------------------------------------------------------------------
# Repair: rebuild the cached counters from the data
# --------------------------------------------------------------------------------------------


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


@transaction.atomic
def stats_recompute(task: Task) -> dict:
    """Rebuild the task's RoundStats, WorkerStats and Context counters from the data.

    For the admin's repair action. Locks the task's RoundStats rows while rewriting so a
    concurrent hook waits. Returns how many rows of each kind were written.
    """
    round_ids = list(Round.objects.filter(task=task).values_list("id", flat=True))
    list(RoundStats.objects.select_for_update().filter(round_id__in=round_ids))
    aggregates = _example_aggregates()

    # Rounds.
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

    # Workers: examples, then validations, merged per (round, user | campaign worker).
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

    # Contexts: one UPDATE with correlated subqueries would lock many rows for long; the
    # counts per context are grouped once and written per changed context.
    context_counts = {
        row["context_id"]: row
        for row in Example.objects.filter(task=task, retracted=False, context__isnull=False)
        .order_by()
        .values("context_id")
        .annotate(
            fooled_count=Count("id", filter=Q(model_wrong=True)),
            validated_correct_count=Count("id", filter=Q(validation_state=ValidationState.CORRECT)),
            validated_incorrect_count=Count(
                "id", filter=Q(validation_state=ValidationState.INCORRECT)
            ),
        )
    }
    changed = []
    for context in Context.objects.filter(task=task).only("id", *CONTEXT_FIELDS):
        row = context_counts.get(context.id, {})
        values = {field: row.get(field, 0) for field in CONTEXT_FIELDS}
        if any(getattr(context, field) != value for field, value in values.items()):
            for field, value in values.items():
                setattr(context, field, value)
            changed.append(context)
    Context.objects.bulk_update(changed, CONTEXT_FIELDS, batch_size=1000)
    return {"rounds": len(round_rows), "workers": len(workers), "contexts": len(changed)}


def _worker_key(row: dict) -> tuple:
    """One worker per round: a user, else a campaign worker (user wins if both are set)."""
    user_id = row["user_id"]
    return (row["round_id"], user_id, None if user_id is not None else row["campaign_worker_id"])


# --------------------------------------------------------------------------------------------
# Selectors
# --------------------------------------------------------------------------------------------


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass(frozen=True)
class RoundSummary:
    """The public numbers of one round (MER = model error rate, vMER = verified MER)."""

    round_id: int
    number: int
    collected: int
    fooled: int
    verified_fooled: int
    validated: int
    retracted: int

    @property
    def model_error_rate(self) -> float | None:
        return _rate(self.fooled, self.collected)

    @property
    def verified_model_error_rate(self) -> float | None:
        return _rate(self.verified_fooled, self.collected)


def _summary(round_: Round, stats: RoundStats | None) -> RoundSummary:
    return RoundSummary(
        round_id=round_.pk,
        number=round_.number,
        **{field: getattr(stats, field, 0) if stats else 0 for field in ROUND_FIELDS},
    )


def round_stats(round: Round) -> RoundSummary:
    """The cached counters of a round and its (verified) model error rates."""
    return _summary(round, RoundStats.objects.filter(round=round).first())


def task_round_stats(task: Task) -> list[RoundSummary]:
    """Every round of a task with its numbers, oldest first (one query)."""
    rounds = Round.objects.filter(task=task).select_related("stats").order_by("number")
    return [_summary(round_, getattr(round_, "stats", None)) for round_ in rounds]


@dataclass(frozen=True)
class WorkerSummary:
    """One worker's counters over a task (or one round) and the rates the page shows."""

    user_id: int | None
    campaign_worker_id: int | None
    name: str
    examples: int
    fooled: int
    verified_fooled: int
    rejected: int
    retracted: int
    validations: int
    time_spent_ms: int

    @property
    def fooled_rate(self) -> float | None:
        return _rate(self.fooled, self.examples)

    @property
    def verified_fooled_rate(self) -> float | None:
        return _rate(self.verified_fooled, self.examples)

    @property
    def rejected_rate(self) -> float | None:
        return _rate(self.rejected, self.examples)

    @property
    def retracted_rate(self) -> float | None:
        return _rate(self.retracted, self.examples + self.retracted)


def _worker_rows(task: Task, round_: Round | None):
    rows = WorkerStats.objects.filter(task=task)
    if round_ is not None:
        rows = rows.filter(round=round_)
    return rows.order_by().values("user_id", "campaign_worker_id")


def _worker_totals():
    return {field: Sum(field) for field in WORKER_FIELDS}


def _board_order(rows):
    return rows.order_by(
        "-verified_fooled", "-fooled", "-examples", "user_id", "campaign_worker_id"
    )


def worker_stats(task: Task, round: Round | None = None) -> list[WorkerSummary]:
    """Per worker (user or campaign worker) counters and rates, best first (for owners)."""
    rows = list(
        _board_order(
            _worker_rows(task, round).annotate(
                **_worker_totals(),
                username=F("user__username"),
                external_id=F("campaign_worker__external_id"),
            )
        )
    )
    return [_worker_summary(row) for row in rows]


def _worker_summary(row: dict) -> WorkerSummary:
    if row["user_id"] is not None:
        name = row.get("username") or f"user {row['user_id']}"
    else:
        name = f"campaign worker {row.get('external_id') or row['campaign_worker_id']}"
    return WorkerSummary(
        user_id=row["user_id"],
        campaign_worker_id=row["campaign_worker_id"],
        name=name,
        **{field: row[field] or 0 for field in WORKER_FIELDS},
    )


LEADERBOARD_PAGE_SIZE = 25


def user_leaderboard(
    task: Task,
    round: Round | None = None,
    page: int | str | None = 1,
    per_page: int = LEADERBOARD_PAGE_SIZE,
):
    """A page of signed-in users ranked by verified fooling examples (then fooled, examples).

    Returns a ``django.core.paginator.Page`` of ``WorkerSummary``; a bad or out-of-range
    page number gives the nearest valid page. Two queries (count and page).
    """
    from django.core.paginator import Paginator

    rows = _board_order(
        WorkerStats.objects.filter(task=task, user__isnull=False)
        .filter(**({"round": round} if round is not None else {}))
        .order_by()
        .values("user_id", "campaign_worker_id")
        .annotate(**_worker_totals(), username=F("user__username"))
        .filter(Q(examples__gt=0) | Q(validations__gt=0) | Q(retracted__gt=0))
    )
    paginator = Paginator(rows, per_page)
    board_page = paginator.get_page(page)
    board_page.object_list = [_worker_summary(row) for row in board_page.object_list]
    return board_page


@dataclass(frozen=True)
class Agreement:
    """Inter-annotator agreement over the crowd validations of a round."""

    examples: int  # examples with at least two validations
    validations: int  # validations on those examples
    fleiss_kappa: float | None
    krippendorff_alpha: float | None


def round_agreement(round: Round) -> Agreement:
    """Fleiss' kappa and Krippendorff's alpha (nominal) over the round's crowd validations.

    Owner verdicts are not ratings by independent annotators and are left out, as are
    retracted examples. One streamed query, grouped in Python by example.
    """
    from annotation.agreement import category_counts, fleiss_kappa, krippendorff_alpha
    from annotation.models import ValidationLabel

    labels = (
        Validation.objects.filter(
            example__round=round, example__retracted=False, is_owner_verdict=False
        )
        .order_by("example_id")
        .values_list("example_id", "label")
    )
    units: list[list[str]] = []
    current_id, current = None, []
    for example_id, label in labels.iterator(chunk_size=5000):
        if example_id != current_id:
            if len(current) >= 2:
                units.append(current)
            current_id, current = example_id, []
        current.append(label)
    if len(current) >= 2:
        units.append(current)
    return Agreement(
        examples=len(units),
        validations=sum(len(unit) for unit in units),
        fleiss_kappa=fleiss_kappa(category_counts(units, ValidationLabel.values)),
        krippendorff_alpha=krippendorff_alpha(units),
    )


AGREEMENT_CACHE_SECONDS = 60


def round_agreement_cached(round_id: int) -> Agreement:
    """``round_agreement`` for pages: it reads every validation of the round, so cache it
    for a minute (the default cache) instead of recomputing it on every view."""
    from django.core.cache import cache

    key = f"annotation:round_agreement:{round_id}"
    agreement = cache.get(key)
    if agreement is None:
        agreement = round_agreement(round_id)
        cache.set(key, agreement, AGREEMENT_CACHE_SECONDS)
    return agreement


def round_by_number(task: Task, value) -> Round | None:
    """Return the task's round numbered ``value`` (None for an empty value).

    Raises ServiceError (400) for a value that is not a number, NotFound for an unknown round.
    """
    from tasks.errors import NotFound, ServiceError

    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip()
    if not text.isdigit() or len(text) > 9:
        raise ServiceError(f"round must be a number, not {text[:20]!r}", code="round.bad_number")
    round_ = Round.objects.filter(task=task, number=int(text)).first()
    if round_ is None:
        raise NotFound(f"round {text} does not exist for task {task.code}", code="round.missing")
    return round_
