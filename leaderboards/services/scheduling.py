"""Fair evaluation: a per-model limit on running shards, and round-robin between models.

A slow or broken model must not hold the eval workers while other models wait. Two rules,
kept in Redis with plain commands (two sorted sets per model, changed by Lua scripts so
that each change is atomic):

``slots:<model>``
    The shard jobs of the model that hold a slot, by RQ job id, scored by the time their
    hold expires. At most ``EVAL_SHARDS_PER_MODEL`` (default 1) shard jobs of a model run
    at once. A job takes its slot when it starts (``model_slot_acquire``) and gives it back
    when it ends (``model_slot_release``); a slot can also be *reserved* for a job that was
    just enqueued for a waiting shard (its id is known before it is enqueued).
``waiting:<model>``
    The model's shards that wait for a slot, by shard id, scored by the time they began to
    wait (first come, first served). A shard job that finds no free slot parks its shard
    here and ends at once: it holds no worker while it waits.

When a job gives its slot back, the oldest waiting shards of its model get the free slots
(reserved) and new jobs, enqueued at the back of the ``eval`` queue: behind every other
model's shards that were queued meanwhile. A shard also runs at most
``EVAL_SHARD_SLICE_SECONDS`` (default 30) per job, a turn enforced by time
(``leaderboards.services.shards.ShardTurn``: at the deadline nothing more is sent, queued
batches are cancelled and every batch's HTTP budget ends; what was answered is written),
then gives its slot back and waits again, at the back. So models take turns even with one
worker, and a model with many shards or a slow endpoint gets one slot's worth of the workers.

Holds expire (``SLOT_HOLD_SECONDS``: the shard job's timeout), and a hold whose job is no
longer alive (its worker was killed) is dropped as soon as another shard of the model wants
the slot, or at the eval worker's maintenance (``models_sweep``), which also hands free
slots to waiting shards whose wake-up was lost with a killed worker.

The job function (``leaderboards.jobs.eval_shard_job``) calls ``shard_run``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from typing import Any

import django_rq
from django.conf import settings
from redis.exceptions import RedisError

from leaderboards.models import EvaluationRun, EvaluationShard, RunStatus
from leaderboards.selectors.datasets import (
    INPUTS_PRIVATE,
    INPUTS_PRIVATE_MESSAGE,
    dataset_inputs_go_to,
    task_owner_ids,
)
from leaderboards.services.eval_queue import enqueue_finalize, enqueue_shard, job_alive
from leaderboards.services.shards import shard_execute, shard_fail

logger = logging.getLogger(__name__)

QUEUE = "eval"
KEY_PREFIX = "dynatask:eval:"
DEFAULT_SHARDS_PER_MODEL = 1
DEFAULT_SLICE_SECONDS = 30.0
# A running shard's hold outlasts its job's timeout (``leaderboards.jobs``), a reserved one
# the longest a job should wait in the queue; dead holders are dropped sooner (see above).
SLOT_HOLD_SECONDS = 3 * 3600 + 60
RESERVATION_SECONDS = 3600

# KEYS: slots, waiting. ARGV: job id, shard id, now, hold expiry, limit.
# Returns 1 when the job holds a slot (it was reserved for it, or one was free), else 0
# and the shard waits (keeping its place if it already waited).
_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[1])
    or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[5]) then
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[2])
  return 1
end
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[2])
return 0
"""

# KEYS: slots, waiting. ARGV: job id (or ""), now, limit, shard to wait again (or ""),
# reservation expiry, then one new job id per slot that may be handed out.
# Gives the job's slot back, then reserves free slots for the oldest waiting shards;
# returns [shard id, job id, shard id, job id, ...] of the shards to enqueue.
_RELEASE = """
if ARGV[1] ~= '' then redis.call('ZREM', KEYS[1], ARGV[1]) end
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[4]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local handed = {}
local free = tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[1])
local index = 6
while free > 0 and ARGV[index] do
  local popped = redis.call('ZPOPMIN', KEYS[2])
  if #popped == 0 then break end
  redis.call('ZADD', KEYS[1], ARGV[5], ARGV[index])
  table.insert(handed, popped[1])
  table.insert(handed, ARGV[index])
  free = free - 1
  index = index + 1
end
return handed
"""


def shards_per_model() -> int:
    """Return how many shard jobs of one model may run at once (``EVAL_SHARDS_PER_MODEL``)."""
    return max(1, int(getattr(settings, "EVAL_SHARDS_PER_MODEL", DEFAULT_SHARDS_PER_MODEL)))


def slice_seconds() -> float:
    """Return how long a shard job sends before giving its turn (``EVAL_SHARD_SLICE_SECONDS``)."""
    return float(getattr(settings, "EVAL_SHARD_SLICE_SECONDS", DEFAULT_SLICE_SECONDS))


def _connection():
    return django_rq.get_connection(QUEUE)


def _keys(model_id: int) -> list[str]:
    return [f"{KEY_PREFIX}slots:{model_id}", f"{KEY_PREFIX}waiting:{model_id}"]


def _script(connection, source: str):
    return connection.register_script(source)


def model_slot_acquire(model_id: int, shard_id: int, job_id: str, connection=None) -> bool:
    """Take a slot of ``model_id`` for job ``job_id`` of shard ``shard_id``; return True.

    Without a free slot the shard waits (``waiting:<model>``) and False is returned; holds
    of jobs that are no longer alive are dropped first, so a killed worker's slot is free.
    """
    connection = connection or _connection()
    limit = shards_per_model()
    for attempt in range(2):
        now = time.time()
        taken = _script(connection, _ACQUIRE)(
            keys=_keys(model_id),
            args=[job_id, shard_id, now, now + SLOT_HOLD_SECONDS, limit],
        )
        if taken or attempt or not _drop_dead_holders(model_id, connection):
            return bool(taken)
    return False


def model_slot_release(
    model_id: int, job_id: str = "", *, wait_again: int | None = None, connection=None
) -> list[tuple[int, str]]:
    """Give back the slot of job ``job_id`` (if any) and hand free slots to waiting shards.

    ``wait_again`` puts that shard back among the waiting ones (after those already
    waiting). Returns ``[(shard id, job id)]`` of the shards that got a slot: the caller
    enqueues them with those job ids (``shards_enqueue``).
    """
    connection = connection or _connection()
    limit = shards_per_model()
    now = time.time()
    handed = _script(connection, _RELEASE)(
        keys=_keys(model_id),
        args=[
            job_id,
            now,
            limit,
            "" if wait_again is None else wait_again,
            now + RESERVATION_SECONDS,
            *(uuid.uuid4().hex for _ in range(limit)),
        ],
    )
    pairs = [_text(item) for item in handed]
    return [(int(pairs[index]), pairs[index + 1]) for index in range(0, len(pairs), 2)]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _drop_dead_holders(model_id: int, connection) -> int:
    """Drop the holds of ``model_id`` whose job is not alive; return how many."""
    key = _keys(model_id)[0]
    dead = [
        member
        for member in (_text(item) for item in connection.zrange(key, 0, -1))
        if not job_alive(member, connection)
    ]
    if dead:
        logger.warning("model %s: dropping the slots of dead jobs %s", model_id, dead)
        connection.zrem(key, *dead)
    return len(dead)


def shard_is_waiting(model_id: int, shard_id: int, connection=None) -> bool:
    """Return True when shard ``shard_id`` waits for a slot of ``model_id``."""
    connection = connection or _connection()
    return connection.zscore(_keys(model_id)[1], shard_id) is not None


def shards_enqueue(model_id: int, handed: Iterable[tuple[int, str]]) -> int:
    """Enqueue the shards of ``model_id`` that got a slot, each with its reserved job id;
    return how many (a shard deleted meanwhile hands its slot on)."""
    count = 0
    pending = list(handed)
    while pending:
        shards = EvaluationShard.objects.in_bulk([shard_id for shard_id, _ in pending])
        gone = []
        for shard_id, job_id in pending:
            shard = shards.get(shard_id)
            if shard is None:
                gone.append(job_id)
            elif enqueue_shard(shard, job_id=job_id):
                count += 1
        pending = [pair for job_id in gone for pair in model_slot_release(model_id, job_id)]
    return count


def shards_submit(model_id: int, shard_ids: Iterable[int], connection=None) -> int:
    """Make shards ``shard_ids`` of ``model_id`` wait for a slot, then hand out the free
    slots; return how many shard jobs were enqueued."""
    connection = connection or _connection()
    now = time.time()
    waiting = {str(shard_id): now + index * 1e-6 for index, shard_id in enumerate(shard_ids)}
    if waiting:
        connection.zadd(_keys(model_id)[1], waiting, nx=True)
    return shards_enqueue(model_id, model_slot_release(model_id, connection=connection))


def models_sweep(model_ids: Iterable[int], connection=None) -> int:
    """Drop dead holds of ``model_ids`` and hand their free slots out; return jobs enqueued."""
    connection = connection or _connection()
    count = 0
    for model_id in model_ids:
        _drop_dead_holders(model_id, connection)
        count += shards_enqueue(model_id, model_slot_release(model_id, connection=connection))
    return count


def shard_run(shard_id: int, job_id: str) -> dict[str, Any]:
    """Run one turn of shard ``shard_id`` as job ``job_id`` (the eval shard job's body).

    Skipped (its slot handed on) when the shard is done or its run is over; failed with
    ``run.inputs_private`` when the dataset no longer sends its inputs to this model; else
    it waits for a slot of its model, or runs for up to ``slice_seconds()`` and then waits
    again at the back when it has examples left.
    """
    shard = (
        EvaluationShard.objects.select_related(
            "run__model__owner", "run__dataset__task", "run__dataset__perturbation_of"
        )
        .filter(pk=shard_id)
        .first()
    )
    if shard is None:
        return {"status": "missing"}
    run = shard.run
    model_id = run.model_id
    if shard.status == RunStatus.DONE or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
        shards_enqueue(model_id, model_slot_release(model_id, job_id))
        return {"status": "skipped", "run_status": run.status}
    if not dataset_inputs_go_to(run.dataset, run.model, task_owner_ids(run.dataset.task)):
        shard_fail(shard.pk, INPUTS_PRIVATE, INPUTS_PRIVATE_MESSAGE)
        shards_enqueue(model_id, model_slot_release(model_id, job_id))
        return {"status": "failed", "error_code": INPUTS_PRIVATE}
    if not model_slot_acquire(model_id, shard.pk, job_id):
        return {"status": "waiting", "model": model_id}
    outcome: dict[str, Any] | None = None
    try:
        outcome = shard_execute(shard.pk, deadline=time.monotonic() + slice_seconds())
    finally:
        paused = outcome is not None and outcome.get("status") == "paused"
        handed = model_slot_release(model_id, job_id, wait_again=shard.pk if paused else None)
        shards_enqueue(model_id, handed)
    return outcome


def enqueue_run(run_id: int) -> int:
    """Submit every shard of ``run_id`` that is not done (finalize when there are none).

    The shards wait for their model's slots (``shards_submit``): returns how many
    shard jobs were enqueued now. Used after a run is created or retried, and by
    ``run_evaluations --resume``.
    """
    run = EvaluationRun.objects.filter(pk=run_id).first()
    if run is None:
        return 0
    shards = list(run.shards.exclude(status=RunStatus.DONE).order_by("index"))
    if not shards:
        if run.status in (RunStatus.QUEUED, RunStatus.RUNNING):
            EvaluationRun.objects.filter(pk=run_id, status=run.status).update(
                status=RunStatus.FINALIZING
            )
            run.status = RunStatus.FINALIZING
        if run.status == RunStatus.FINALIZING:
            enqueue_finalize(run_id)
        return 0
    try:
        return shards_submit(run.model_id, [shard.pk for shard in shards])
    except RedisError as error:
        # ``shards_recover`` enqueues them once Redis is back.
        logger.warning("cannot submit the shards of run %s: %s", run_id, error)
        return 0
