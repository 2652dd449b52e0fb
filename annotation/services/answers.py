"""What goes to the model in the loop, and what its answer stores on an example.

An answer is stored once: only while the example still awaits its model. Its verdict (was
the model fooled?) comes from the config's ``model_wrong_metric``; the counters it moves are
buffered after the commit (``annotation.stats``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.models import Example, ExampleStatus, VerdictSource
from annotation.services.guards import example_locked, retry_on_deadlock
from annotation.stats import counters
from annotation.stats.buffer import counters_add_on_commit
from tasks.config.types import FieldType, TaskConfig
from tasks.metrics.errors import MetricError
from tasks.metrics.fooling import model_fooled

logger = logging.getLogger(__name__)

# What the live loop writes on an example (an answer; a failure writes some of them): the
# create page reads back only these after waiting.
MODEL_ANSWER_FIELDS = (
    "status",
    "model_output",
    "model_latency_ms",
    "model_version",
    "model_error_code",
    "model_error_message",
    "model_wrong",
    "verdict_source",
    "updated_at",
)


def model_inputs(config: TaskConfig, data: Mapping, context_data: Mapping | None, uid: str) -> dict:
    """The one input sent to the model: uid, the worker's inputs that are not targets, and
    the context's fields."""
    inputs: dict[str, Any] = {"uid": uid}
    for spec in config.worker_input_fields:
        if spec.name in data:
            inputs[spec.name] = data[spec.name]
    for spec in config.context:
        if context_data and spec.name in context_data:
            inputs[spec.name] = context_data[spec.name]
    return inputs


def targets_of(config: TaskConfig, data: Mapping) -> dict:
    return {spec.name: data[spec.name] for spec in config.target_fields if spec.name in data}


def verdict_for(config: TaskConfig, data: Mapping, output: Mapping) -> bool | None:
    """Whether the model was fooled under the config's metric (None: ask the worker)."""
    try:
        return model_fooled(config, targets_of(config, data), output)
    except MetricError:
        logger.warning("model_wrong_metric could not be computed", exc_info=True)
        return None


def normalise_input(config: TaskConfig, data: Mapping) -> dict:
    """Keep only the config's inputs; a selection given as plain text becomes ``{"text": ...}``."""
    clean = {}
    for spec in config.input:
        if spec.name in data:
            value = data[spec.name]
            if spec.type == FieldType.CONTEXT_STRING_SELECTION and isinstance(value, str):
                value = {"text": value}
            clean[spec.name] = value
    return clean


@dataclass(frozen=True)
class ModelAnswer:
    """A model's answer to an example, as the drain stores it; ``example`` as the drain read
    it, with its config version."""

    example: Example
    output: Mapping
    latency_ms: float | None = None
    model_version: str | None = None


def _answer_values(example: Example, answer: ModelAnswer) -> dict:
    model_wrong = verdict_for(example.config_version.parsed, example.input, answer.output)
    return {
        "status": ExampleStatus.MODEL_ANSWERED,
        "model_output": dict(answer.output),
        "model_latency_ms": answer.latency_ms,
        "model_version": (answer.model_version or "")[:200],
        "model_error_code": "",
        "model_error_message": "",
        "model_wrong": model_wrong,
        "verdict_source": VerdictSource.METRIC if model_wrong is not None else VerdictSource.NONE,
        "updated_at": timezone.now(),
    }


def _store_answer(answer: ModelAnswer) -> Example | None:
    """Write ``answer`` (inside a transaction); the example as stored, or None when it no
    longer awaits its model.

    One conditional UPDATE while the row is as the drain read it; otherwise the row is
    locked and read again.
    """
    known = answer.example
    if known.status == ExampleStatus.AWAITING_MODEL:
        values = _answer_values(known, answer)
        written = Example.objects.filter(
            pk=known.pk,
            status=ExampleStatus.AWAITING_MODEL,
            retracted=known.retracted,
            validation_state=known.validation_state,
        ).update(**values)
        if written:
            for name, value in values.items():
                setattr(known, name, value)
            return known
    example = example_locked(known.pk)
    if example.status != ExampleStatus.AWAITING_MODEL:
        return None
    for name, value in _answer_values(example, answer).items():
        setattr(example, name, value)
    example.save(update_fields=MODEL_ANSWER_FIELDS)
    return example


@retry_on_deadlock
def examples_record_model_answers(answers: list[ModelAnswer]) -> dict[int, Example | None]:
    """Store each model answer and its verdict, once, in one transaction; by example id, the
    row as stored, or None for an example that no longer awaits its model."""
    stored: dict[int, Example | None] = {}
    deltas = counters.CounterDeltas()
    with transaction.atomic():
        for answer in sorted(answers, key=lambda answer: answer.example.pk):
            example = _store_answer(answer)
            stored[answer.example.pk] = example
            if example is not None and example.model_wrong is not None:
                deltas.merge(counters.example_verdict(example))
        counters_add_on_commit(deltas)
    return stored


def example_record_model_failure(example_id: int, *, code: str, message: str) -> Example | None:
    """Store that the model failed (a safe code and message); the example is kept. None when
    it no longer awaits its model."""
    with transaction.atomic():
        example = example_locked(example_id)
        if example.status != ExampleStatus.AWAITING_MODEL:
            return None
        example.status = ExampleStatus.MODEL_FAILED
        example.model_error_code = code[:64]
        example.model_error_message = message[:2000]
        example.save(
            update_fields=["status", "model_error_code", "model_error_message", "updated_at"]
        )
    return example
