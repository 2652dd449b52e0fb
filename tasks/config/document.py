"""Check a whole located task-config document and assemble its ``TaskConfig``.

Contract: ``validate_document(root, issues)`` appends every problem of the document to
``issues`` and returns the immutable ``TaskConfig`` only when ``issues`` is empty (problems
found while reading the YAML count too). It checks the top-level keys and ``schema_version``
itself and hands each section to its module, in a fixed order: fields, metadata, outputs, the
relations between fields, ``model_wrong_metric``, the leaderboard metrics, then the free texts
(``goal_message``, ``content_warning``, ``instructions``), the ``chat`` section and the
``arena`` section (which may give the chat its two seats). Pure: no
Django, no DB, no HTTP.
"""

from __future__ import annotations

from tasks.config import codes
from tasks.config.arena import read_arena
from tasks.config.chat import check_chat_with_metric, read_chat
from tasks.config.checker import DocumentChecker
from tasks.config.errors import ConfigIssue
from tasks.config.field_relations import (
    check_goal_fields,
    check_references,
    check_unique_names,
    read_outputs,
)
from tasks.config.fields import read_field_list, read_metadata
from tasks.config.leaderboard_metrics import (
    read_aggregation_metric,
    read_delta_metrics,
    read_perf_metrics,
)
from tasks.config.located_yaml import LocatedMapping, LocatedValue
from tasks.config.model_wrong_metric import read_model_wrong_metric
from tasks.config.types import TaskConfig

SUPPORTED_SCHEMA_VERSION = 1
TOP_LEVEL_KEYS = (
    "schema_version",
    "context",
    "input",
    "output",
    "metadata",
    "model_wrong_metric",
    "perf_metric",
    "delta_metrics",
    "aggregation_metric",
    "goal_message",
    "content_warning",
    "instructions",
    "chat",
    "arena",
)
# Dynabench keys this platform knows about but does not implement.
UNSUPPORTED_TOP_LEVEL_KEYS = {
    "train_file_metric": "DataPerf training-file metrics (train_file_metric) are not supported",
}


def validate_document(root: LocatedValue, issues: list[ConfigIssue]) -> TaskConfig | None:
    """Check the document under ``root``; return its TaskConfig unless ``issues`` is not empty."""
    checker = DocumentChecker(issues)
    top = checker.mapping(root, "")
    if top is None:
        return None
    _check_top_level_keys(checker, top)

    schema_version = _read_schema_version(checker, top)
    context = read_field_list(checker, top, "context", root, required=False)
    inputs = read_field_list(checker, top, "input", root, required=True)
    create, validate = read_metadata(checker, top)
    outputs = read_outputs(checker, top, root, context, inputs)
    every_field = context + inputs + outputs + create + validate
    check_unique_names(checker, [raw for raw in every_field if raw.section != "output*"])
    check_references(checker, every_field, context, inputs, outputs)
    check_goal_fields(checker, inputs)

    targets = {raw.spec.name for raw in inputs} & {raw.spec.name for raw in outputs}
    model_wrong_metric = read_model_wrong_metric(checker, top, targets)
    output_names = {raw.spec.name for raw in outputs}
    perf_metrics, perf_complete = read_perf_metrics(checker, top, root, output_names)
    delta_metrics = read_delta_metrics(checker, top)
    aggregation = read_aggregation_metric(checker, top, perf_metrics, perf_complete)
    goal_message = checker.optional_string(top, "goal_message", "")
    content_warning = checker.optional_string(top, "content_warning", "")
    instructions = checker.optional_string(top, "instructions", "")
    chat = read_chat(checker, top)
    arena, chat = read_arena(checker, top, chat)
    check_chat_with_metric(checker, top, chat, model_wrong_metric.type)

    if checker.issues:
        return None
    return TaskConfig(
        schema_version=schema_version,
        context=tuple(raw.spec for raw in context),
        input=tuple(raw.spec for raw in inputs),
        output=tuple(raw.spec for raw in outputs),
        metadata_create=tuple(raw.spec for raw in create),
        metadata_validate=tuple(raw.spec for raw in validate),
        model_wrong_metric=model_wrong_metric,
        perf_metrics=tuple(perf_metrics),
        delta_metrics=tuple(delta_metrics),
        aggregation_metric=aggregation,
        goal_message=goal_message,
        content_warning=content_warning,
        instructions=instructions,
        chat=chat,
        arena=arena,
    )


def _read_schema_version(checker: DocumentChecker, top: LocatedMapping) -> int:
    """Check ``schema_version`` when given; return the version this platform reads."""
    node = checker.given(top, "schema_version")
    if node is None:
        return SUPPORTED_SCHEMA_VERSION
    version = checker.integer(node, "schema_version")
    if version is not None and version != SUPPORTED_SCHEMA_VERSION:
        checker.error_at(
            codes.UNSUPPORTED_SCHEMA_VERSION,
            "schema_version",
            f"schema_version {version} is not supported; this platform reads version "
            f"{SUPPORTED_SCHEMA_VERSION}",
            node,
        )
    return SUPPORTED_SCHEMA_VERSION


def _check_top_level_keys(checker: DocumentChecker, top: LocatedMapping) -> None:
    """Report top-level keys that are unknown, or known from Dynabench but not supported."""
    for key in top.items:
        if key in UNSUPPORTED_TOP_LEVEL_KEYS:
            checker.error(
                codes.NOT_SUPPORTED, key, UNSUPPORTED_TOP_LEVEL_KEYS[key], top.key_lines[key]
            )
        elif key not in TOP_LEVEL_KEYS:
            checker.error(
                codes.UNKNOWN_TOP_LEVEL_KEY,
                key,
                f"unknown top-level key {key!r}; allowed: {', '.join(TOP_LEVEL_KEYS)}",
                top.key_lines[key],
            )
