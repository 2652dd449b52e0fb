"""Counter increments buffered in Redis, applied to the database by a periodic job.

The request path writes no counter row. A service that changes an example computes the
``CounterDeltas`` of that change (``annotation.stats.counters``) and, once its transaction
has committed, queues them in Redis (``counters_queue``, in the pipeline that also queues the
live job when there is one): one ``HINCRBY`` per counter on a hash per counter row, whose
name joins the set of rows to flush. ``counters_flush`` (run every
``ANNOTATION_COUNTER_FLUSH_SECONDS`` by ``counters_flush_job`` on the live queue) reads the
buffered amounts, adds them to the rows with ``F()`` updates in one transaction, in the fixed
row order of ``CounterDeltas.items``, and then subtracts what it applied from the buffer.

Guarantees:

- Amounts are applied at least once: a flush that fails before its commit leaves the buffer
  as it was; increments that arrive during a flush stay for the next one. Only a flush that
  dies between its commit and the subtraction applies its amounts twice.
- One flush runs at a time (a lock with a timeout in Redis).
- When Redis cannot be reached, the increments are applied to the database at once.
- A Redis that restarts without persistence loses the increments not yet flushed;
  ``annotation.stats.recompute.stats_recompute`` rebuilds every counter from the data.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest
from redis.exceptions import RedisError

from annotation.live.connection import redis_connection
from annotation.models import CampaignWorker, RoundStats, WorkerStats
from annotation.stats.counters import CounterDeltas, CounterRow
from tasks.models import Context, Round

logger = logging.getLogger(__name__)

ROW_KEY_PREFIX = "annotation:counters:row:"
DIRTY_KEY = "annotation:counters:dirty"
FLUSH_LOCK_KEY = "annotation:counters:flush-lock"
FLUSH_LOCK_SECONDS = 60
# How many rows one flush takes at most (the rest wait for the next flush).
FLUSH_ROWS = 5000

# Subtract what a flush applied from one row's hash; drop the fields at zero, and the row from
# the dirty set once its hash is empty. Atomic per row: an increment that arrives
# meanwhile (HINCRBY, then SADD) keeps the row in the set.
_SUBTRACT = """
for i = 1, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], -tonumber(ARGV[i + 1]))
end
local values = redis.call('HGETALL', KEYS[1])
for i = 1, #values, 2 do
  if values[i + 1] == '0' then
    redis.call('HDEL', KEYS[1], values[i])
  end
end
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], KEYS[3])
end
return 0
"""
_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def _connection():
    return redis_connection()


def counters_queue(pipeline, deltas: CounterDeltas) -> None:
    """Add the commands that buffer ``deltas`` to ``pipeline`` (the caller executes it)."""
    for row, amounts in deltas.items():
        name = row.name()
        for field, amount in amounts.items():
            pipeline.hincrby(ROW_KEY_PREFIX + name, field, amount)
        pipeline.sadd(DIRTY_KEY, name)


def counters_add(deltas: CounterDeltas) -> None:
    """Buffer ``deltas`` now (one round trip); without Redis, apply them to the database."""
    if not deltas:
        return
    try:
        with _connection().pipeline(transaction=False) as pipe:
            counters_queue(pipe, deltas)
            pipe.execute()
    except RedisError:
        logger.warning("Redis is unreachable: counters applied to the database at once")
        counters_apply(deltas)


def counters_add_on_commit(deltas: CounterDeltas) -> None:
    """``counters_add`` once the current transaction commits (at once outside one)."""
    if deltas:
        transaction.on_commit(lambda: counters_add(deltas))


def _increments(amounts: Mapping[str, int]) -> dict:
    """``update()`` arguments adding ``amounts``; a counter never goes below zero."""
    updates = {}
    for field, amount in amounts.items():
        if amount > 0:
            updates[field] = F(field) + amount
        elif amount < 0:
            updates[field] = Greatest(F(field) - (-amount), Value(0))
    return updates


def _lookup(row: CounterRow) -> tuple[type, dict, dict, list]:
    """The model of ``row``, its filter, the extra values of a new row, and the rows a new
    row refers to (checked before it is created)."""
    if row.kind == "context":
        return Context, {"pk": row.key[0]}, {}, []
    round_id = row.key[0]
    refers = [Round.objects.filter(pk=round_id)]
    if row.kind == "round":
        return RoundStats, {"round_id": round_id}, {}, refers
    _, owner, owner_id, task_id = row.key
    owner_model = get_user_model() if owner == "user" else CampaignWorker
    refers.append(owner_model.objects.filter(pk=owner_id))
    lookup = {"round_id": round_id, f"{owner}_id": owner_id}
    return WorkerStats, lookup, {"task_id": task_id}, refers


def _apply_row(row: CounterRow, amounts: Mapping[str, int]) -> None:
    model, lookup, extra, refers = _lookup(row)
    updates = _increments(amounts)
    if not updates or model.objects.filter(**lookup).update(**updates):
        return
    # A row of a deleted context, round or worker is left out: foreign keys are checked at
    # the commit, where a missing one would fail the whole flush.
    if model is Context or not all(rows.exists() for rows in refers):
        return
    initial = {field: max(amount, 0) for field, amount in amounts.items()}
    try:
        with transaction.atomic():
            model.objects.create(**lookup, **extra, **initial)
    except IntegrityError:  # created meanwhile by another writer: move it
        model.objects.filter(**lookup).update(**updates)


def counters_apply(deltas: CounterDeltas) -> None:
    """Add ``deltas`` to the counter rows in one transaction, rows in their fixed order; a
    missing round or worker row is created."""
    if not deltas:
        return
    with transaction.atomic():
        for row, amounts in deltas.items():
            _apply_row(row, amounts)


def counters_buffered(connection=None) -> CounterDeltas:
    """The increments waiting in Redis (what the next flush would apply)."""
    deltas, _names = _read_buffer(connection or _connection(), limit=None)
    return deltas


def _read_buffer(connection, limit: int | None) -> tuple[CounterDeltas, list[str]]:
    names = [
        name.decode() if isinstance(name, bytes) else name
        for name in connection.smembers(DIRTY_KEY)
    ]
    names.sort()
    if limit is not None:
        names = names[:limit]
    with connection.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.hgetall(ROW_KEY_PREFIX + name)
        hashes = pipe.execute()
    deltas = CounterDeltas()
    kept = []
    for name, values in zip(names, hashes, strict=True):
        try:
            row = CounterRow.from_name(name)
            amounts = {_text(field): int(amount) for field, amount in values.items()}
            deltas.add(row, amounts)
        except ValueError:
            logger.error("dropped a malformed counter row in Redis: %r", name[:200])
            connection.srem(DIRTY_KEY, name)
            connection.delete(ROW_KEY_PREFIX + name)
            continue
        kept.append(name)
    return deltas, kept


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def counters_flush(connection=None) -> int:
    """Apply the buffered increments to the database; return how many rows moved.

    Returns 0 without doing anything while another flush holds the lock.
    """
    connection = connection or _connection()
    token = uuid.uuid4().hex
    if not connection.set(FLUSH_LOCK_KEY, token, nx=True, ex=FLUSH_LOCK_SECONDS):
        return 0
    try:
        deltas, names = _read_buffer(connection, FLUSH_ROWS)
        counters_apply(deltas)
        applied = dict(deltas.items())
        with connection.pipeline(transaction=False) as pipe:
            for name in names:
                amounts = applied.get(CounterRow.from_name(name), {})
                arguments = [part for field, amount in amounts.items() for part in (field, amount)]
                pipe.eval(_SUBTRACT, 3, ROW_KEY_PREFIX + name, DIRTY_KEY, name, *arguments)
            pipe.execute()
        return len(applied)
    finally:
        connection.eval(_UNLOCK, 1, FLUSH_LOCK_KEY, token)


def counters_flush_job() -> dict[str, int]:
    """RQ job: ``counters_flush``."""
    return {"rows": counters_flush()}
