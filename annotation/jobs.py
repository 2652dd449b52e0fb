"""RQ jobs of the create page, on the ``live`` queue (``models_hub.jobs.LiveWorker``, a
non-forking SimpleWorker, in production).

Live answers go through a drain. ``enqueue_live_prediction`` (after the example's commit)
appends the example to a pending list in Redis and, unless a drain job is already queued and
not yet started, queues ``live_drain_job``. A drain takes the pending examples in batches of
``ANNOTATION_LIVE_BATCH_SIZE``, asks each batch's model once for all its examples (one at a
time again when that call fails, unless the model as a whole does), and stores each answer or
failure through the services. Under load one job and one model call serve many
examples: with a job per example, RQ's bookkeeping and the HTTP exchange cost more than the
answer (under the load test, the live workers' CPU per submission fell from 6.2 to 3.6 ms).
A drain holds the flag while it works, so an example that arrives meanwhile joins it; a
batch that outlasts the hold (a slow model) lets the next example queue a second drain,
which another worker runs beside it. In a long-running worker a drain that has emptied the
list waits a moment for the next example (``ANNOTATION_LIVE_LINGER_SECONDS``), unless
another job waits for the worker: under a steady stream of examples, no job is queued and
started per batch. A drain that has run ``DRAIN_BUDGET_SECONDS`` takes no new batch and
queues a successor.

``live_prediction_job(example_id, attempt)`` answers one example (the same path); it is
idempotent (an example that already has an answer is left alone), as the drain is.
``sandbox_prediction_job(model_id, inputs)`` asks a model and returns the answer without
storing anything. A request waits for an example on a stream of its own, keyed by
``live_job_id(example_id, attempt)``: the drain writes the stored answer there as soon as it is
committed. ``wait_for_job`` also wakes on RQ's result stream of a job of that id (a sandbox
job). A drain that ends normally is kept only briefly (``ANNOTATION_LIVE_RESULT_TTL``, 60 s):
the outcomes are on the examples.

Examples taken by a drain that dies (``kill -9``) keep waiting, as with any lost job: the
worker's page offers to ask the model again once the wait is too long.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
import uuid
from typing import Any

import django_rq
from django.conf import settings
from django.utils.dateparse import parse_datetime
from redis.exceptions import RedisError
from rq.results import Result

from annotation import services
from annotation.models import Example, ExampleStatus
from dynatask_site.precompiled import PrecompiledQuery
from models_hub.errors import (
    ModelAddressRefused,
    ModelCallError,
    ModelConfigurationError,
    ModelUnreachable,
)
from models_hub.models import Model
from models_hub.services import predict_live
from tasks.errors import NotFound

logger = logging.getLogger(__name__)

LIVE_QUEUE = "live"
RESULT_TTL_SECONDS = 600
FAILURE_TTL_SECONDS = 24 * 3600
# The live client makes at most two attempts; allow both plus a margin.
TIMEOUT_MARGIN_SECONDS = 5
# When Redis cannot be reached, an example fails with this code and message (it is saved; the
# worker asks the model again from its page), and a sandbox question says so.
QUEUE_UNAVAILABLE = "queue.unavailable"
QUEUE_UNAVAILABLE_MESSAGE = (
    "The model could not be asked: the job queue is not reachable. Your example is saved; "
    "ask the model again in a moment."
)
SANDBOX_QUEUE_UNAVAILABLE_MESSAGE = (
    "The model could not be asked: the job queue is not reachable. Try again in a moment."
)
# Failures of a model as a whole: asking its examples one by one would fail each the same.
MODEL_WIDE_ERRORS = (ModelUnreachable, ModelAddressRefused, ModelConfigurationError)
# The examples waiting for a drain ("<example id>:<attempt>", oldest first), and the flag that
# a drain job is queued and has not started yet. The flag expires: a web process that dies
# between setting it and queueing the job holds later drains back that long at most.
PENDING_KEY = "annotation:live-pending"
DRAIN_QUEUED_KEY = "annotation:live-drain-queued"
DRAIN_QUEUED_TTL_SECONDS = 30
DRAIN_JOB_PREFIX = "annotation-live-drain-"
# A drain takes no new batch after this many seconds (the next drain goes on).
DRAIN_BUDGET_SECONDS = 5.0
# A drain's hold of the flag lapses this long after its last batch began unless renewed; a
# waiting drain renews it every ``LISTEN_POLL_SECONDS`` and then sees whether another job
# waits for the worker.
DRAIN_HOLD_MS = 1000
LISTEN_POLL_SECONDS = 0.25


def job_timeout(model: Model | None) -> int:
    if model is None:
        return 60
    return int(2 * (model.connect_timeout + model.read_timeout) + TIMEOUT_MARGIN_SECONDS)


def live_job_id(example_id: int, attempt: int) -> str:
    return f"annotation-live-{example_id}-{attempt}"


# One live queue per process and queue settings. ``django_rq.get_queue`` builds a new Redis
# client, with a connection pool of its own, on every call: each enqueue and each wait of the
# create page opened a new TCP connection to Redis, and each enqueue also asked the server for
# its version (``INFO``). A kept queue reuses its pooled connections (redis-py reconnects a
# dropped one on the next command).
_queues: dict[str, Any] = {}
_queues_lock = threading.Lock()


def _queue():
    key = repr(sorted(settings.RQ_QUEUES[LIVE_QUEUE].items()))
    queue = _queues.get(key)
    if queue is None:
        with _queues_lock:
            queue = _queues.setdefault(key, django_rq.get_queue(LIVE_QUEUE))
    return queue


def enqueue_live_prediction(example_id: int, attempt: int, timeout: int = 60) -> str:
    """Put an example on the live queue (called after commit); return the id its page waits on.

    The example joins the pending list, and a drain job goes on the ``live`` queue unless one
    is already queued and not yet started (the drain flag says so): that one takes this
    example too when it starts. One round trip when a drain is queued, two when one is
    queued here. ``timeout``: the example's model's call bound (``job_timeout``); a drain
    job's timeout covers a batch of such calls.
    """
    try:
        connection = _queue().connection
        with connection.pipeline(transaction=False) as pipe:
            pipe.rpush(PENDING_KEY, f"{example_id}:{attempt}")
            pipe.set(DRAIN_QUEUED_KEY, "1", nx=True, ex=DRAIN_QUEUED_TTL_SECONDS)
            _, flagged = pipe.execute()
        if flagged:
            _enqueue_drain(timeout)
    except RedisError:
        # The example is saved: it fails with a message, and the worker asks again later.
        logger.warning("could not queue the live answer of example %s", example_id, exc_info=True)
        services.example_record_model_failure(
            example_id, code=QUEUE_UNAVAILABLE, message=QUEUE_UNAVAILABLE_MESSAGE
        )
    return live_job_id(example_id, attempt)


def _enqueue_drain(timeout: int) -> None:
    queue = _queue()
    # One round trip: given no pipeline, RQ sends the queue's registration (SADD) and the
    # job (its hash and the push) as two transactions.
    with queue.connection.pipeline() as pipe:
        queue.enqueue(
            live_drain_job,
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


def ensure_drain(timeout: int) -> None:
    """Queue a drain if examples are pending and the flag is free (no drain queued, at work
    or waiting). A drain that dies (``kill -9``) while it holds the flag lets its hold lapse,
    and the examples that joined the list meanwhile would wait for the next submission: the
    status poll of a waiting page calls this. One round trip; best effort."""
    try:
        connection = _queue().connection
        if connection.eval(_KICK, 2, PENDING_KEY, DRAIN_QUEUED_KEY, DRAIN_QUEUED_TTL_SECONDS):
            _enqueue_drain(timeout)
    except RedisError:
        logger.warning("could not look at the live list", exc_info=True)


def drain_timeout(timeout: int) -> int:
    """RQ's bound on a drain job: after the drain's budget, a batch's call and then one call
    per example (``_ask``), of ``timeout`` seconds each. Every model call has its own, shorter
    deadline; this only stops a job that hangs."""
    calls = live_batch_size() + 1
    return int(DRAIN_BUDGET_SECONDS + calls * max(timeout, job_timeout(None)))


def live_batch_size() -> int:
    """How many pending examples a drain takes at once (``ANNOTATION_LIVE_BATCH_SIZE``)."""
    return max(1, int(getattr(settings, "ANNOTATION_LIVE_BATCH_SIZE", 16)))


def _done_key(job_id: str) -> str:
    return f"annotation:live-done:{job_id}"


def _answer_of(example: Example | None) -> str:
    """The fields the job stored (``services.MODEL_ANSWER_FIELDS``) as JSON, "" if none."""
    if example is None:
        return ""
    answer = {name: getattr(example, name) for name in services.MODEL_ANSWER_FIELDS}
    answer["updated_at"] = example.updated_at.isoformat() if example.updated_at else None
    return json.dumps(answer)


def _say_done_all(done: list[tuple[str, Example | None]]) -> None:
    """Wake the requests waiting for these ids, each with what was stored for it, in one
    round trip (best effort: a page that is not woken reads the row when it polls)."""
    if not done:
        return
    try:
        with _queue().connection.pipeline(transaction=False) as pipe:
            for job_id, stored in done:
                key = _done_key(job_id)
                pipe.xadd(key, {"done": "1", "answer": _answer_of(stored)}, maxlen=1)
                pipe.expire(key, RESULT_TTL_SECONDS)
            pipe.execute()
    except RedisError:
        logger.warning(
            "could not signal the end of %s", [job_id for job_id, _ in done], exc_info=True
        )


def live_prediction_job(example_id: int, attempt: int = 1) -> dict[str, Any]:
    """Ask the example's model and store its answer or the failure. Idempotent.

    The drain's work for one example; kept as a job of its own for jobs queued by an earlier
    release."""
    return _answer_batch([(example_id, attempt)])[example_id]


def live_drain_job() -> dict[str, int]:
    """Take the pending examples in batches of ``live_batch_size()`` and answer each batch.

    The drain holds the drain flag (its own token, ``_CLAIM``) while it works: an example
    that arrives meanwhile joins the list, and this drain takes it with the next batch. The
    hold lapses after ``DRAIN_HOLD_MS`` unless renewed, which each batch does: a batch slower
    than that (a slow model) lets the next example queue a second drain, which the next free
    worker runs beside this one. When the list is empty, a drain in a long-running worker
    waits up to ``live_linger_seconds()`` for more (``_listen``); then it lets the flag go and
    looks at the list once more (``_let_go``). Once ``DRAIN_BUDGET_SECONDS`` have passed it
    takes no new batch (making sure a drain is queued for what is left). Returns how many
    examples it took.
    """
    connection = _queue().connection
    token = uuid.uuid4().hex
    deadline = time.monotonic() + DRAIN_BUDGET_SECONDS
    size = live_batch_size()
    holding, items = _take(connection, token, size)
    taken = 0
    while True:
        while items:
            pending = _parse_pending(items)
            taken += len(items)
            _answer_batch(pending)
            if time.monotonic() >= deadline:
                if holding:
                    _let_go(connection, token, 0)
                ensure_drain(job_timeout(None))  # a successor for what is left
                return {"examples": taken}
            if holding:
                holding, items = _take(connection, token, size)
            else:
                items = connection.lpop(PENDING_KEY, size)
        if not holding:
            return {"examples": taken}
        holding, items = _listen(connection, token, size, deadline)


# The drain flag's values: "1" while a queued drain has not started, a drain's token while
# that drain holds it. ``_CLAIM`` takes or renews the hold unless another drain holds it.
_CLAIM = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == '1' or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 0
"""


def _take(connection, token: str, size: int) -> tuple[bool, list]:
    """Claim or renew the hold and take the next batch, in one round trip: (holding, items)."""
    with connection.pipeline(transaction=False) as pipe:
        pipe.eval(_CLAIM, 1, DRAIN_QUEUED_KEY, token, DRAIN_HOLD_MS)
        pipe.lpop(PENDING_KEY, size)
        claimed, items = pipe.execute()
    return bool(claimed), items or []


def _listen(connection, token: str, size: int, deadline: float) -> tuple[bool, list]:
    """Wait for pending examples while holding the flag: up to ``live_linger_seconds()`` in
    a long-running worker, until the budget's ``deadline``, and only while no other job waits
    on the live queue (a sandbox question, say, waits at most ``LISTEN_POLL_SECONDS``).
    Returns (holding, items); a drain that stops waiting lets the flag go first."""
    linger = live_linger_seconds()
    until = min(deadline, time.monotonic() + linger)
    queue_key = _queue().key
    while (left := until - time.monotonic()) > 0:
        with connection.pipeline(transaction=False) as pipe:
            pipe.eval(_CLAIM, 1, DRAIN_QUEUED_KEY, token, DRAIN_HOLD_MS)
            # Redis runs a pipeline's commands in order: the LPOP right after the BLPOP.
            pipe.blpop([PENDING_KEY], timeout=min(LISTEN_POLL_SECONDS, left))
            if size > 1:
                pipe.lpop(PENDING_KEY, size - 1)
            pipe.llen(queue_key)
            claimed, popped, *rest, waiting = pipe.execute()
        rest = rest[0] if rest else None
        items = [popped[1], *(rest or [])] if popped else []
        if not claimed:  # another drain holds the flag: it takes what comes
            return False, items
        if items:
            return True, items
        if waiting:
            break
    return False, _let_go(connection, token, size)


def _let_go(connection, token: str, size: int) -> list:
    """Release the hold, then take what arrived meanwhile (up to ``size``), in one round
    trip. An example pushed after that LPOP finds the flag free and queues a new drain."""
    with connection.pipeline(transaction=False) as pipe:
        pipe.eval(_RELEASE, 1, DRAIN_QUEUED_KEY, token)
        if size:
            pipe.lpop(PENDING_KEY, size)
        results = pipe.execute()
    return (results[1] or []) if size else []


def live_linger_seconds() -> float:
    """How long a drain waits for new examples once the list is empty: ``ANNOTATION_LIVE_
    LINGER_SECONDS`` in a long-running live worker, 0 elsewhere (a burst worker, a test)."""
    from models_hub.jobs import LiveWorker

    if not LiveWorker.long_running:
        return 0.0
    return max(0.0, float(getattr(settings, "ANNOTATION_LIVE_LINGER_SECONDS", 1.0)))


def _parse_pending(items) -> list[tuple[int, int]]:
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


_JOB_RELATED = ("model", "model__task", "model__task__current_config", "config_version", "context")


@functools.cache
def _examples_query(count: int) -> PrecompiledQuery:
    """``count`` examples with everything the job reads, by primary key (no ORDER BY),
    compiled once per count: the ORM took longer to compile this statement than PostgreSQL
    to run it. A drain's batches have at most ``live_batch_size()`` examples."""
    names = tuple(f"pk{index}" for index in range(count))

    def build(**pks):
        queryset = Example.objects.select_related(*_JOB_RELATED).order_by()
        return queryset.filter(pk__in=[pks[name] for name in names])

    return PrecompiledQuery(build, **dict.fromkeys(names, int))


def _examples_for_job(example_ids: list[int]) -> dict[int, Example]:
    pks = {f"pk{index}": pk for index, pk in enumerate(example_ids)}
    return {example.pk: example for example in _examples_query(len(pks)).fetch(**pks)}


def _answer_batch(pending: list[tuple[int, int]]) -> dict[int, dict[str, Any]]:
    """Answer the examples ``pending`` ((id, attempt) pairs): one model call per model for
    those still awaiting it, each answer or failure stored, each waiting page woken. Returns
    each example's outcome."""
    attempts: dict[int, list[int]] = {}
    for example_id, attempt in pending:
        attempts.setdefault(example_id, []).append(attempt)
    examples = _examples_for_job(list(attempts))
    outcomes: dict[int, dict[str, Any]] = {}
    stored: dict[int, Example | None] = {}
    by_model: dict[int, list[Example]] = {}
    for example_id in attempts:
        example = examples.get(example_id)
        if example is None or example.status != ExampleStatus.AWAITING_MODEL:
            outcomes[example_id], stored[example_id] = {"skipped": True}, None
        elif example.model is None:
            stored[example_id] = services.example_record_model_failure(
                example_id, code="model.missing", message="The model was removed from the loop."
            )
            outcomes[example_id] = {"ok": False, "code": "model.missing"}
        else:
            by_model.setdefault(example.model_id, []).append(example)
    answered: list[services.ModelAnswer] = []
    for group in by_model.values():
        for example, answer in _ask(group):
            if isinstance(answer, Exception):
                outcomes[example.pk], stored[example.pk] = _store_failure(example, answer)
            else:
                output, result = answer
                answered.append(
                    services.ModelAnswer(example, output, result.latency_ms, result.model_version)
                )
                outcomes[example.pk] = {"ok": True}
    stored.update(_store_answers(answered))
    for answer in answered:
        row = stored.get(answer.example.pk)
        if row is not None and row.status == ExampleStatus.MODEL_FAILED:
            outcomes[row.pk] = {"ok": False, "code": row.model_error_code}
    _say_done_all(
        [
            (live_job_id(example_id, attempt), stored.get(example_id))
            for example_id, tried in attempts.items()
            for attempt in tried
        ]
    )
    return outcomes


def _ask(examples: list[Example]) -> list[tuple[Example, Any]]:
    """Ask the examples' model (all the same) in one call; pair each example with its output
    or the error. When the call fails, the examples are asked one by one, unless the failure
    is the model's as a whole (``MODEL_WIDE_ERRORS``: unreachable, an address refused, a
    registration that cannot be used), which fails them all at once."""
    model = examples[0].model
    inputs = [
        services.model_inputs(
            example.config_version.parsed,
            example.input,
            example.context.data if example.context_id else None,
            uid=f"example-{example.pk}",
        )
        for example in examples
    ]
    try:
        result = predict_live(model, inputs)
    except ModelCallError as error:
        if len(examples) > 1 and not isinstance(error, MODEL_WIDE_ERRORS):
            # The batch may be what failed: too slow for the read timeout, a reply over the
            # size cap, too much for the server, or one input's answer refused. Each example
            # is then asked alone, as it was before batches, and keeps its own outcome.
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
    """Store that the model failed for one example; return its outcome and the row."""
    if isinstance(error, ModelCallError):
        code, message = error.code, str(error)
    else:
        code, message = "model.error", "The model call failed unexpectedly."
    stored = services.example_record_model_failure(example.pk, code=code, message=message)
    return {"ok": False, "code": code}, stored


def _store_answers(answered: list[services.ModelAnswer]) -> dict[int, Example | None]:
    """Store the answers in one transaction; if that fails, one by one, so that an answer
    that cannot be stored fails its own example only (with a message the worker sees)."""
    if not answered:
        return {}
    try:
        return services.examples_record_model_answers(answered)
    except Exception:
        logger.exception("storing the answers of %s failed", [a.example.pk for a in answered])
    stored: dict[int, Example | None] = {}
    for answer in answered:
        example = answer.example
        try:
            stored[example.pk] = services.example_record_model_answer(
                example.pk,
                output=answer.output,
                latency_ms=answer.latency_ms,
                model_version=answer.model_version,
            )
        except Exception as error:
            logger.exception("storing the answer of example %s failed", example.pk)
            stored[example.pk] = _store_failure(example, error)[1]
    return stored


def sandbox_prediction_job(model_id: int, inputs: dict[str, Any]) -> dict[str, Any]:
    """Ask model ``model_id`` for one input and return the answer; nothing is stored."""
    model = Model.objects.select_related("task", "task__current_config").filter(pk=model_id).first()
    if model is None:
        return {"ok": False, "code": "model.missing", "message": "The model is gone."}
    try:
        result = predict_live(model, [inputs])
    except ModelCallError as error:
        return {"ok": False, "code": error.code, "message": str(error)}
    except Exception:
        logger.exception("sandbox prediction with model %s failed", model_id)
        return {"ok": False, "code": "model.error", "message": "The model call failed."}
    return {
        "ok": True,
        "output": result.outputs[0],
        "latency_ms": result.latency_ms,
        "model_name": model.name,
    }


SANDBOX_ACTOR_META = "actor"


def enqueue_sandbox_prediction(model: Model, inputs: dict[str, Any], actor_key: str) -> str | None:
    """Queue a sandbox prediction for the actor ``actor_key`` (``Actor.key``); return its id,
    or None when Redis cannot be reached (``SANDBOX_QUEUE_UNAVAILABLE_MESSAGE`` says so).

    The key goes into the job's meta: only that actor may read the answer
    (``sandbox_job``), whoever else learns the job id.
    """
    try:
        job = _queue().enqueue(
            sandbox_prediction_job,
            model.pk,
            inputs,
            job_timeout=job_timeout(model),
            result_ttl=RESULT_TTL_SECONDS,
            failure_ttl=FAILURE_TTL_SECONDS,
            meta={SANDBOX_ACTOR_META: actor_key},
        )
    except RedisError:
        logger.warning("could not queue a sandbox question", exc_info=True)
        return None
    return job.id


def wait_for_live_answer(job_id: str, seconds: float) -> dict[str, Any] | None:
    """Block up to ``seconds`` for job ``job_id``; None if it has not ended by then.

    Returns what a live job stored (``services.MODEL_ANSWER_FIELDS`` by name) when it said so,
    or ``{}`` when the job ended without saying (RQ's result came first, it stored nothing,
    or it is not a live job) or Redis cannot be reached: the caller then reads the row.
    """
    if seconds <= 0:
        return None
    done = _done_key(job_id)
    streams = {Result.get_key(job_id): "0-0", done: "0-0"}
    try:
        response = _queue().connection.xread(streams, block=max(1, int(seconds * 1000)))
    except RedisError:
        logger.warning("could not wait for job %s", job_id, exc_info=True)
        return {}  # the caller reads the row: what it holds is all there is to know
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
    """Block up to ``seconds`` until job ``job_id`` has a result (success or failure)."""
    return wait_for_live_answer(job_id, seconds) is not None


def sandbox_job(job_id: str, actor_key: str):
    """Return sandbox job ``job_id`` of the actor ``actor_key``, or None when it expired.

    Raise ``NotFound`` when the job is not a sandbox job of this actor (another worker's
    sandbox, a live job): a job id alone gives no access to an answer.
    """
    from rq.exceptions import NoSuchJobError
    from rq.job import Job

    try:
        job = Job.fetch(job_id, connection=_queue().connection)
    except NoSuchJobError:
        return None
    if not actor_key or job.meta.get(SANDBOX_ACTOR_META) != actor_key:
        raise NotFound("no such sandbox answer")
    return job


def wait_for_sandbox(job_id: str, actor_key: str, seconds: float) -> None:
    """Block up to ``seconds`` for the actor's sandbox job ``job_id``.

    Raises ``NotFound`` (before waiting) for a job that is not a sandbox job of this actor.
    Returns at once when the job expired or Redis cannot be reached: ``sandbox_result`` then
    says which.
    """
    try:
        asked = sandbox_job(job_id, actor_key) is not None
    except RedisError:
        return
    if asked:
        wait_for_job(job_id, seconds)


def sandbox_result(job_id: str, actor_key: str) -> dict[str, Any] | None:
    """Return the actor's sandbox answer, None while it runs, or a failure description.

    Raise ``NotFound`` for a job that is not a sandbox job of ``actor_key``.
    """
    try:
        job = sandbox_job(job_id, actor_key)
        if job is None:
            return {"ok": False, "code": "sandbox.expired", "message": "The answer expired."}
        result = job.latest_result()
    except RedisError:
        logger.warning("could not read sandbox job %s", job_id, exc_info=True)
        return {
            "ok": False,
            "code": QUEUE_UNAVAILABLE,
            "message": SANDBOX_QUEUE_UNAVAILABLE_MESSAGE,
        }
    if result is None:
        return None
    if result.type == Result.Type.SUCCESSFUL and isinstance(result.return_value, dict):
        return result.return_value
    return {"ok": False, "code": "model.error", "message": "The model call failed."}
