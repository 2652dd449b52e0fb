"""RQ jobs of the create page, on the ``live`` queue (``models_hub.jobs.LiveWorker``, a
non-forking SimpleWorker, in production).

``live_prediction_job(example_id, attempt)`` asks the example's model and stores the answer or
the failure through the services; it is idempotent (an example that already has an answer is
left alone). ``sandbox_prediction_job(model_id, inputs)`` asks a model and returns the answer
without storing anything. ``wait_for_job`` blocks on the job's result stream in Redis, so a
request can wait briefly for a fast model instead of polling. A live job also says "done" on
a stream of its own as soon as the answer is committed, before RQ's bookkeeping of the job
(its result, registries and worker state: about a millisecond), so the waiting page wakes
that much earlier; the result stream still wakes it if the job dies before saying so. A live
job that ends normally is kept only briefly (``ANNOTATION_LIVE_RESULT_TTL``, 60 s): its outcome
is on the example and its signal on its own stream.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import django_rq
from django.conf import settings
from django.utils.dateparse import parse_datetime
from redis.exceptions import RedisError
from rq.results import Result

from annotation import services
from annotation.models import Example, ExampleStatus
from dynatask_site.precompiled import PrecompiledQuery
from models_hub.errors import ModelCallError
from models_hub.models import Model
from models_hub.services import predict_live
from tasks.errors import NotFound

logger = logging.getLogger(__name__)

LIVE_QUEUE = "live"
RESULT_TTL_SECONDS = 600
FAILURE_TTL_SECONDS = 24 * 3600
# The live client makes at most two attempts; allow both plus a margin.
TIMEOUT_MARGIN_SECONDS = 5


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
    """Queue ``live_prediction_job`` for an example (called after commit); return the job id."""
    job_id = live_job_id(example_id, attempt)
    queue = _queue()
    # One round trip: given no pipeline, RQ sends the queue's registration (SADD) and the
    # job (its hash and the push) as two transactions.
    with queue.connection.pipeline() as pipe:
        queue.enqueue(
            live_prediction_job,
            example_id,
            attempt,
            job_id=job_id,
            job_timeout=timeout,
            result_ttl=settings.ANNOTATION_LIVE_RESULT_TTL,
            failure_ttl=FAILURE_TTL_SECONDS,
            pipeline=pipe,
        )
        pipe.execute()
    return job_id


def _done_key(job_id: str) -> str:
    return f"annotation:live-done:{job_id}"


def _answer_of(example: Example | None) -> str:
    """The fields the job stored (``services.MODEL_ANSWER_FIELDS``) as JSON, "" if none."""
    if example is None:
        return ""
    answer = {name: getattr(example, name) for name in services.MODEL_ANSWER_FIELDS}
    answer["updated_at"] = example.updated_at.isoformat() if example.updated_at else None
    return json.dumps(answer)


def _say_done(job_id: str, stored: Example | None = None) -> None:
    """Wake the request waiting for ``job_id``, with what the job stored (best effort: RQ's
    result stream wakes it too, and the page then reads the row)."""
    key = _done_key(job_id)
    try:
        with _queue().connection.pipeline(transaction=False) as pipe:
            pipe.xadd(key, {"done": "1", "answer": _answer_of(stored)}, maxlen=1)
            pipe.expire(key, RESULT_TTL_SECONDS)
            pipe.execute()
    except RedisError:
        logger.warning("could not signal the end of job %s", job_id, exc_info=True)


def live_prediction_job(example_id: int, attempt: int = 1) -> dict[str, Any]:
    """Ask the example's model and store its answer or the failure. Idempotent."""
    outcome, stored = _live_prediction(example_id)
    _say_done(live_job_id(example_id, attempt), stored)
    return outcome


# The example with everything the job reads, by primary key (no ORDER BY), compiled once.
_EXAMPLE_FOR_JOB = PrecompiledQuery(
    lambda pk: Example.objects.select_related(
        "model", "model__task", "model__task__current_config", "config_version", "context"
    )
    .filter(pk=pk)
    .order_by()[:1],
    pk=int,
)


def _live_prediction(example_id: int) -> tuple[dict[str, Any], Example | None]:
    """Return the job's outcome and the example as stored (None when nothing was stored)."""
    example = _EXAMPLE_FOR_JOB.first(pk=example_id)
    if example is None or example.status != ExampleStatus.AWAITING_MODEL:
        return {"skipped": True}, None
    if example.model is None:
        stored = services.example_record_model_failure(
            example_id, code="model.missing", message="The model was removed from the loop."
        )
        return {"ok": False, "code": "model.missing"}, stored
    config = example.config_version.parsed
    inputs = services.model_inputs(
        config,
        example.input,
        example.context.data if example.context_id else None,
        uid=f"example-{example.pk}",
    )
    try:
        result = predict_live(example.model, [inputs])
    except ModelCallError as error:
        stored = services.example_record_model_failure(
            example_id, code=error.code, message=str(error)
        )
        return {"ok": False, "code": error.code}, stored
    except Exception:  # a bug must not leave the worker waiting forever
        logger.exception("live prediction of example %s failed", example_id)
        stored = services.example_record_model_failure(
            example_id, code="model.error", message="The model call failed unexpectedly."
        )
        return {"ok": False, "code": "model.error"}, stored
    stored = services.example_record_model_answer(
        example_id,
        output=result.outputs[0],
        latency_ms=result.latency_ms,
        model_version=result.model_version,
        example=example,  # unchanged since read: one UPDATE instead of a locking read too
    )
    return {"ok": True}, stored


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


def enqueue_sandbox_prediction(model: Model, inputs: dict[str, Any], actor_key: str) -> str:
    """Queue a sandbox prediction for the actor ``actor_key`` (``Actor.key``); return its id.

    The key goes into the job's meta: only that actor may read the answer
    (``sandbox_job``), whoever else learns the job id.
    """
    job = _queue().enqueue(
        sandbox_prediction_job,
        model.pk,
        inputs,
        job_timeout=job_timeout(model),
        result_ttl=RESULT_TTL_SECONDS,
        failure_ttl=FAILURE_TTL_SECONDS,
        meta={SANDBOX_ACTOR_META: actor_key},
    )
    return job.id


def wait_for_live_answer(job_id: str, seconds: float) -> dict[str, Any] | None:
    """Block up to ``seconds`` for job ``job_id``; None if it has not ended by then.

    Returns what a live job stored (``services.MODEL_ANSWER_FIELDS`` by name) when it said so,
    or ``{}`` when the job ended without saying (RQ's result came first, it stored nothing,
    or it is not a live job): the caller then reads the row.
    """
    if seconds <= 0:
        return None
    connection = _queue().connection
    done = _done_key(job_id)
    streams = {Result.get_key(job_id): "0-0", done: "0-0"}
    response = connection.xread(streams, block=max(1, int(seconds * 1000)))
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


def sandbox_result(job_id: str, actor_key: str) -> dict[str, Any] | None:
    """Return the actor's sandbox answer, None while it runs, or a failure description.

    Raise ``NotFound`` for a job that is not a sandbox job of ``actor_key``.
    """
    job = sandbox_job(job_id, actor_key)
    if job is None:
        return {"ok": False, "code": "sandbox.expired", "message": "The answer expired."}
    result = job.latest_result()
    if result is None:
        return None
    if result.type == Result.Type.SUCCESSFUL and isinstance(result.return_value, dict):
        return result.return_value
    return {"ok": False, "code": "model.error", "message": "The model call failed."}
