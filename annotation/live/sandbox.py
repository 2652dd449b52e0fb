"""Sandbox questions: the create page asks the model without storing anything.

A sandbox job runs on the live queue; its answer is readable only by the actor who asked
(the actor's key is in the job's meta), whoever else learns the job id.
"""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import RedisError
from rq.exceptions import NoSuchJobError
from rq.job import Job
from rq.results import Result

from annotation.live.connection import live_queue
from annotation.live.queue import (
    FAILURE_TTL_SECONDS,
    QUEUE_UNAVAILABLE,
    RESULT_TTL_SECONDS,
    job_timeout,
    wait_for_job,
)
from core.errors import NotFound
from models_hub.calls import predict_live
from models_hub.errors import ModelCallError
from models_hub.models import RegisteredModel

logger = logging.getLogger(__name__)

SANDBOX_QUEUE_UNAVAILABLE_MESSAGE = (
    "The model could not be asked: the job queue is not reachable. Try again in a moment."
)
SANDBOX_ACTOR_META = "actor"


def sandbox_prediction_job(model_id: int, inputs: dict[str, Any]) -> dict[str, Any]:
    """Ask model ``model_id`` for one input and return the answer; nothing is stored."""
    model = (
        RegisteredModel.objects.select_related("task", "task__current_config")
        .filter(pk=model_id)
        .first()
    )
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


def enqueue_sandbox_prediction(
    model: RegisteredModel, inputs: dict[str, Any], actor_key: str
) -> str | None:
    """Queue a sandbox question for the actor ``actor_key`` (``Actor.key``); return its job
    id, or None when Redis cannot be reached."""
    try:
        job = live_queue().enqueue(
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


def sandbox_job(job_id: str, actor_key: str) -> Job | None:
    """Return the actor's sandbox job ``job_id``, or None when it expired.

    Raise ``NotFound`` for a job that is not a sandbox job of this actor.
    """
    try:
        job = Job.fetch(job_id, connection=live_queue().connection)
    except NoSuchJobError:
        return None
    if not actor_key or job.meta.get(SANDBOX_ACTOR_META) != actor_key:
        raise NotFound("no such sandbox answer")
    return job


def wait_for_sandbox(job_id: str, actor_key: str, seconds: float) -> None:
    """Block up to ``seconds`` for the actor's sandbox job (``NotFound`` before waiting for
    another's). Returns at once when the job expired or Redis cannot be reached."""
    try:
        asked = sandbox_job(job_id, actor_key) is not None
    except RedisError:
        return
    if asked:
        wait_for_job(job_id, seconds)


def sandbox_result(job_id: str, actor_key: str) -> dict[str, Any] | None:
    """Return the actor's sandbox answer, None while it runs, or a failure description."""
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
