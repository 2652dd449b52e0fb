"""Calls to a registered model's endpoint: health probes (recorded) and live predictions.

The model's row is only read here, apart from the health fields a probe writes; registering
and editing models is ``models_hub.services``. Every failure is a
``models_hub.errors.ModelCallError`` with a safe message: the auth token never appears in a
message or a log line.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from core.errors import NotFound
from models_hub import client, selectors
from models_hub.client import HealthResult, PredictionResult
from models_hub.errors import (
    ModelCallError,
    ModelConfigurationError,
    ModelTokenUnreadable,
    scrub,
    truncate,
)
from models_hub.models import ModelStatus, RegisteredModel
from models_hub.signals import model_rows_changed
from models_hub.transport import LIVE_RETRY
from tasks.config import TaskConfig


def model_record_health(model_id: int) -> HealthResult:
    """Probe model ``model_id`` and store status, latency, version and memory.

    Disabled models and models without an endpoint are not probed. Raises ``NotFound`` for a
    model that no longer exists.
    """
    model = RegisteredModel.objects.filter(pk=model_id).first()
    if model is None:
        raise NotFound(f"no model {model_id}")
    if model.status == ModelStatus.DISABLED:
        return HealthResult(ok=False, error="the model is disabled", error_code="model.disabled")
    try:
        spec = selectors.endpoint_spec(model)
    except ModelTokenUnreadable as error:
        # Recorded like a failed probe: the loop stops picking the model and its pages say why.
        result = HealthResult(ok=False, error=str(error), error_code=error.code)
        token = None
    except ModelConfigurationError as error:
        return HealthResult(ok=False, error=str(error), error_code=error.code)
    else:
        result = client.health(spec)
        token = spec.token
    values: dict[str, Any] = {
        "status": ModelStatus.HEALTHY if result.ok else ModelStatus.UNHEALTHY,
        "last_health_at": timezone.now(),
        "last_health_latency_ms": result.latency_ms,
        "last_health_error": truncate(scrub(result.error or "", [token]), 500),
    }
    if result.model_version is not None:
        values["model_version"] = result.model_version
    if result.memory_gb is not None:
        values["memory_gb"] = result.memory_gb
    # A direct update: an admin disabling the model meanwhile wins, and no other field (a card
    # edit saved while the probe ran) is overwritten with this process's stale copy.
    RegisteredModel.objects.filter(pk=model_id).exclude(status=ModelStatus.DISABLED).update(
        **values
    )
    if values["status"] != model.status:
        announce_rows_changed(model.task_id)
    return result


def announce_rows_changed(task_id: int) -> None:
    """Send ``model_rows_changed`` for ``task_id`` after the commit (the task bundle forgets)."""
    transaction.on_commit(
        lambda: model_rows_changed.send(sender=RegisteredModel, task_ids=[task_id]), robust=True
    )


def predict_live(
    model: RegisteredModel,
    inputs: list[dict],
    *,
    config: TaskConfig | None = None,
    task_code: str | None = None,
) -> PredictionResult:
    """Return ``model``'s checked outputs for ``inputs``.

    The outputs are checked against ``config`` (with ``task_code``, the task's code) when
    given, else against the task's current config (load ``model`` with
    ``select_related("task__current_config")`` to avoid queries). Raises a
    ``models_hub.errors.ModelCallError`` (with a safe message and a code) when the model
    fails; ``ModelConfigurationError`` when there is no config or the model has no endpoint.
    """
    if config is None:
        config, task_code = model.task.config, model.task.code
    if config is None:
        raise ModelConfigurationError("the task has no config")
    return client.predict(
        selectors.endpoint_spec(model), config, task_code, inputs, retry=LIVE_RETRY
    )


def prediction_error(error: ModelCallError) -> dict[str, Any]:
    """Return the JSON-ready ``{"code", "message", "retryable"}`` of a failed model call."""
    return {"code": error.code, "message": str(error), "retryable": error.retryable}
