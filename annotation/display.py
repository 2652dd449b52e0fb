"""How examples read on the pages: model answers, inputs, contexts, probabilities, the goal.

Pure helpers of the templates' context: a config and stored values in, text or small dicts
out; nothing here touches the database.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.utils.html import format_html

from tasks.config.types import FieldSpec, FieldType, TaskConfig


def value_text(spec: FieldSpec | None, value: Any) -> str:
    """Return a short plain text for a config value (a selection shows its text)."""
    if value is None:
        return ""
    if spec is not None and spec.type == FieldType.CONTEXT_STRING_SELECTION:
        if isinstance(value, Mapping):
            return str(value.get("text", ""))
        return str(value)
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False)[:2000]
    return str(value)


def prob_bars(spec: FieldSpec, value: Any, config: TaskConfig) -> list[dict[str, Any]]:
    """Return ``[{"label", "percent"}]`` for a prob output (one bar for ``single_prob``)."""
    if spec.single_prob:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return [{"label": spec.display_name, "percent": round(float(value) * 100, 1)}]
        return []
    if not isinstance(value, Mapping):
        return []
    referenced = config.field(spec.reference_name) if spec.reference_name else None
    order = list(referenced.labels) if referenced else list(value)
    bars = []
    for label in order:
        probability = value.get(label)
        if isinstance(probability, int | float) and not isinstance(probability, bool):
            bars.append({"label": label, "percent": round(float(probability) * 100, 1)})
    return bars


def output_items(config: TaskConfig, output: Mapping | None) -> list[dict[str, Any]]:
    """Describe a model output for the templates: text values and probability bars."""
    if not isinstance(output, Mapping):
        return []
    items = []
    for spec in config.output:
        value = output.get(spec.name)
        if spec.type == FieldType.PROB:
            items.append({"spec": spec, "kind": "prob", "bars": prob_bars(spec, value, config)})
        else:
            items.append({"spec": spec, "kind": "text", "text": value_text(spec, value)})
    return items


def input_items(config: TaskConfig, data: Mapping | None) -> list[dict[str, Any]]:
    """Describe what a worker entered (targets included) for the templates."""
    data = data if isinstance(data, Mapping) else {}
    items = []
    for spec in config.input:
        if spec.name in data:
            kind = "image" if spec.type == FieldType.IMAGE else "text"
            items.append({"spec": spec, "kind": kind, "text": value_text(spec, data[spec.name])})
    return items


def context_items(config: TaskConfig, data: Mapping | None) -> list[dict[str, Any]]:
    """Describe a context for the templates: text (selectable when referenced) or an image."""
    data = data if isinstance(data, Mapping) else {}
    referenced = {
        spec.reference_name
        for spec in (*config.input, *config.metadata_validate)
        if spec.type == FieldType.CONTEXT_STRING_SELECTION
    }
    items = []
    for spec in config.context:
        value = data.get(spec.name)
        if spec.type == FieldType.IMAGE:
            kind = "image"
        elif spec.type == FieldType.PROB:
            continue
        else:
            kind = "text"
        items.append(
            {
                "spec": spec,
                "kind": kind,
                "text": value_text(spec, value),
                "selectable": spec.name in referenced,
            }
        )
    return items


def goal_text(config: TaskConfig, goal_label: str) -> str:
    """Return the goal banner's second line (HTML, the label escaped).

    The quotes are entities: one character outside Latin-1 makes Python hold the whole page
    as two bytes a character and encode it character by character, where an ASCII page is
    joined and encoded by copying.
    """
    if not goal_label:
        return ""
    return format_html(
        "Your goal: write an example whose true label is "
        '&ldquo;<span data-goal-label="{}">{}</span>&rdquo; and fool the model.',
        goal_label,
        goal_label,
    )


def preview_context(config: TaskConfig) -> dict[str, Any]:
    """Return placeholder context data for the admin preview (no uploaded context needed)."""
    data: dict[str, Any] = {}
    for spec in config.context:
        if spec.type == FieldType.IMAGE:
            data[spec.name] = "https://example.org/image.jpg"
        elif spec.type == FieldType.MULTICLASS and spec.labels:
            data[spec.name] = spec.labels[0]
        else:
            data[spec.name] = f"Example {spec.display_name.lower()} shown to the worker."
    return data
