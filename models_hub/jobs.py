"""RQ jobs of the models hub (queued by ``models_hub.queues``, which never imports this module).

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
health checks among them, run from RQ's cron scheduler (``core.periodic``, ``manage.py
run_cron``, ``settings.PERIODIC_JOBS``), once per period however many hosts run it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

import django_rq
from django.conf import settings

from core.errors import NotFound
from models_hub import calls, selectors
from models_hub.client import EndpointSpec, predict
from models_hub.errors import ModelCallError, ModelConfigurationError
from models_hub.models import RegisteredModel
from models_hub.queues import (
    HEALTH_FAILURE_TTL,
    HEALTH_JOB_TIMEOUT,
    HEALTH_QUEUE,
    HEALTH_RESULT_TTL,
)
from models_hub.transport import LIVE_RETRY
from tasks.config import parse_task_config

logger = logging.getLogger(__name__)


# -- job functions ----------------------------------------------------------------------------
def health_check_job(model_id: int) -> dict[str, Any]:
    """Probe model ``model_id`` and record its health (a deleted model is a no-op)."""
    try:
        result = calls.model_record_health(model_id)
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
    model = (
        RegisteredModel.objects.select_related("task", "task__current_config")
        .filter(pk=model_id)
        .first()
    )
    if model is None:
        return {"error": {"code": "not_found", "message": "the model no longer exists"}}
    return _prediction_outcome(lambda: calls.predict_live(model, inputs))


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
        return {"error": calls.prediction_error(error)}
    spec = EndpointSpec(
        **endpoint,
        allowed_hosts=tuple(settings.MODELS_HUB_ALLOWED_HOSTS),
        max_response_bytes=settings.MODELS_HUB_MAX_RESPONSE_BYTES,
    )
    # The config is parsed inside the call: a bad config is an error answer, not a crash.
    return _prediction_outcome(
        lambda: predict(spec, _parsed_config(config_yaml), task_code, inputs, retry=LIVE_RETRY)
    )


def _prediction_outcome(call) -> dict[str, Any]:
    """Run one prediction; return its outputs, or its error as a plain dict (never raise)."""
    try:
        result = call()
    except ModelCallError as error:
        return {"error": calls.prediction_error(error)}
    except ValueError as error:
        return {"error": _bad_input(error)}
    return {
        "outputs": result.outputs,
        "model_version": result.model_version,
        "latency_ms": result.latency_ms,
    }


def _bad_input(error: ValueError) -> dict[str, Any]:
    # The inputs lack a model input field of the config: the caller's bug, not the model's.
    return {"code": "prediction.bad_input", "message": str(error), "retryable": False}
