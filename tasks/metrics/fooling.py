"""Decide live whether a model was fooled, following the config's ``model_wrong_metric``.

* ``exact_match`` over ``reference_names``: fooled when any named output differs from the
  worker's target. Selections (``context_string_selection``) compare by their text and
  ``multilabel`` lists without regard to order; other values compare as they are.
* ``string_f1`` with ``reference_name`` and ``threshold``: fooled when the SQuAD token F1
  of the model's answer against the target (best of its acceptable answers) is below the
  threshold.
* ``ask_user``: None, the worker decides.

None is also returned when a target value is missing, since nothing can be compared; a
missing model output is an answer that differs (the model is fooled).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tasks.metrics.errors import BAD_OPTION, MetricError
from tasks.metrics.qa import string_f1
from tasks.metrics.text import selection_text

if TYPE_CHECKING:
    from tasks.config.types import TaskConfig

SELECTION_FIELD_TYPE = "context_string_selection"


def _comparable(config: TaskConfig, name: str, value: object) -> object:
    spec = config.field(name)
    is_selection = spec is not None and spec.type == SELECTION_FIELD_TYPE
    if is_selection or (isinstance(value, Mapping) and "text" in value):
        return selection_text(value)
    if isinstance(value, list | tuple):
        try:
            return frozenset(value)
        except TypeError:  # unhashable items: keep the order
            return list(value)
    return value


def model_fooled(
    config: TaskConfig, target: Mapping[str, Any], output: Mapping[str, Any]
) -> bool | None:
    """Return True if the model was fooled, False if not, None if the worker must say."""
    rule = config.model_wrong_metric
    if rule.type == "ask_user":
        return None
    if rule.type == "exact_match":
        if not rule.reference_names:
            raise MetricError(
                "exact_match model_wrong_metric names no reference_names", code=BAD_OPTION
            )
        fooled = False
        for name in rule.reference_names:
            if target.get(name) is None:
                return None
            expected = _comparable(config, name, target[name])
            if _comparable(config, name, output.get(name)) != expected:
                fooled = True
        return fooled
    if rule.type == "string_f1":
        # The parser stores string_f1's single ``reference_name`` as reference_names[0].
        name = rule.reference_names[0] if rule.reference_names else None
        if name is None or rule.threshold is None:
            raise MetricError(
                "string_f1 model_wrong_metric needs a reference_name and a threshold",
                code=BAD_OPTION,
            )
        if target.get(name) is None:
            return None
        return string_f1(output.get(name), target[name]) < rule.threshold
    raise MetricError(f"unknown model_wrong_metric type {rule.type!r}", code=BAD_OPTION)
