"""The models hub's queues: enqueue health checks and live predictions, read a prediction.

Jobs are enqueued by their dotted paths (``models_hub.jobs``), so the services can queue them
and the job module imports the services, never the reverse ("Layers and imports" in
``docs/CONTRIBUTING.md``).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import django_rq
from django.db import transaction
from redis.exceptions import RedisError
from rq.job import Job, JobStatus

from models_hub.models import RegisteredModel
from models_hub.transport import LIVE_RETRY

logger = logging.getLogger(__name__)

LIVE_QUEUE = "live"
HEALTH_QUEUE = "health"

# A live result is read back within seconds; keep it a little for retries and debugging.
LIVE_RESULT_TTL = 600
LIVE_FAILURE_TTL = 3600
# A live job nobody picked up within this many seconds is dropped: its page gave up waiting.
LIVE_QUEUED_TTL = 120
HEALTH_JOB_TIMEOUT = 60
HEALTH_ALL_JOB_TIMEOUT = 300
HEALTH_RESULT_TTL = 300
HEALTH_FAILURE_TTL = 86_400
HEALTH_CHECK_JOB = "models_hub.jobs.health_check_job"
HEALTH_CHECK_ALL_JOB = "models_hub.jobs.health_check_all_job"
PREDICT_JOB = "models_hub.jobs.predict_job"


def live_job_timeout(connect_timeout: float, read_timeout: float) -> int:
    """Return a job timeout that outlasts every attempt of a live call (at most 10 minutes)."""
    attempts = LIVE_RETRY.max_attempts
    return min(int(attempts * (connect_timeout + read_timeout) + 10), 600)


def enqueue_health_check(model_id: int) -> str | None:
    """Enqueue a health check of ``model_id`` after the current transaction commits.

    Best effort: when Redis is down the periodic check catches up, so this logs and returns
    None instead of failing the request that registered the model.
    """
    job_id = uuid.uuid4().hex

    def send() -> None:
        try:
            django_rq.get_queue(HEALTH_QUEUE).enqueue_call(
                HEALTH_CHECK_JOB,
                args=(model_id,),
                timeout=HEALTH_JOB_TIMEOUT,
                result_ttl=HEALTH_RESULT_TTL,
                failure_ttl=HEALTH_FAILURE_TTL,
                job_id=job_id,
            )
        except RedisError as error:
            logger.warning("cannot enqueue the health check of model %s: %s", model_id, error)

    transaction.on_commit(send)
    return job_id


def enqueue_health_check_all() -> Job:
    """Enqueue ``models_hub.jobs.health_check_all_job`` now (the admin's "check all" and tests)."""
    return django_rq.get_queue(HEALTH_QUEUE).enqueue_call(
        HEALTH_CHECK_ALL_JOB,
        timeout=HEALTH_ALL_JOB_TIMEOUT,
        result_ttl=HEALTH_RESULT_TTL,
        failure_ttl=HEALTH_FAILURE_TTL,
    )


def enqueue_predict(model: RegisteredModel, inputs: list[dict]) -> str:
    """Enqueue a live prediction of ``model`` after commit; return the job id at once.

    The caller usually saved an example first: ``on_commit`` makes sure the worker never
    runs before that row is visible. Read the outcome with ``predict_result(job_id)``.
    """
    job_id = uuid.uuid4().hex
    timeout = live_job_timeout(model.connect_timeout, model.read_timeout)
    model_id = model.pk

    def send() -> None:
        django_rq.get_queue(LIVE_QUEUE).enqueue_call(
            PREDICT_JOB,
            args=(model_id, inputs),
            timeout=timeout,
            ttl=LIVE_QUEUED_TTL,
            result_ttl=LIVE_RESULT_TTL,
            failure_ttl=LIVE_FAILURE_TTL,
            job_id=job_id,
        )

    transaction.on_commit(send)
    return job_id


def predict_result(job_id: str, *, wait_seconds: int = 0) -> dict[str, Any] | None:
    """Return the dict of a finished live prediction, or None while it is pending.

    ``wait_seconds`` blocks on RQ's result stream (no polling). A job that crashed or timed
    out gives ``{"error": {"code": "model.job_failed", ...}}``; an unknown or expired job
    gives ``{"error": {"code": "not_found", ...}}``.
    """
    connection = django_rq.get_connection(LIVE_QUEUE)
    try:
        job = Job.fetch(job_id, connection=connection)
    except Exception:  # rq raises NoSuchJobError; also tolerate a malformed id
        return {"error": {"code": "not_found", "message": "the prediction expired or never ran"}}
    result = job.latest_result(timeout=wait_seconds) if wait_seconds else job.latest_result()
    if result is None:
        if job.get_status(refresh=True) in (JobStatus.FAILED, JobStatus.STOPPED):
            return _job_failed()
        return None
    if result.type == result.Type.SUCCESSFUL:
        return result.return_value
    return _job_failed()


def _job_failed() -> dict[str, Any]:
    return {
        "error": {
            "code": "model.job_failed",
            "message": "the model did not answer in time",
            "retryable": True,
        }
    }
