"""The trial request of a registration: one example built from the task's config, sent to a
new model's endpoint, so that a model whose answer cannot fit the task (a 3-label model on a
2-label task, say) is refused before it reaches a worker.

Only an answer decides: an endpoint that does not answer (down, slow, refusing the token,
failing) is registered as before, and its health checks tell its owner.
"""

from __future__ import annotations

import dataclasses

from core.errors import ServiceError
from models_hub import client, selectors
from models_hub.errors import ModelBadResponse, ModelCallError
from models_hub.models import RegisteredModel
from models_hub.transport import RetryPolicy
from tasks.config.types import FieldSpec, FieldType, TaskConfig

TRIAL_TEXT = "A short sample sentence sent to check that the model's answer fits the task."
TRIAL_IMAGE = "https://example.org/image.jpg"
# One try, quickly: a registration waits for it.
TRIAL_RETRY = RetryPolicy(max_attempts=1)
TRIAL_CONNECT_TIMEOUT = 1.0
TRIAL_READ_TIMEOUT = 10.0


def trial_value(spec: FieldSpec):
    """A value of ``spec``'s type: its first label, a sample text or image address."""
    if spec.type == FieldType.MULTICLASS and spec.labels:
        return spec.labels[0]
    if spec.type == FieldType.MULTILABEL and spec.labels:
        return [spec.labels[0]]
    if spec.type == FieldType.IMAGE:
        return TRIAL_IMAGE
    return TRIAL_TEXT[: spec.max_length]


def trial_input(config: TaskConfig) -> dict:
    """One model input of ``config``: a value for every field sent to the model."""
    return {"uid": "trial", **{s.name: trial_value(s) for s in config.model_input_fields}}


def answer_unfit(error: ModelCallError) -> bool:
    """Whether ``error`` says the model answered, and what it answered cannot fit the task
    (not an HTTP error status: those say nothing about the answer's shape)."""
    if not isinstance(error, ModelBadResponse):
        return False
    return error.status is None or 200 <= error.status < 300


def model_trial(model: RegisteredModel, config: TaskConfig | None, task_code: str) -> None:
    """Send ``model`` (saved or not) one request built from ``config``; raise a
    ``ServiceError`` (``model.answer_unfit``, on ``endpoint_url``) quoting the value error
    when its answer cannot fit the task. Does nothing for a model without an endpoint."""
    if config is None or not model.has_endpoint:
        return
    try:
        spec = selectors.endpoint_spec(model)
    except ModelCallError:
        return  # a configuration problem: the form and the health checks say it
    spec = dataclasses.replace(
        spec,
        connect_timeout=min(spec.connect_timeout, TRIAL_CONNECT_TIMEOUT),
        read_timeout=min(spec.read_timeout, TRIAL_READ_TIMEOUT),
    )
    try:
        client.predict(spec, config, task_code, [trial_input(config)], retry=TRIAL_RETRY)
    except ModelCallError as error:
        if answer_unfit(error):
            message = (
                "the model answered a trial request built from the task's config, but its "
                f"answer does not fit the task: {error}"
            )
            raise ServiceError(
                message, code="model.answer_unfit", details={"endpoint_url": [message]}
            ) from None
