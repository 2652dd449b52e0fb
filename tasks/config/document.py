"""Check a whole located task-config document and assemble its ``TaskConfig``.

Contract: ``validate_document(root, issues)`` appends every problem of the document to
``issues`` and returns the immutable ``TaskConfig`` only when ``issues`` is empty (problems
found while reading the YAML count too); warnings (upstream slips) go on the config's
``warnings``. It checks the top-level keys and ``schema_version`` itself and hands each
section to its module, in a fixed order: the form (v1 field lists through ``fields``, or
Dynabench's v2 components through ``components``), metadata, outputs, the relations between
fields, ``model_wrong_metric`` and ``model_evaluation_metric``, the model maps
(``model_maps``), the leaderboard metrics, the page settings (``page_settings``), the free
texts (``goal_message``, ``content_warning``, ``instructions``), then the chat (the ``chat``
section, or a v2 chat context read with the form, never both) and the ``arena`` section
(which may give the chat its two seats). Pure: no Django, no DB, no HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.config import codes
from tasks.config.arena import read_arena
from tasks.config.chat import check_chat_with_metric, read_chat
from tasks.config.checker import DocumentChecker
from tasks.config.components import V2_FORM_KEYS, V2Form, is_v2, read_v2_form
from tasks.config.errors import ConfigIssue
from tasks.config.field_relations import (
    check_goal_fields,
    check_references,
    check_unique_names,
    read_outputs,
)
from tasks.config.fields import RawField, read_field_list, read_metadata
from tasks.config.leaderboard_metrics import (
    read_aggregation_metric,
    read_delta_metrics,
    read_perf_metrics,
)
from tasks.config.located_yaml import LocatedMapping, LocatedValue
from tasks.config.model_maps import (
    TaskFields,
    read_model_evaluation_metric,
    read_model_maps,
    read_response_field,
)
from tasks.config.model_wrong_metric import read_model_wrong_metric
from tasks.config.page_settings import (
    check_validation_context,
    order_by_main_metric,
    read_external_validator,
    read_verdicts,
)
from tasks.config.slips import check_label_slips
from tasks.config.types import TaskConfig

SUPPORTED_SCHEMA_VERSION = 1
V1_FORM_KEYS = ("context", "input")
# Keys of Dynabench's current format, read in both formats (see model_maps, page_settings).
MODEL_SIDE_KEYS = (
    "model_input",
    "model_output",
    "response_fields",
    "cast_output",
    "model_evaluation_metric",
    "evaluation",
    "validation_options",
    "validation_context",
    "external_validator",
    "creation_samples_title",
)
TOP_LEVEL_KEYS = (
    "schema_version",
    *V1_FORM_KEYS,
    *V2_FORM_KEYS,
    "output",
    "metadata",
    "model_wrong_metric",
    "perf_metric",
    "delta_metrics",
    "aggregation_metric",
    "goal_message",
    "content_warning",
    "instructions",
    *MODEL_SIDE_KEYS,
    "chat",
    "arena",
)
# Dynabench keys this platform knows about but does not implement.
UNSUPPORTED_TOP_LEVEL_KEYS = {
    "train_file_metric": "DataPerf training-file metrics (train_file_metric) are not supported",
}
UNSUPPORTED_V2_TOP_LEVEL_KEYS = {
    "submit_config": "submit_config (Hugging Face and Dynalab uploads, per-language scoring) is "
    "not supported: models are registered as endpoints",
    "leaderboard": "leaderboard.key (a score breakdown filter) is not supported",
}


@dataclass
class _Form:
    """The fields of the form, read from v1 lists or v2 components."""

    context: list[RawField]
    inputs: list[RawField]
    create: list[RawField]
    validate: list[RawField]
    v2: V2Form | None = None


def validate_document(root: LocatedValue, issues: list[ConfigIssue]) -> TaskConfig | None:
    """Check the document under ``root``; return its TaskConfig unless ``issues`` is not empty."""
    checker = DocumentChecker(issues)
    top = checker.mapping(root, "")
    if top is None:
        return None
    _check_top_level_keys(checker, top)
    schema_version = _read_schema_version(checker, top)
    form = _read_form(checker, top, root)
    outputs = read_outputs(
        checker,
        top,
        root,
        form.context,
        form.inputs,
        derive=form.v2 is not None,
        chat_reply=form.v2 is not None and form.v2.chat_node is not None,
    )
    every_field = form.context + form.inputs + outputs + form.create + form.validate
    check_unique_names(checker, [raw for raw in every_field if raw.section != "output*"])
    check_references(checker, every_field, form.context, form.inputs, outputs)
    check_goal_fields(checker, form.inputs)

    targets = {raw.spec.name for raw in form.inputs} & {raw.spec.name for raw in outputs}
    task_fields = TaskFields(
        form.context, form.inputs, outputs, targets, read_model_wrong_metric(checker, top, targets)
    )
    task_fields.model_wrong_metric = read_model_evaluation_metric(checker, top, task_fields)
    model_maps = read_model_maps(checker, top, task_fields, form.v2.request_keys if form.v2 else {})
    metrics = _read_leaderboard_metrics(checker, top, root, outputs)
    target_fields = [raw for raw in form.inputs if raw.spec.name in targets]
    check_label_slips(checker, target_fields, form.validate)
    texts = _read_texts(checker, top, form.v2)
    pages = {
        "verdicts": read_verdicts(checker, top),
        "external_validator": read_external_validator(checker, top),
        "response_field": read_response_field(checker, top, form.inputs),
    }
    check_validation_context(checker, top)
    chat = _read_chat(checker, top, form.v2)
    arena, chat = read_arena(checker, top, chat)
    check_chat_with_metric(checker, top, chat, task_fields.model_wrong_metric.type)
    if checker.issues:
        return None
    return TaskConfig(
        schema_version=schema_version,
        context=tuple(raw.spec for raw in form.context),
        input=tuple(raw.spec for raw in form.inputs),
        output=tuple(raw.spec for raw in outputs),
        metadata_create=tuple(raw.spec for raw in form.create),
        metadata_validate=tuple(raw.spec for raw in form.validate),
        model_wrong_metric=task_fields.model_wrong_metric,
        **metrics,
        **texts,
        source_format="v2" if form.v2 is not None else "v1",
        model_maps=model_maps,
        **pages,
        warnings=tuple(checker.warnings),
        chat=chat,
        arena=arena,
    )


def _read_form(checker: DocumentChecker, top: LocatedMapping, root: LocatedValue) -> _Form:
    """Read the form's fields from v2 components or from the v1 lists (and ``metadata``)."""
    create, validate = read_metadata(checker, top)
    if is_v2(top):
        v2 = read_v2_form(checker, top, root)
        return _Form(v2.context, v2.inputs, create + v2.create, validate + v2.validate, v2)
    for key in V2_FORM_KEYS:
        if checker.given(top, key) is not None:
            checker.error(
                codes.MIXED_FORMATS,
                key,
                f"{key} belongs to Dynabench's v2 format, which describes the form with goal, "
                "user_input and a context mapping; this config uses v1 fields (input)",
                top.key_lines[key],
            )
    context = read_field_list(checker, top, "context", root, required=False)
    inputs = read_field_list(checker, top, "input", root, required=True)
    return _Form(context, inputs, create, validate)


def _read_chat(checker: DocumentChecker, top: LocatedMapping, v2: V2Form | None):
    """The chat: the ``chat`` section, or a v2 chat context; never both (``config.E085``)."""
    if v2 is None or v2.chat_node is None:
        return read_chat(checker, top)
    if checker.given(top, "chat") is not None:
        checker.error(
            codes.CONFLICTING_KEYS,
            "chat",
            "the chat is declared twice: by the v2 context type and by the chat section; "
            "keep one (the chat section, with a v1 form, has every chat key)",
            top.key_lines["chat"],
        )
    return v2.chat


def _read_leaderboard_metrics(
    checker: DocumentChecker, top: LocatedMapping, root: LocatedValue, outputs: list[RawField]
) -> dict:
    """Read perf (ordered by ``evaluation.main_perf_metric``), delta and aggregation metrics."""
    output_names = {raw.spec.name for raw in outputs}
    perf_metrics, perf_complete = read_perf_metrics(checker, top, root, output_names)
    perf_metrics = order_by_main_metric(checker, top, perf_metrics, perf_complete)
    return {
        "perf_metrics": tuple(perf_metrics),
        "delta_metrics": tuple(read_delta_metrics(checker, top)),
        "aggregation_metric": read_aggregation_metric(checker, top, perf_metrics, perf_complete),
    }


def _read_texts(checker: DocumentChecker, top: LocatedMapping, v2: V2Form | None) -> dict:
    """Read the free texts; a v2 ``goal.text`` is the goal message."""
    goal_message = checker.optional_string(top, "goal_message", "")
    if v2 is not None and v2.goal_text and v2.goal_node is not None:
        if goal_message and goal_message.strip() != v2.goal_text.strip():
            checker.warn_at(
                codes.GOAL_TEXT_IGNORED,
                "goal_message",
                "goal_message differs from goal.text; the page shows goal.text, as Dynabench's "
                "current pages do",
                top.items["goal_message"],
            )
        goal_message = v2.goal_text
    return {
        "goal_message": goal_message,
        "content_warning": checker.optional_string(top, "content_warning", ""),
        "instructions": checker.optional_string(top, "instructions", ""),
        "creation_title": checker.optional_string(top, "creation_samples_title", ""),
    }


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
        elif key in UNSUPPORTED_V2_TOP_LEVEL_KEYS:
            checker.error(
                codes.V2_NOT_SUPPORTED, key, UNSUPPORTED_V2_TOP_LEVEL_KEYS[key], top.key_lines[key]
            )
        elif key not in TOP_LEVEL_KEYS:
            checker.error(
                codes.UNKNOWN_TOP_LEVEL_KEY,
                key,
                f"unknown top-level key {key!r}; allowed: {', '.join(TOP_LEVEL_KEYS)}",
                top.key_lines[key],
            )
