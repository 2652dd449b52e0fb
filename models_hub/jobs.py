"""RQ jobs of the models hub and the helpers that enqueue them.

Job functions live at module level, take ids (never model instances), are idempotent, and
return JSON-ready dicts. They are enqueued with explicit timeouts and result/failure TTLs.

- ``predict_job(model_id, inputs)`` (``live``): one live prediction of a registered model;
- ``predict_endpoint_job(endpoint, task_code, config_yaml, inputs)`` (``live``): the same
  without DB access, for benchmarks and ad-hoc endpoints without a token;
- ``health_check_job(model_id)`` (``default``): probe one model and store its health;
- ``health_check_all_job()`` (``default``): one ``health_check_job`` per model with an endpoint.

The live queue is served by ``LiveWorker``, an ``rq.worker.SimpleWorker`` (no fork per job)
that skips RQ's redundant per-job writes of its own liveness. Periodic health checks use RQ's
own ``rq.cron.CronScheduler`` (``manage.py run_cron``).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

import django_rq
from django.conf import settings
from django.db import transaction
from redis.exceptions import RedisError
from rq.cron import CronScheduler
from rq.job import Job, JobStatus
from rq.worker import SimpleWorker

from dynatask_site.threadlocals import use_thread_locals
from dynatask_site.warmup import freeze_after_startup
from models_hub import selectors, services
from models_hub.client import EndpointSpec, predict
from models_hub.errors import ModelCallError, ModelConfigurationError
from models_hub.models import Model
from tasks.config import parse_task_config
from tasks.errors import NotFound

logger = logging.getLogger(__name__)

LIVE_QUEUE = "live"
HEALTH_QUEUE = "default"

# A live result is read back within seconds; keep it a little for retries and debugging.
LIVE_RESULT_TTL = 600
LIVE_FAILURE_TTL = 3600
# A live job nobody picked up within this many seconds is dropped: its page gave up waiting.
LIVE_QUEUED_TTL = 120
HEALTH_JOB_TIMEOUT = 60
HEALTH_ALL_JOB_TIMEOUT = 300
HEALTH_RESULT_TTL = 300
HEALTH_FAILURE_TTL = 86_400
DEFAULT_HEALTH_INTERVAL = 60


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


# -- the live worker ---------------------------------------------------------------------------
class LiveWorker(SimpleWorker):
    """The ``live`` queue's worker: a SimpleWorker that writes its liveness less often.

    Around every job RQ refreshes the worker's key (``heartbeat``: an EXPIRE and an HSET)
    three more times than the job's own pipelines do, sets the state "idle" twice and asks
    whether workers are suspended (``rq suspend``): five of the fifteen round trips to Redis
    of a job. Here a bare heartbeat (the worker's default TTL) is sent only when the last one
    is ``HEARTBEAT_EVERY`` seconds old, far inside the key's TTL (``worker_ttl`` + 60 s); a
    state is written only when it changes; and the suspension is checked at most every
    ``SUSPENSION_CHECK_EVERY`` seconds, so a suspended worker stops within that delay.
    Heartbeats with a TTL of their own (the job's: its timeout, which extends the key while
    it runs) and the job's pipelines are RQ's, unchanged.
    """

    HEARTBEAT_EVERY = 10.0
    SUSPENSION_CHECK_EVERY = 1.0
    # Set in the process of a long-running worker (not in burst mode): a job may then keep
    # the worker a moment longer for work that is about to arrive (``annotation.jobs``'s drain
    # waits for new examples). A burst worker, a test or a shell never waits.
    long_running = False

    _last_heartbeat: float | None = None
    _last_suspension_check: float | None = None

    def work(self, *args, **kwargs):
        """Work as RQ's worker; a long-running one (not in burst mode, in the main thread of
        its process: ``manage.py rqworker live``) first takes plain thread-local registries
        (``dynatask_site.threadlocals``) and freezes its loaded objects, so that the garbage
        collector's full collections stop walking them between jobs."""
        burst = kwargs.get("burst", args[0] if args else False)
        if not burst and threading.current_thread() is threading.main_thread():
            use_thread_locals()  # a worker process runs no event loop
            freeze_after_startup(templates=())
            LiveWorker.long_running = True
        return super().work(*args, **kwargs)

    def heartbeat(self, timeout: int | None = None, pipeline=None):
        last = self._last_heartbeat
        every = min(self.HEARTBEAT_EVERY, self.worker_ttl / 4)
        if timeout is None and last is not None and time.monotonic() - last < every:
            return
        super().heartbeat(timeout, pipeline)
        # A heartbeat with a TTL of its own (a job's: its timeout plus 60 s) also keeps the
        # key alive for far longer than HEARTBEAT_EVERY.
        self._last_heartbeat = time.monotonic()

    def set_state(self, state: str, pipeline=None):
        if pipeline is None and state == self._state:
            return
        super().set_state(state, pipeline)

    def check_for_suspension(self, burst: bool):
        checked = self._last_suspension_check
        if checked is not None and time.monotonic() - checked < self.SUSPENSION_CHECK_EVERY:
            return
        super().check_for_suspension(burst)
        self._last_suspension_check = time.monotonic()


# -- periodic health checks -------------------------------------------------------------------
def health_interval() -> int:
    """Return the periodic health-check interval in seconds (``MODELS_HUB_HEALTH_INTERVAL``)."""
    return int(getattr(settings, "MODELS_HUB_HEALTH_INTERVAL", DEFAULT_HEALTH_INTERVAL))


def cron_scheduler(connection=None, interval: int | None = None) -> CronScheduler:
    """Return RQ's cron scheduler with the periodic health checks registered."""
    scheduler = CronScheduler(connection=connection or django_rq.get_connection(HEALTH_QUEUE))
    scheduler.register(
        health_check_all_job,
        HEALTH_QUEUE,
        interval=interval or health_interval(),
        # No ``timeout=`` here: rq 2.6's CronJob passes it to Queue.enqueue, which hands
        # unknown keywords to the job function itself. The queue's default timeout applies.
        result_ttl=HEALTH_RESULT_TTL,
        failure_ttl=HEALTH_FAILURE_TTL,
    )
    return scheduler
