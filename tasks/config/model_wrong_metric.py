"""Check ``model_wrong_metric``: how the platform decides that a model was fooled.

Contract: ``read_model_wrong_metric`` returns a ``ModelWrongMetric`` (``ask_user`` when the key
is absent or unusable) and reports on the checker an unknown type, keys that the type does not
take, a missing or out-of-range ``threshold`` for ``string_f1``, and a ``reference_name`` or
``reference_names`` entry that is not a target (an input also listed in ``output``). A name
that would be a target but for an error already reported in input or output is not reported
again. Pure: no Django, no DB, no HTTP.
"""

from __future__ import annotations

from tasks.config import codes
from tasks.config.checker import DocumentChecker, join_path
from tasks.config.located_yaml import LocatedMapping, LocatedValue
from tasks.config.types import ModelWrongMetric

MODEL_WRONG_METRIC_KEYS = {
    "exact_match": frozenset({"type", "reference_names"}),
    "string_f1": frozenset({"type", "reference_name", "threshold"}),
    "ask_user": frozenset({"type"}),
}


def read_model_wrong_metric(
    checker: DocumentChecker, top: LocatedMapping, targets: set[str]
) -> ModelWrongMetric:
    """Check ``model_wrong_metric``; return it, or ``ask_user`` when absent or unusable."""
    node = checker.given(top, "model_wrong_metric")
    if node is None:
        return ModelWrongMetric()
    path = "model_wrong_metric"
    mapping = checker.mapping(node, path)
    if mapping is None:
        return ModelWrongMetric()
    metric_type = _read_model_wrong_type(checker, mapping, path, node)
    _check_model_wrong_keys(checker, mapping, path, metric_type)
    if metric_type == "exact_match":
        names = _read_reference_names(checker, mapping, path, node, targets)
        return ModelWrongMetric("exact_match", reference_names=names)
    if metric_type == "string_f1":
        return _read_string_f1(checker, mapping, path, node, targets)
    return ModelWrongMetric()


def _read_model_wrong_type(
    checker: DocumentChecker, mapping: LocatedMapping, path: str, node: LocatedValue
) -> str | None:
    """Return the metric's type, or None when it is missing or unknown (reported)."""
    type_node = checker.required(mapping, "type", path, node)
    metric_type = checker.string(type_node, join_path(path, "type")) if type_node else None
    if metric_type is not None and metric_type not in MODEL_WRONG_METRIC_KEYS:
        checker.error_at(
            codes.UNKNOWN_MODEL_WRONG_METRIC,
            join_path(path, "type"),
            f"unknown model_wrong_metric type {metric_type[:60]!r}; known: "
            + ", ".join(MODEL_WRONG_METRIC_KEYS),
            type_node,
        )
        return None
    return metric_type


def _check_model_wrong_keys(
    checker: DocumentChecker, mapping: LocatedMapping, path: str, metric_type: str | None
) -> None:
    """Report the keys no model_wrong_metric type has, and those ``metric_type`` does not."""
    every_key = frozenset().union(*MODEL_WRONG_METRIC_KEYS.values())
    for key in mapping.items:
        if key not in every_key:
            checker.error(
                codes.UNKNOWN_KEY,
                join_path(path, key),
                f"unknown key {key!r} in model_wrong_metric",
                mapping.key_lines[key],
            )
        elif metric_type is not None and key not in MODEL_WRONG_METRIC_KEYS[metric_type]:
            checker.error(
                codes.OPTION_NOT_FOR_TYPE,
                join_path(path, key),
                f"{key!r} does not apply to model_wrong_metric type {metric_type}",
                mapping.key_lines[key],
            )


def _read_string_f1(
    checker: DocumentChecker,
    mapping: LocatedMapping,
    path: str,
    node: LocatedValue,
    targets: set[str],
) -> ModelWrongMetric:
    """Read a ``string_f1`` metric: one ``reference_name`` and a threshold from 0 to 1."""
    names: tuple[str, ...] = ()
    reference_node = checker.required(mapping, "reference_name", path, node)
    if reference_node is not None:
        name = checker.string(reference_node, join_path(path, "reference_name"))
        if name is not None:
            _check_target(checker, name, join_path(path, "reference_name"), reference_node, targets)
            names = (name,)
    threshold = None
    threshold_node = checker.given(mapping, "threshold")
    if threshold_node is None:
        checker.error_at(
            codes.MISSING_KEY,
            join_path(path, "threshold"),
            "string_f1 needs a threshold between 0 and 1 (the model is fooled when its "
            "F1 is below it)",
            node,
        )
    else:
        threshold = checker.number(threshold_node, join_path(path, "threshold"))
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            checker.error_at(
                codes.THRESHOLD_OUT_OF_RANGE,
                join_path(path, "threshold"),
                f"threshold must be between 0 and 1, got {threshold}",
                threshold_node,
            )
    return ModelWrongMetric("string_f1", reference_names=names, threshold=threshold)


def _read_reference_names(
    checker: DocumentChecker,
    mapping: LocatedMapping,
    path: str,
    owner: LocatedValue,
    targets: set[str],
) -> tuple[str, ...]:
    """Return the ``reference_names`` of ``exact_match``, reporting those not targets."""
    node = checker.required(mapping, "reference_names", path, owner)
    if node is None:
        return ()
    names_path = join_path(path, "reference_names")
    items = checker.sequence(node, names_path)
    if items is None:
        return ()
    if not items:
        checker.error_at(
            codes.EMPTY_LIST, names_path, "reference_names must name at least one target", node
        )
    names = []
    for index, item in enumerate(items):
        name = checker.string(item, f"{names_path}[{index}]")
        if name is not None:
            _check_target(checker, name, f"{names_path}[{index}]", item, targets)
            names.append(name)
    return tuple(names)


def _check_target(
    checker: DocumentChecker, name: str, path: str, node: LocatedValue, targets: set[str]
) -> None:
    """Report ``name`` unless it is a target (or only fails as one because of an earlier error)."""
    would_be_target = name in checker.written("input") and name in checker.written("output")
    if not checker.output_readable or (would_be_target and name not in targets):
        return  # a consequence of an error in input/output, already reported
    if name not in targets:
        checker.error_at(
            codes.REFERENCE_NOT_TARGET,
            path,
            f"{name[:60]!r} is not a target (an input also listed in output); targets: "
            + (", ".join(sorted(targets)) or "none"),
            node,
        )
