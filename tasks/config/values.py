"""Check values (contexts, worker inputs, model outputs, dataset and prediction rows, metadata)
against a parsed ``TaskConfig``.

Contract: every ``check_*`` function is pure, never raises on any JSON-like value, and returns
the list of **all** problems found as ``ConfigIssue`` objects with ``value.E1xx`` codes
(``tasks.config.codes``), ``path`` = the field name (or ``uid``, ``tags``, ``input_id``; ``""``
for the whole value) and ``line=None``: the caller knows the line of an uploaded file and may
add it. An empty list means the value is valid.

Shapes (``docs/task-config.md``): a ``context_string_selection`` value is the selected text,
either a plain string or ``{"text": str, "start": int}`` (``start`` = character offset in the
referenced context string; other keys are ignored). A ``prob`` value is ``{label: p}`` with
exactly the referenced labels, each p in [0, 1], summing to 1 within 1e-4, or one float in
[0, 1] with ``single_prob``. A dataset gold may also be a list of acceptable answers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from tasks.config import codes
from tasks.config.errors import ConfigIssue
from tasks.config.types import SCALE_FIELD_TYPES, FieldSpec, FieldType, TaskConfig

PROBABILITY_SUM_TOLERANCE = 1e-4

# How a value is used decides which checks apply: a worker's form entry must be non-empty and
# within max_length; a model's output only needs the right shape; a gold may list answers.
_FORM = "form"
_OUTPUT = "output"
_GOLD = "gold"
_MODEL_INPUT = "model_input"


def check_context(config: TaskConfig, data: Mapping) -> list[ConfigIssue]:
    """Check one context object: every context field present (unless optional), no others."""
    if not isinstance(data, Mapping):
        return [_not_mapping("context", data)]
    issues = _unknown_keys(data, {spec.name for spec in config.context})
    for spec in config.context:
        # Contexts are owner data, not form entries: no max_length (a passage may be long).
        issues += _check_present_field(spec, data, _MODEL_INPUT, context=data)
    return issues


def check_worker_input(config: TaskConfig, data: Mapping, context: Mapping) -> list[ConfigIssue]:
    """Check what a worker entered: every input (targets included), against the context."""
    if not isinstance(data, Mapping):
        return [_not_mapping("worker input", data)]
    context = context if isinstance(context, Mapping) else {}
    issues = _unknown_keys(data, {spec.name for spec in config.input})
    for spec in config.input:
        issues += _check_present_field(spec, data, _FORM, config=config, context=context)
    return issues


def check_model_output(config: TaskConfig, output: Mapping) -> list[ConfigIssue]:
    """Check a model's answer: every output field present with a valid value.

    Extra keys are allowed: models commonly echo ``uid`` or add their own diagnostics.
    """
    if not isinstance(output, Mapping):
        return [_not_mapping("model output", output)]
    issues: list[ConfigIssue] = []
    for spec in config.output:
        issues += _check_present_field(spec, output, _OUTPUT, config=config, required=True)
    return issues


def check_dataset_row(
    config: TaskConfig, row: Mapping, *, perturbed: bool = False
) -> list[ConfigIssue]:
    """Check one dataset line: ``uid``, optional ``tags``, model inputs and gold fields.

    A perturbed row (fairness/robustness file) must also carry ``input_id``, the ``uid`` of
    the original example.
    """
    if not isinstance(row, Mapping):
        return [_not_mapping("dataset row", row)]
    issues = _check_identifier(row, "uid", codes.VALUE_BAD_UID)
    tags = row.get("tags")
    if tags is not None and (
        not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags)
    ):
        issues.append(ConfigIssue(codes.VALUE_BAD_TAGS, "tags", "tags must be a list of strings"))
    if perturbed:
        issues += _check_identifier(row, "input_id", codes.VALUE_BAD_INPUT_ID)
    for spec in config.model_input_fields:
        issues += _check_present_field(spec, row, _MODEL_INPUT, config=config, context=row)
    for spec in config.gold_fields:
        issues += _check_present_field(spec, row, _GOLD, config=config, required=True)
    return issues


def check_prediction_row(config: TaskConfig, row: Mapping) -> list[ConfigIssue]:
    """Check one line of an uploaded predictions file: ``uid`` plus the model output fields."""
    if not isinstance(row, Mapping):
        return [_not_mapping("prediction row", row)]
    return _check_identifier(row, "uid", codes.VALUE_BAD_UID) + check_model_output(config, row)


def check_metadata(
    fields: Sequence[FieldSpec], data: Mapping, *, context: Mapping | None = None
) -> list[ConfigIssue]:
    """Check metadata answers against ``fields`` (already filtered by their conditions).

    Each field is required unless ``optional: true``; keys not in ``fields`` are errors.
    Given ``context``, a ``context_string_selection`` answer must occur in it.
    """
    if not isinstance(data, Mapping):
        return [_not_mapping("metadata", data)]
    issues = _unknown_keys(data, {spec.name for spec in fields})
    for spec in fields:
        issues += _check_present_field(spec, data, _FORM, context=context or {})
    return issues


# -- helpers --------------------------------------------------------------------------------
def _issue(code: str, path: str, message: str) -> ConfigIssue:
    return ConfigIssue(code, path, message)


def _not_mapping(what: str, value: Any) -> ConfigIssue:
    return _issue(
        codes.VALUE_NOT_MAPPING, "", f"the {what} must be an object, got {_describe(value)}"
    )


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def _unknown_keys(data: Mapping, known: set[str]) -> list[ConfigIssue]:
    return [
        _issue(codes.VALUE_UNKNOWN_KEY, str(key), f"{str(key)[:60]!r} is not a field of this task")
        for key in data
        if key not in known
    ]


def _check_identifier(row: Mapping, key: str, code: str) -> list[ConfigIssue]:
    value = row.get(key)
    valid = (isinstance(value, str) and value.strip()) or (
        isinstance(value, int) and not isinstance(value, bool)
    )
    if valid:
        return []
    return [_issue(code, key, f"{key} must be a non-empty string or an integer")]


def _is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _check_present_field(
    spec: FieldSpec,
    data: Mapping,
    role: str,
    *,
    config: TaskConfig | None = None,
    context: Mapping | None = None,
    required: bool | None = None,
) -> list[ConfigIssue]:
    """Check ``data[spec.name]``: its presence, then its value for ``role``."""
    value = data.get(spec.name)
    # A worker leaving a text box blank has not answered; a model answering "" has.
    missing = value is None if role in (_OUTPUT, _GOLD) else _is_blank(value)
    if role == _FORM and isinstance(value, Mapping) and not missing:
        # A selection object without (or with blank) text is unanswered; a text of the
        # wrong type is reported as such by the shape check below.
        text = value.get("text")
        has_text = spec.type in (FieldType.CONTEXT_STRING_SELECTION, FieldType.TEXT_WITH_SLIDER)
        missing = has_text and (text is None or (isinstance(text, str) and not text.strip()))
    if missing:
        must = (not spec.optional) if required is None else required
        if must:
            return [_issue(codes.VALUE_MISSING, spec.name, f"{spec.display_name} is required")]
        return []
    if role == _GOLD and isinstance(value, list) and spec.type != FieldType.MULTILABEL:
        return _check_gold_alternatives(spec, value, config)
    if role == _GOLD and (
        spec.type == FieldType.MULTILABEL
        and isinstance(value, list)
        and value
        and all(isinstance(item, list) for item in value)
    ):
        return _check_gold_alternatives(spec, value, config)
    return _check_value(spec, value, role, config=config, context=context)


def _check_gold_alternatives(
    spec: FieldSpec, alternatives: list, config: TaskConfig | None
) -> list[ConfigIssue]:
    """Check a gold given as a list of acceptable answers, each like a single gold."""
    if not alternatives:
        return [
            _issue(codes.VALUE_EMPTY_LIST, spec.name, "the list of acceptable answers is empty")
        ]
    issues: list[ConfigIssue] = []
    for alternative in alternatives:
        if isinstance(alternative, list) and spec.type != FieldType.MULTILABEL:
            issues.append(
                _issue(codes.VALUE_WRONG_TYPE, spec.name, "acceptable answers cannot be nested")
            )
            continue
        issues += _check_value(spec, alternative, _GOLD, config=config)
    return issues


def _check_value(
    spec: FieldSpec,
    value: Any,
    role: str,
    *,
    config: TaskConfig | None = None,
    context: Mapping | None = None,
) -> list[ConfigIssue]:
    name = spec.name
    if spec.type == FieldType.STRING:
        if not isinstance(value, str):
            return [_wrong_type(name, "a string", value)]
        if role == _FORM and len(value) > spec.max_length:
            return [
                _issue(
                    codes.VALUE_TOO_LONG,
                    name,
                    f"{spec.display_name} has {len(value):,} characters; "
                    f"the limit is {spec.max_length:,}",
                )
            ]
        return []
    if spec.type == FieldType.MULTICLASS:
        return _check_label(spec, value)
    if spec.type == FieldType.MULTILABEL:
        return _check_label_list(spec, value)
    if spec.type == FieldType.IMAGE:
        return _check_url(spec, value)
    if spec.type == FieldType.CONTEXT_STRING_SELECTION:
        if role == _OUTPUT:
            return [] if isinstance(value, str) else [_wrong_type(name, "a string", value)]
        return _check_selection(spec, value, context if role != _GOLD else None)
    if spec.type == FieldType.PROB:
        return _check_prob(spec, value, config)
    if spec.type in SCALE_FIELD_TYPES:
        return _check_rating(spec, value, role)
    return []


def _check_score(spec: FieldSpec, value: Any, what: str) -> list[ConfigIssue]:
    """Check one rating: an integer from the field's ``min_value`` to its ``max_value``."""
    if isinstance(value, bool) or not isinstance(value, int):
        return [_wrong_type(spec.name, f"{what} (an integer)", value)]
    if not spec.min_value <= value <= spec.max_value:
        return [
            _issue(
                codes.VALUE_OUT_OF_SCALE,
                spec.name,
                f"{what} {value} is not from {spec.min_value} to {spec.max_value}",
            )
        ]
    return []


def _check_rating(spec: FieldSpec, value: Any, role: str) -> list[ConfigIssue]:
    """Check the value of a rating field (slider, label_sliders, label/text with slider)."""
    if spec.type == FieldType.SLIDER:
        return _check_score(spec, value, "the rating")
    if not isinstance(value, Mapping):
        return [_wrong_type(spec.name, "an object", value)]
    if spec.type == FieldType.LABEL_SLIDERS:
        if set(value) != set(spec.labels):
            return [
                _issue(
                    codes.VALUE_PROB_KEYS,
                    spec.name,
                    f"rate every label, and only those: {', '.join(spec.labels)}",
                )
            ]
        return [issue for label in spec.labels for issue in _check_score(spec, value[label], label)]
    if set(value) - {"score", "label", "text"}:
        return [_issue(codes.VALUE_UNKNOWN_KEY, spec.name, "expected only its answer and score")]
    if spec.type == FieldType.LABEL_WITH_SLIDER:
        issues = _check_label(spec, value.get("label"))
    else:
        text = value.get("text")
        if not isinstance(text, str):
            return [_wrong_type(spec.name, "a text", text)]
        too_long = role == _FORM and len(text) > spec.max_length
        issues = (
            [_issue(codes.VALUE_TOO_LONG, spec.name, "the text is too long")] if too_long else []
        )
    return issues + _check_score(spec, value.get("score"), "the score")


def _wrong_type(path: str, expected: str, value: Any) -> ConfigIssue:
    return _issue(codes.VALUE_WRONG_TYPE, path, f"expected {expected}, got {_describe(value)}")


def _check_label(spec: FieldSpec, value: Any) -> list[ConfigIssue]:
    if not isinstance(value, str):
        return [_wrong_type(spec.name, "a label (string)", value)]
    if value not in spec.labels:
        return [
            _issue(
                codes.VALUE_UNKNOWN_LABEL,
                spec.name,
                f"{value[:60]!r} is not one of: {', '.join(spec.labels)}",
            )
        ]
    return []


def _check_label_list(spec: FieldSpec, value: Any) -> list[ConfigIssue]:
    if not isinstance(value, list | tuple):
        return [_wrong_type(spec.name, "a list of labels", value)]
    issues: list[ConfigIssue] = []
    seen: set[str] = set()
    for item in value:
        item_issues = _check_label(spec, item)
        if item_issues:
            issues += item_issues
        elif item in seen:
            issues.append(
                _issue(codes.VALUE_REPEATED_LABEL, spec.name, f"the label {item!r} is repeated")
            )
        else:
            seen.add(item)
    return issues


def _check_url(spec: FieldSpec, value: Any) -> list[ConfigIssue]:
    if not isinstance(value, str):
        return [_wrong_type(spec.name, "an image URL", value)]
    try:
        parts = urlsplit(value)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        return [
            _issue(
                codes.VALUE_NOT_URL, spec.name, f"{value[:80]!r} is not an http(s) URL of an image"
            )
        ]
    return []


def _check_selection(spec: FieldSpec, value: Any, context: Mapping | None) -> list[ConfigIssue]:
    """Check a selection's shape, then that it occurs in the referenced context string."""
    start = None
    if isinstance(value, Mapping):
        text = value.get("text")
        start = value.get("start")
        if not isinstance(text, str):
            return [_wrong_type(spec.name, 'a selection {"text": ..., "start": ...}', text)]
        if start is not None and (
            not isinstance(start, int) or isinstance(start, bool) or start < 0
        ):
            return [_wrong_type(spec.name, "a non-negative integer start", start)]
    elif isinstance(value, str):
        text = value
    else:
        return [_wrong_type(spec.name, "the selected text", value)]
    source = context.get(spec.reference_name) if context and spec.reference_name else None
    # Without the context text (a gold, or a context already reported missing) there is
    # nothing to compare with.
    if not isinstance(source, str):
        return []
    if start is not None:
        if source[start : start + len(text)] != text:
            return [
                _issue(
                    codes.VALUE_SELECTION_NOT_IN_CONTEXT,
                    spec.name,
                    f"{text[:60]!r} is not at offset {start} of {spec.reference_name}",
                )
            ]
        return []
    if text not in source:
        return [
            _issue(
                codes.VALUE_SELECTION_NOT_IN_CONTEXT,
                spec.name,
                f"{text[:60]!r} does not occur in {spec.reference_name}",
            )
        ]
    return []


def _is_probability(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )


def _check_prob(spec: FieldSpec, value: Any, config: TaskConfig | None) -> list[ConfigIssue]:
    name = spec.name
    if spec.single_prob:
        if isinstance(value, int | float) and not isinstance(value, bool):
            if _is_probability(value):
                return []
            return [_issue(codes.VALUE_PROB_RANGE, name, f"{value!r} is not in [0, 1]")]
        return [_wrong_type(name, "a probability (number in [0, 1])", value)]
    if not isinstance(value, Mapping):
        return [_wrong_type(name, "an object {label: probability}", value)]
    referenced = config.field(spec.reference_name) if config and spec.reference_name else None
    issues: list[ConfigIssue] = []
    if referenced is not None and set(value) != set(referenced.labels):
        missing = [label for label in referenced.labels if label not in value]
        extra = [str(key) for key in value if key not in referenced.labels]
        issues.append(
            _issue(
                codes.VALUE_PROB_KEYS,
                name,
                f"keys must be the labels of {referenced.name}"
                + (f"; missing: {', '.join(missing)}" if missing else "")
                + (f"; unknown: {', '.join(extra)[:200]}" if extra else ""),
            )
        )
    numbers = list(value.values())
    if not all(_is_probability(number) for number in numbers):
        issues.append(
            _issue(codes.VALUE_PROB_RANGE, name, "every probability must be a number in [0, 1]")
        )
        return issues
    total = math.fsum(numbers)
    if abs(total - 1.0) > PROBABILITY_SUM_TOLERANCE:
        issues.append(
            _issue(codes.VALUE_PROB_SUM, name, f"probabilities sum to {total:.6g}, not 1")
        )
    return issues
