"""RQ jobs of the models hub and the helpers that enqueue them.

Job functions live at module level, take ids (never model instances), are idempotent, and
return JSON-ready dicts. They are enqueued with explicit timeouts and result/failure TTLs.

- ``predict_job(model_id, inputs)`` (``live``): one live prediction of a registered model;
- ``predict_endpoint_job(endpoint, task_code, config_yaml, inputs)`` (``live``): the same
  without DB access, for benchmarks and ad-hoc endpoints without a token;
- ``health_check_job(model_id)`` (``health``): probe one model and store its health;
- ``health_check_all_job()`` (``health``): one ``health_check_job`` per model with an endpoint.

Health checks have a queue (and a worker) of their own: a probe of a slow endpoint waits
behind no evaluation shard, and holds none up.

The live queue is served by RQ's ``SimpleWorker`` (no fork per job). Periodic jobs, the
health checks among them, run from RQ's cron scheduler (``manage.py run_cron``,
``settings.PERIODIC_JOBS``), once per period however many hosts run it
(``models_hub.periodic``).
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Mapping
from typing import Any

import django_rq
from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string
from redis.exceptions import RedisError
from rq.job import Job, JobStatus

from models_hub import selectors, services
from models_hub.client import EndpointSpec, predict
from models_hub.errors import ModelCallError, ModelConfigurationError
from models_hub.models import Model
from models_hub.periodic import PeriodicScheduler
from tasks.config import parse_task_config
from tasks.errors import NotFound

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


# -- job functions ----------------------------------------------------------------------------
def health_check_job(model_id: int) -> dict[str, Any]:
    """Probe model ``model_id`` and record its health (a deleted model is a no-op)."""
    try:
        result = services.model_record_health(model_id)
    except NotFound:
        return {"ok": False, "error_code": "not_found"}
    return {"ok": result.ok, "latency_ms": result.latency_ms, "error_code": result.error_code}


def health_check_all_job() -> dict[str, Any]:
    """Enqueue one health check per model with an endpoint; return how many."""
    model_ids = selectors.model_ids_to_check()
    queue = django_rq.get_queue(HEALTH_QUEUE)
    # One job per model: a slow endpoint delays only its own check, and workers share them.
    for model_id in model_ids:
        queue.enqueue_call(
            health_check_job,
            args=(model_id,),
            timeout=HEALTH_JOB_TIMEOUT,
            result_ttl=HEALTH_RESULT_TTL,
            failure_ttl=HEALTH_FAILURE_TTL,
        )
    return {"enqueued": len(model_ids)}


def predict_job(model_id: int, inputs: list[dict]) -> dict[str, Any]:
    """Return ``{"outputs", "model_version", "latency_ms"}`` or ``{"error": {...}}``."""
    model = Model.objects.select_related("task", "task__current_config").filter(pk=model_id).first()
    if model is None:
        return {"error": {"code": "not_found", "message": "the model no longer exists"}}
    return _prediction_outcome(lambda: services.predict_live(model, inputs))


@functools.lru_cache(maxsize=32)
def _parsed_config(config_yaml: str):
    return parse_task_config(config_yaml)


def predict_endpoint_job(
    endpoint: Mapping[str, Any], task_code: str, config_yaml: str, inputs: list[dict]
) -> dict[str, Any]:
    """Like ``predict_job`` for an endpoint given by value; no DB access.

    ``endpoint`` holds ``EndpointSpec`` fields except ``token``, ``allowed_hosts`` and
    ``max_response_bytes``: a token must never be stored in Redis job arguments, and the SSRF
    allowlist and size cap always come from this worker's settings.
    """
    forbidden = {"token", "allowed_hosts", "max_response_bytes", "verify"} & set(endpoint)
    if forbidden:
        error = ModelConfigurationError(f"endpoint fields not accepted here: {sorted(forbidden)}")
        return {"error": services.prediction_error(error)}
    spec = EndpointSpec(
        **endpoint,
        allowed_hosts=tuple(settings.MODELS_HUB_ALLOWED_HOSTS),
        max_response_bytes=settings.MODELS_HUB_MAX_RESPONSE_BYTES,
    )
    # The config is parsed inside the call: a bad config is an error answer, not a crash.
    return _prediction_outcome(
        lambda: predict(
            spec, _parsed_config(config_yaml), task_code, inputs, retry=services.LIVE_RETRY
        )
    )


def _prediction_outcome(call) -> dict[str, Any]:
    """Run one prediction; return its outputs, or its error as a plain dict (never raise)."""
    try:
        result = call()
    except ModelCallError as error:
        return {"error": services.prediction_error(error)}
    except ValueError as error:
        return {"error": _bad_input(error)}
    return {
        "outputs": result.outputs,
        "model_version": result.model_version,
        "latency_ms": result.latency_ms,
    }


# -- enqueue helpers --------------------------------------------------------------------------
def live_job_timeout(connect_timeout: float, read_timeout: float) -> int:
    """Return a job timeout that outlasts every attempt of a live call (at most 10 minutes)."""
    attempts = services.LIVE_RETRY.max_attempts
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
                health_check_job,
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
    """Enqueue ``health_check_all_job`` now (the admin's "check all" and tests)."""
    return django_rq.get_queue(HEALTH_QUEUE).enqueue_call(
        health_check_all_job,
        timeout=HEALTH_ALL_JOB_TIMEOUT,
        result_ttl=HEALTH_RESULT_TTL,
        failure_ttl=HEALTH_FAILURE_TTL,
    )


def enqueue_predict(model: Model, inputs: list[dict]) -> str:
    """Enqueue a live prediction of ``model`` after commit; return the job id at once.

    The caller usually saved an example first: ``on_commit`` makes sure the worker never
    runs before that row is visible. Read the outcome with ``predict_result(job_id)``.
    """
    job_id = uuid.uuid4().hex
    timeout = live_job_timeout(model.connect_timeout, model.read_timeout)
    model_id = model.pk

    def send() -> None:
        django_rq.get_queue(LIVE_QUEUE).enqueue_call(
            predict_job,
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


def _bad_input(error: ValueError) -> dict[str, Any]:
    # The inputs lack a model input field of the config: the caller's bug, not the model's.
    return {"code": "prediction.bad_input", "message": str(error), "retryable": False}


def _job_failed() -> dict[str, Any]:
    return {
        "error": {
            "code": "model.job_failed",
            "message": "the model did not answer in time",
            "retryable": True,
        }
    }


# -- periodic health checks -------------------------------------------------------------------
def cron_scheduler(connection=None, jobs=None) -> PeriodicScheduler:
    """RQ's cron scheduler with the periodic jobs of ``settings.PERIODIC_JOBS`` (or ``jobs``):
    (dotted path of a job function, queue name, interval in seconds) each. Each job is
    enqueued once per period however many hosts run one (``models_hub.periodic``)."""
    scheduler = PeriodicScheduler(connection=connection or django_rq.get_connection(HEALTH_QUEUE))
    for path, queue, interval in settings.PERIODIC_JOBS if jobs is None else jobs:
        scheduler.register(
            import_string(path),
            queue,
            interval=int(interval),
            # No ``timeout=`` here: rq 2.6's CronJob passes it to Queue.enqueue, which hands
            # unknown keywords to the job function itself. The queue's default timeout applies.
            # A run that no worker took within a few intervals is dropped: the next one comes.
            ttl=max(3 * int(interval), 10),
            result_ttl=min(HEALTH_RESULT_TTL, 10 * int(interval)),
            failure_ttl=HEALTH_FAILURE_TTL,
        )
    return scheduler
