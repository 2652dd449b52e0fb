"""The drain: the ``live`` queue's job that answers the pending examples in batches.

A drain takes up to ``batch_size()`` pending examples at once, asks each model of the batch
once for all its examples (one example at a time again when that call fails, unless the
model as a whole failed), stores every answer or failure, wakes the waiting pages and takes
the next batch. Under load one job and one model call serve many examples.

Claims. A drain moves the examples it takes from the pending list into a list of its own
(``claimed_key(token)``) in the same atomic step, and holds a lease (``lease_key(token)``)
that a thread of the drain renews every ``LEASE_RENEW_SECONDS``. Once a batch is stored its
claim is deleted. A drain killed mid-batch (``kill -9``, an out-of-memory kill) stops renewing
its lease, and the watchdog (``annotation.live.watchdog``) gives its claimed examples back to
the pending list. A drain that raises gives them back itself.

The flag. The drain holds ``DRAIN_QUEUED_KEY`` (its token) while it works, so that an example
that arrives meanwhile joins the list instead of queueing another drain; the hold lapses after
``DRAIN_HOLD_MS`` unless a batch renews it, so a slow batch lets a second drain start beside
it. A drain that takes a full batch lets the flag go and queues another drain for what may be
left: under load as many drains run as there are live workers, each waiting on its own model
call. A drain that has emptied the list waits ``ANNOTATION_LIVE_LINGER_SECONDS`` for more
while no other job waits for the worker; after ``DRAIN_BUDGET_SECONDS`` it takes no new batch
and queues a successor for what is left.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from typing import Any

from django.conf import settings
from redis.exceptions import RedisError

from annotation.live.connection import live_queue, redis_connection
from annotation.live.queue import (
    DRAIN_BUDGET_SECONDS,
    DRAIN_QUEUED_KEY,
    PENDING_KEY,
    RESULT_TTL_SECONDS,
    batch_size,
    done_key,
    ensure_drain,
    job_timeout,
    live_job_id,
)
from annotation.models import Example, ExampleStatus
from annotation.services import answers
from models_hub.calls import predict_live
from models_hub.errors import (
    ModelAddressRefused,
    ModelCallError,
    ModelConfigurationError,
    ModelUnreachable,
)

logger = logging.getLogger(__name__)

DRAINS_KEY = "annotation:live-drains"
DRAIN_HOLD_MS = 1000
LISTEN_POLL_SECONDS = 0.25
LEASE_MS = 10_000
LEASE_RENEW_SECONDS = 2.0
# Failures of a model as a whole: asking its examples one by one would fail each the same.
MODEL_WIDE_ERRORS = (ModelUnreachable, ModelAddressRefused, ModelConfigurationError)


def claimed_key(token: str) -> str:
    return f"annotation:live-claimed:{token}"


def lease_key(token: str) -> str:
    return f"annotation:live-lease:{token}"


# Take or renew the flag unless another drain holds it (when ARGV[4] is "1"); then move up to
# ARGV[3] pending examples into this drain's claim. KEYS: flag, pending, claim; ARGV: token,
# hold ms, count, take the flag. Returns {holding, items}.
_TAKE = """
local holding = 0
if ARGV[4] == '1' then
  local holder = redis.call('GET', KEYS[1])
  if holder == false or holder == '1' or holder == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    holding = 1
  end
end
local items = {}
if tonumber(ARGV[3]) > 0 then
  items = redis.call('LPOP', KEYS[2], ARGV[3]) or {}
end
if #items > 0 then
  redis.call('RPUSH', KEYS[3], unpack(items))
end
return {holding, items}
"""
# Release the flag if this drain holds it.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 0
"""
# Give a claim back to the front of the pending list. KEYS: claim, pending.
GIVE_BACK = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
for i = #items, 1, -1 do
  redis.call('LPUSH', KEYS[2], items[i])
end
redis.call('DEL', KEYS[1])
return #items
"""


class Lease:
    """A drain's lease on its claim, renewed by a thread while the drain runs.

    On entry the lease is set and the drain's token joins ``DRAINS_KEY`` (where the watchdog
    looks for lapsed leases). On exit the flag is released if held, the claim, the lease and
    the token are removed; a drain that raised first gives its claim back to the list.
    """

    def __init__(self, connection, token: str):
        self.connection = connection
        self.token = token
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"lease-{token[:8]}", daemon=True)

    def _renew(self) -> None:
        while not self._stop.wait(LEASE_RENEW_SECONDS):
            try:
                self.connection.set(lease_key(self.token), "1", px=LEASE_MS)
            except RedisError:
                logger.warning("could not renew the lease of drain %s", self.token)

    def __enter__(self) -> Lease:
        with self.connection.pipeline(transaction=False) as pipe:
            pipe.set(lease_key(self.token), "1", px=LEASE_MS)
            pipe.sadd(DRAINS_KEY, self.token)
            pipe.execute()
        self._thread.start()
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            if error is not None:
                given = self.connection.eval(GIVE_BACK, 2, claimed_key(self.token), PENDING_KEY)
                logger.warning("drain %s failed: %s examples back to the list", self.token, given)
            with self.connection.pipeline(transaction=False) as pipe:
                pipe.eval(_RELEASE, 1, DRAIN_QUEUED_KEY, self.token)
                pipe.delete(claimed_key(self.token), lease_key(self.token))
                pipe.srem(DRAINS_KEY, self.token)
                pipe.execute()
        except RedisError:
            logger.warning("drain %s could not clear its claim", self.token, exc_info=True)


def _take_arguments(token: str, count: int, hold: bool) -> tuple:
    return (
        _TAKE, 3, DRAIN_QUEUED_KEY, PENDING_KEY, claimed_key(token),
        token, DRAIN_HOLD_MS, count, "1" if hold else "0",
    )  # fmt: skip


def _take(connection, token: str, count: int, *, hold: bool) -> tuple[bool, list]:
    """Claim up to ``count`` pending examples and, with ``hold``, take or renew the flag:
    (holding, items)."""
    holding, items = connection.eval(*_take_arguments(token, count, hold))
    return bool(holding), list(items or [])


def linger_seconds() -> float:
    """How long a drain waits for new examples once the list is empty."""
    return max(0.0, float(getattr(settings, "ANNOTATION_LIVE_LINGER_SECONDS", 0.0)))


def _listen(connection, token: str, deadline: float) -> tuple[bool, list]:
    """Wait for pending examples while holding the flag: up to ``linger_seconds()``, until
    ``deadline``, and only while no other job waits on the live queue. Returns (holding,
    items); a drain that stops waiting releases the flag and claims what came meanwhile."""
    until = min(deadline, time.monotonic() + linger_seconds())
    queue_key = live_queue().key
    size = batch_size()
    while (left := until - time.monotonic()) > 0:
        with connection.pipeline(transaction=False) as pipe:
            pipe.eval(*_take_arguments(token, 0, True))
            # Redis runs a pipeline's commands in order: the claim of more right after it.
            pipe.blmove(PENDING_KEY, claimed_key(token), min(LISTEN_POLL_SECONDS, left))
            pipe.eval(*_take_arguments(token, size - 1, False))
            pipe.llen(queue_key)
            (holding, _), moved, (_, rest), waiting = pipe.execute()
        items = ([moved] if moved is not None else []) + list(rest or [])
        if not holding:  # another drain holds the flag: it takes what comes
            return False, items
        if items:
            return True, items
        if waiting:
            break
    with connection.pipeline(transaction=False) as pipe:
        pipe.eval(_RELEASE, 1, DRAIN_QUEUED_KEY, token)
        pipe.eval(*_take_arguments(token, size, False))
        _, (_, items) = pipe.execute()
    return False, list(items or [])


def live_drain_job() -> dict[str, int]:
    """Answer the pending examples batch by batch (see the module's docstring); return how
    many examples it took."""
    connection = redis_connection()
    token = uuid.uuid4().hex
    deadline = time.monotonic() + DRAIN_BUDGET_SECONDS
    size = batch_size()
    taken = 0
    with Lease(connection, token):
        holding, items = _take(connection, token, size, hold=True)
        while True:
            while items:
                taken += len(items)
                if holding and len(items) == size:
                    holding = _hand_on(connection, token)
                answer_batch(parse_pending(items))
                connection.delete(claimed_key(token))
                if time.monotonic() >= deadline:
                    if holding:
                        connection.eval(_RELEASE, 1, DRAIN_QUEUED_KEY, token)
                    ensure_drain()  # a successor for what is left
                    return {"examples": taken}
                holding, items = _take(connection, token, size, hold=holding)
            if not holding:
                return {"examples": taken}
            holding, items = _listen(connection, token, deadline)


def _hand_on(connection, token: str) -> bool:
    """A full batch: more may be waiting. Let the flag go and queue a drain for them, which
    an idle worker runs while this one waits on the model; return False (not holding)."""
    connection.eval(_RELEASE, 1, DRAIN_QUEUED_KEY, token)
    ensure_drain()
    return False


def parse_pending(items) -> list[tuple[int, int]]:
    """``example_id:attempt`` entries of the pending list; anything else is logged and left."""
    pending = []
    for item in items:
        text = item.decode() if isinstance(item, bytes) else str(item)
        example_id, _, attempt = text.partition(":")
        if example_id.isdigit() and attempt.isdigit():
            pending.append((int(example_id), int(attempt)))
        else:
            logger.error("ignored a malformed entry of the live list: %r", text[:100])
    return pending


_JOB_RELATED = ("task", "model", "config_version", "context")


def answer_batch(pending: list[tuple[int, int]]) -> dict[int, dict[str, Any]]:
    """Answer the examples of ``pending`` ((id, attempt) pairs): one model call per model for
    those still awaiting it, each answer or failure stored, each waiting page woken. Returns
    each example's outcome by id."""
    attempts: dict[int, list[int]] = {}
    for example_id, attempt in pending:
        attempts.setdefault(example_id, []).append(attempt)
    examples = {
        example.pk: example
        for example in Example.objects.select_related(*_JOB_RELATED)
        .filter(pk__in=list(attempts))
        .order_by()
    }
    outcomes: dict[int, dict[str, Any]] = {}
    stored: dict[int, Example | None] = {}
    # One model call per model and config version (the outputs are checked against the
    # version the examples were written under).
    by_model: dict[tuple[int, int], list[Example]] = {}
    for example_id in attempts:
        example = examples.get(example_id)
        if example is None or example.status != ExampleStatus.AWAITING_MODEL:
            outcomes[example_id], stored[example_id] = {"skipped": True}, None
        elif example.model is None:
            stored[example_id] = answers.example_record_model_failure(
                example_id, code="model.missing", message="The model was removed from the loop."
            )
            outcomes[example_id] = {"ok": False, "code": "model.missing"}
        else:
            by_model.setdefault((example.model_id, example.config_version_id), []).append(example)
    answered: list[answers.ModelAnswer] = []
    for group in by_model.values():
        for example, answer in _ask(group):
            if isinstance(answer, Exception):
                outcomes[example.pk], stored[example.pk] = _store_failure(example, answer)
            else:
                output, result = answer
                answered.append(
                    answers.ModelAnswer(example, output, result.latency_ms, result.model_version)
                )
                outcomes[example.pk] = {"ok": True}
    stored.update(_store_answers(answered))
    for answer in answered:
        row = stored.get(answer.example.pk)
        if row is not None and row.status == ExampleStatus.MODEL_FAILED:
            outcomes[row.pk] = {"ok": False, "code": row.model_error_code}
    _wake(
        connection=redis_connection(),
        done=[
            (live_job_id(example_id, attempt), stored.get(example_id))
            for example_id, tried in attempts.items()
            for attempt in tried
        ],
    )
    return outcomes


def _ask(examples: list[Example]) -> list[tuple[Example, Any]]:
    """Ask the examples' model (the same for all, as their config version) in one call;
    pair each example with its output or the error. A failed call is made again one example
    at a time, unless the model failed as a whole (``MODEL_WIDE_ERRORS``), which fails them
    all at once."""
    first = examples[0]
    model, config = first.model, first.config_version.parsed
    inputs = [
        answers.model_inputs(
            config,
            example.input,
            example.context.data if example.context_id else None,
            uid=f"example-{example.pk}",
        )
        for example in examples
    ]
    try:
        result = predict_live(model, inputs, config=config, task_code=first.task.code)
    except ModelCallError as error:
        if len(examples) > 1 and not isinstance(error, MODEL_WIDE_ERRORS):
            # The batch may be what failed (too slow for the read timeout, a reply over the
            # size cap, one input refused): each example is asked alone.
            return [pair for example in examples for pair in _ask([example])]
        return [(example, error) for example in examples]
    except Exception as error:  # a bug must not leave the pages waiting forever
        logger.exception("live prediction of examples %s failed", [e.pk for e in examples])
        return [(example, error) for example in examples]
    return [
        (example, (output, result))
        for example, output in zip(examples, result.outputs, strict=True)
    ]


def _store_failure(example: Example, error: Exception) -> tuple[dict[str, Any], Example | None]:
    if isinstance(error, ModelCallError):
        code, message = error.code, str(error)
    else:
        code, message = "model.error", "The model call failed unexpectedly."
    stored = answers.example_record_model_failure(example.pk, code=code, message=message)
    return {"ok": False, "code": code}, stored


def _store_answers(answered: list[answers.ModelAnswer]) -> dict[int, Example | None]:
    """Store the answers in one transaction; if that fails, one by one, so that an answer
    that cannot be stored fails its own example only."""
    if not answered:
        return {}
    try:
        return answers.examples_record_model_answers(answered)
    except Exception:
        logger.exception("storing the answers of %s failed", [a.example.pk for a in answered])
    stored: dict[int, Example | None] = {}
    for answer in answered:
        try:
            stored[answer.example.pk] = answers.examples_record_model_answers([answer])[
                answer.example.pk
            ]
        except Exception as error:
            logger.exception("storing the answer of example %s failed", answer.example.pk)
            stored[answer.example.pk] = _store_failure(answer.example, error)[1]
    return stored


def answer_fields(example: Example | None) -> str:
    """What the drain stored on ``example`` (``MODEL_ANSWER_FIELDS``) as JSON; "" if none."""
    if example is None:
        return ""
    stored = {name: getattr(example, name) for name in answers.MODEL_ANSWER_FIELDS}
    stored["updated_at"] = example.updated_at.isoformat() if example.updated_at else None
    return json.dumps(stored)


def _wake(connection, done: list[tuple[str, Example | None]]) -> None:
    """Wake the pages waiting for these job ids, each with what was stored for it, in one
    round trip (best effort: a page that is not woken reads the row when it polls)."""
    if not done:
        return
    try:
        with connection.pipeline(transaction=False) as pipe:
            for job_id, stored in done:
                key = done_key(job_id)
                pipe.xadd(key, {"done": "1", "answer": answer_fields(stored)}, maxlen=1)
                pipe.expire(key, RESULT_TTL_SECONDS)
            pipe.execute()
    except RedisError:
        logger.warning("could not wake the pages of %s", [job_id for job_id, _ in done])


__all__ = ["job_timeout", "live_drain_job"]
