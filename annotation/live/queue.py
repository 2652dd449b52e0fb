"""The web side of the live loop: queue an example for its model's answer, and wait for it.

Redis keys (the drain's claims are in ``annotation.live.drain``):

- ``PENDING_KEY``: the examples waiting for a drain, as ``"<example id>:<attempt>"``;
- ``DRAIN_QUEUED_KEY``: the flag that a drain job is queued and has not started ("1"), or the
  token of the drain that holds it while it works. It expires, so a web process that dies
  between setting it and queueing the job, or a drain that dies holding it, holds later
  drains back for a moment at most;
- ``done_key(job_id)``: a stream per waiting page, where the drain writes what it stored.

A page waits on ``live_job_id(example_id, attempt)``; the drain wakes it as soon as the answer
is committed.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from django.conf import settings
from django.utils.dateparse import parse_datetime
from redis.exceptions import RedisError
from rq.results import Result

from annotation.live.connection import live_queue, redis_connection
from annotation.stats.buffer import counters_apply, counters_queue
from annotation.stats.counters import CounterDeltas

logger = logging.getLogger(__name__)

RESULT_TTL_SECONDS = 600
FAILURE_TTL_SECONDS = 24 * 3600
# A model call makes at most two attempts; a job's bound allows both plus this margin.
TIMEOUT_MARGIN_SECONDS = 5
# When Redis cannot be reached, an example fails with this code and message (it is saved; the
# worker asks the model again from its page).
QUEUE_UNAVAILABLE = "queue.unavailable"
QUEUE_UNAVAILABLE_MESSAGE = (
    "The model could not be asked: the job queue is not reachable. Your example is saved; "
    "ask the model again in a moment."
)
PENDING_KEY = "annotation:live-pending"
DRAIN_QUEUED_KEY = "annotation:live-drain-queued"
DRAIN_QUEUED_TTL_SECONDS = 30
DRAIN_JOB_PREFIX = "annotation-live-drain-"
# A drain takes no new batch after this many seconds (it queues a successor).
DRAIN_BUDGET_SECONDS = 5.0


def job_timeout(model) -> int:
    """The bound of one model call of ``model`` (both attempts), in whole seconds."""
    if model is None:
        return 60
    return int(2 * (model.connect_timeout + model.read_timeout) + TIMEOUT_MARGIN_SECONDS)


def live_job_id(example_id: int, attempt: int) -> str:
    return f"annotation-live-{example_id}-{attempt}"


def done_key(job_id: str) -> str:
    return f"annotation:live-done:{job_id}"


def pending_item(example_id: int, attempt: int) -> str:
    return f"{example_id}:{attempt}"


def batch_size() -> int:
    """How many pending examples a drain takes at once (``ANNOTATION_LIVE_BATCH_SIZE``)."""
    return max(1, int(getattr(settings, "ANNOTATION_LIVE_BATCH_SIZE", 16)))


def drain_timeout(timeout: int) -> int:
    """RQ's bound on a drain job: its budget, then a batch's call and one call per example,
    of ``timeout`` seconds each. Each model call has its own, shorter deadline."""
    calls = batch_size() + 1
    return int(DRAIN_BUDGET_SECONDS + calls * max(timeout, job_timeout(None)))


def example_queue(
    example_id: int, attempt: int, timeout: int, deltas: CounterDeltas | None = None
) -> bool:
    """Put an example on the pending list with its counter increments, in one round trip,
    and queue a drain unless one is queued and not yet started. Call after the commit.

    Returns False when Redis cannot be reached: the increments are then applied to the
    database, and the caller fails the example with ``QUEUE_UNAVAILABLE_MESSAGE``.
    ``timeout``: the bound of the example's model call (``job_timeout``).
    """
    try:
        with redis_connection().pipeline(transaction=False) as pipe:
            if deltas:
                counters_queue(pipe, deltas)
            pipe.rpush(PENDING_KEY, pending_item(example_id, attempt))
            pipe.set(DRAIN_QUEUED_KEY, "1", nx=True, ex=DRAIN_QUEUED_TTL_SECONDS)
            flagged = pipe.execute()[-1]
        if flagged:
            _enqueue_drain(timeout)
    except RedisError:
        logger.warning("could not queue the live answer of example %s", example_id, exc_info=True)
        if deltas:
            counters_apply(deltas)
        return False
    return True


# Enqueued by its dotted path: the drain imports this module, never the reverse.
DRAIN_JOB = "annotation.live.drain.live_drain_job"


def _enqueue_drain(timeout: int) -> None:
    queue = live_queue()
    with queue.connection.pipeline() as pipe:
        queue.enqueue(
            DRAIN_JOB,
            job_id=f"{DRAIN_JOB_PREFIX}{uuid.uuid4().hex}",
            job_timeout=drain_timeout(timeout),
            result_ttl=settings.ANNOTATION_LIVE_RESULT_TTL,
            failure_ttl=FAILURE_TTL_SECONDS,
            pipeline=pipe,
        )
        pipe.execute()


_KICK = """
if redis.call('LLEN', KEYS[1]) > 0 and redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[1]) then
  return 1
end
return 0
"""


def ensure_drain(timeout: int | None = None) -> bool:
    """Queue a drain if examples are pending and the flag is free; say whether one was
    queued. Best effort: a Redis error is logged."""
    try:
        connection = redis_connection()
        if connection.eval(_KICK, 2, PENDING_KEY, DRAIN_QUEUED_KEY, DRAIN_QUEUED_TTL_SECONDS):
            _enqueue_drain(timeout or job_timeout(None))
            return True
    except RedisError:
        logger.warning("could not look at the live list", exc_info=True)
    return False


def wait_for_live_answer(job_id: str, seconds: float) -> dict[str, Any] | None:
    """Block up to ``seconds`` for ``job_id``; None if nothing ended by then.

    Returns what the drain stored (``annotation.services.answers.MODEL_ANSWER_FIELDS`` by
    name) when it said so, or ``{}`` when the job ended without saying (an RQ job of that
    id ended, it stored nothing) or Redis cannot be reached: the caller then reads the row.
    """
    if seconds <= 0:
        return None
    done = done_key(job_id)
    streams = {Result.get_key(job_id): "0-0", done: "0-0"}
    try:
        response = redis_connection().xread(streams, block=max(1, int(seconds * 1000)))
    except RedisError:
        logger.warning("could not wait for job %s", job_id, exc_info=True)
        return {}
    if not response:
        return None
    for stream, entries in response:
        if stream in (done, done.encode()):
            for _entry_id, fields in entries:
                raw = fields.get(b"answer") or fields.get("answer")
                if raw:
                    answer = json.loads(raw)
                    answer["updated_at"] = parse_datetime(answer["updated_at"] or "")
                    return answer
    return {}


def wait_for_job(job_id: str, seconds: float) -> bool:
    """Block up to ``seconds`` until ``job_id`` ended (an answer stored, or an RQ result)."""
    return wait_for_live_answer(job_id, seconds) is not None
