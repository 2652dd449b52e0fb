"""Check the leaderboard metrics: ``perf_metric``, ``delta_metrics`` and ``aggregation_metric``.

Contract: each ``read_*`` function returns what it could read and reports every problem on the
checker. ``read_perf_metrics`` takes one mapping or a list of them, requires a known ``type``
on an output field, keeps any other scalar keys as read-only options, and names each metric by
its type, or ``type_reference`` when the type is listed more than once; it also says whether
the whole section was read without problems. ``read_delta_metrics`` returns the known delta
metric types, each once. ``read_aggregation_metric`` checks the ``dynascore`` default weights:
each names a perf, delta or job metric and lies in [0, ``MAX_WEIGHT``]; unknown names are not
reported when ``perf_metric`` itself had problems. ``count_self_reported`` (a boolean,
default false) says whether self-reported job metrics weigh in by default; while it is
false, a positive default weight for one of them is an error. Pure: no Django, no DB, no HTTP.
"""

from __future__ import annotations

from collections import Counter
from types import MappingProxyType
from typing import Any

from tasks.config import codes
from tasks.config.checker import DocumentChecker, is_finite_number, join_path
from tasks.config.located_yaml import (
    UNREADABLE,
    LocatedMapping,
    LocatedValue,
    describe_value,
    plain_value,
)
from tasks.config.types import DELTA_METRIC_TYPES, JOB_METRICS, AggregationMetric, PerfMetric
from tasks.metrics.jobs import JOB_METRICS as JOB_METRIC_REGISTRY

PERF_METRIC_TYPES = (
    "accuracy",
    "macro_f1",
    "micro_f1",
    "squad_f1",
    "exact_match",
    "bleu",
    "chrf",
    "sp_bleu",
    "vqa_accuracy",
)
UNSUPPORTED_PERF_METRIC_TYPES = {
    "dataperf_f1": "the DataPerf metric dataperf_f1 is not supported",
}
AGGREGATION_METRIC_TYPES = ("dynascore",)
SELF_REPORTED_METRICS = frozenset(
    metric.name for metric in JOB_METRIC_REGISTRY.values() if metric.self_reported
)
MAX_WEIGHT = 5.0


def read_perf_metrics(
    checker: DocumentChecker, top: LocatedMapping, root: LocatedValue, output_names: set[str]
) -> tuple[list[PerfMetric], bool]:
    """Read ``perf_metric``; also say whether every entry was read without problems."""
    node = checker.given(top, "perf_metric")
    if node is None:
        checker.error_at(codes.MISSING_KEY, "perf_metric", "'perf_metric' is required", root)
        return [], False
    entries = _perf_metric_entries(checker, node)
    if entries is None:
        return [], False
    issues_before = len(checker.issues)
    read: list[tuple[str, str, dict[str, Any], str, LocatedValue]] = []
    for path, entry in entries:
        mapping = checker.mapping(entry, path)
        if mapping is None:
            continue
        metric_type = _read_perf_type(checker, mapping, path, entry)
        reference = _read_perf_reference(checker, mapping, path, entry, output_names)
        options = _read_perf_options(checker, mapping, path)
        if metric_type is not None and reference is not None:
            read.append((metric_type, reference, options, path, entry))
    metrics = _named_perf_metrics(checker, read)
    return metrics, len(checker.issues) == issues_before


def _perf_metric_entries(
    checker: DocumentChecker, node: LocatedValue
) -> list[tuple[str, LocatedValue]] | None:
    """Return the (path, node) of each ``perf_metric`` entry: one mapping or a list of them.

    None (after reporting it) when ``perf_metric`` is neither.
    """
    if isinstance(node.value, LocatedMapping):
        return [("perf_metric", node)]
    if isinstance(node.value, list):
        if not node.value:
            checker.error_at(codes.EMPTY_LIST, "perf_metric", "perf_metric must not be empty", node)
        return [(f"perf_metric[{index}]", item) for index, item in enumerate(node.value)]
    checker.wrong_type("perf_metric", "a mapping or a list of mappings", node)
    return None


def _read_perf_type(
    checker: DocumentChecker, mapping: LocatedMapping, path: str, entry: LocatedValue
) -> str | None:
    """Return the entry's metric type, or None when it is missing, unknown or not supported."""
    type_node = checker.required(mapping, "type", path, entry)
    metric_type = checker.string(type_node, join_path(path, "type")) if type_node else None
    if metric_type in UNSUPPORTED_PERF_METRIC_TYPES:
        checker.error_at(
            codes.NOT_SUPPORTED,
            join_path(path, "type"),
            UNSUPPORTED_PERF_METRIC_TYPES[metric_type],
            type_node,
        )
        return None
    if metric_type is not None and metric_type not in PERF_METRIC_TYPES:
        checker.error_at(
            codes.UNKNOWN_PERF_METRIC,
            join_path(path, "type"),
            f"unknown perf_metric type {metric_type[:60]!r}; known: "
            + ", ".join(PERF_METRIC_TYPES),
            type_node,
        )
        return None
    return metric_type


def _read_perf_reference(
    checker: DocumentChecker,
    mapping: LocatedMapping,
    path: str,
    entry: LocatedValue,
    output_names: set[str],
) -> str | None:
    """Return the entry's ``reference_name`` (None when missing); report one that names no
    output field (when the outputs could be read)."""
    reference_node = checker.required(mapping, "reference_name", path, entry)
    reference = (
        checker.string(reference_node, join_path(path, "reference_name"))
        if reference_node
        else None
    )
    if (
        reference is not None
        and reference not in output_names
        and checker.output_readable
        and reference not in checker.written("output")
    ):
        checker.error_at(
            codes.PERF_REFERENCE_NOT_OUTPUT,
            join_path(path, "reference_name"),
            f"{reference[:60]!r} is not an output field; outputs: "
            + (", ".join(sorted(output_names)) or "none"),
            reference_node,
        )
    return reference


def _named_perf_metrics(
    checker: DocumentChecker, read: list[tuple[str, str, dict[str, Any], str, LocatedValue]]
) -> list[PerfMetric]:
    """Return the perf metrics read, each type on a reference once, named by their type
    (``<type>_<reference>`` when a type is used on several references)."""
    type_counts = Counter(metric_type for metric_type, *_ in read)
    metrics: list[PerfMetric] = []
    seen: dict[tuple[str, str], str] = {}
    for metric_type, reference, options, path, entry in read:
        if (metric_type, reference) in seen:
            checker.error_at(
                codes.DUPLICATE_PERF_METRIC,
                path,
                f"{metric_type} on {reference!r} is already listed at "
                f"{seen[(metric_type, reference)]}",
                entry,
            )
            continue
        seen[(metric_type, reference)] = path
        name = metric_type if type_counts[metric_type] == 1 else f"{metric_type}_{reference}"
        metrics.append(PerfMetric(metric_type, reference, name, MappingProxyType(options)))
    return metrics


def _read_perf_options(
    checker: DocumentChecker, mapping: LocatedMapping, path: str
) -> dict[str, Any]:
    """Keep extra perf_metric keys (e.g. ``spm_model``) as read-only scalar options."""
    options: dict[str, Any] = {}
    for key, node in mapping.items.items():
        if key in ("type", "reference_name"):
            continue
        value = node.value
        scalar_list = isinstance(value, list) and all(
            isinstance(item.value, str | int | float | bool) for item in value
        )
        if isinstance(value, str | int | float | bool) or scalar_list:
            options[key] = plain_value(value)
        else:
            checker.wrong_type(
                join_path(path, key), "a string, number, boolean or list of those", node
            )
    return options


def read_delta_metrics(checker: DocumentChecker, top: LocatedMapping) -> list[str]:
    """Return the known delta metric types listed in ``delta_metrics``, each once."""
    node = checker.given(top, "delta_metrics")
    if node is None:
        return []
    items = checker.sequence(node, "delta_metrics")
    if items is None:
        return []
    metrics: list[str] = []
    for index, item in enumerate(items):
        path = f"delta_metrics[{index}]"
        mapping = checker.mapping(item, path)
        if mapping is None:
            continue
        checker.check_keys(mapping, path, frozenset({"type"}), "a delta metric")
        type_node = checker.required(mapping, "type", path, item)
        metric_type = checker.string(type_node, join_path(path, "type")) if type_node else None
        if metric_type is None:
            continue
        if metric_type not in DELTA_METRIC_TYPES:
            checker.error_at(
                codes.UNKNOWN_DELTA_METRIC,
                join_path(path, "type"),
                f"unknown delta metric {metric_type[:60]!r}; known: "
                + ", ".join(DELTA_METRIC_TYPES),
                type_node,
            )
        elif metric_type in metrics:
            checker.error_at(
                codes.DUPLICATE_DELTA_METRIC,
                join_path(path, "type"),
                f"the delta metric {metric_type} is listed twice",
                type_node,
            )
        else:
            metrics.append(metric_type)
    return metrics


def read_aggregation_metric(
    checker: DocumentChecker,
    top: LocatedMapping,
    perf_metrics: list[PerfMetric],
    perf_complete: bool,
) -> AggregationMetric:
    """Check ``aggregation_metric``; return it with the default weights that are valid."""
    node = checker.given(top, "aggregation_metric")
    if node is None:
        return AggregationMetric()
    path = "aggregation_metric"
    mapping = checker.mapping(node, path)
    if mapping is None:
        return AggregationMetric()
    checker.check_keys(
        mapping,
        path,
        frozenset({"type", "default_weights", "count_self_reported"}),
        "aggregation_metric",
    )
    _check_aggregation_type(checker, mapping, path)
    count_self_reported = bool(checker.optional_bool(mapping, "count_self_reported", path))
    weights_node = checker.given(mapping, "default_weights")
    if weights_node is None:
        return AggregationMetric(count_self_reported=count_self_reported)
    weights_path = join_path(path, "default_weights")
    weights_mapping = checker.mapping(weights_node, weights_path)
    if weights_mapping is None:
        return AggregationMetric(count_self_reported=count_self_reported)
    known = [metric.name for metric in perf_metrics]
    known += list(DELTA_METRIC_TYPES) + [name for name, _ in JOB_METRICS]
    weights: dict[str, float] = {}
    for key, value_node in weights_mapping.items.items():
        key_path = join_path(weights_path, key)
        # When perf_metric itself is broken, an unknown name may be a perf metric name:
        # stay silent rather than report a consequence of the first error.
        if key not in known and perf_complete:
            checker.error(
                codes.UNKNOWN_WEIGHT_METRIC,
                key_path,
                f"unknown metric {key[:60]!r}; known: {', '.join(known)}",
                weights_mapping.key_lines[key],
            )
            continue
        weight = _checked_weight(checker, key, value_node, key_path, count_self_reported)
        if weight is not None:
            weights[key] = weight
    return AggregationMetric(
        default_weights=MappingProxyType(weights), count_self_reported=count_self_reported
    )


def _check_aggregation_type(checker: DocumentChecker, mapping: LocatedMapping, path: str) -> None:
    """Report an ``aggregation_metric.type`` other than the known ones (dynascore)."""
    type_node = checker.given(mapping, "type")
    if type_node is not None:
        metric_type = checker.string(type_node, join_path(path, "type"))
        if metric_type is not None and metric_type not in AGGREGATION_METRIC_TYPES:
            checker.error_at(
                codes.UNKNOWN_AGGREGATION_METRIC,
                join_path(path, "type"),
                f"unknown aggregation_metric type {metric_type[:60]!r}; known: dynascore",
                type_node,
            )


def _checked_weight(
    checker: DocumentChecker,
    key: str,
    value_node: Any,
    key_path: str,
    count_self_reported: bool,
) -> float | None:
    """Return the default weight of metric ``key``, or None after reporting why it is not one.

    A weight is a number from 0 to ``MAX_WEIGHT``; a self-reported metric weighs in only
    with ``count_self_reported``.
    """
    if not is_finite_number(value_node.value):
        if value_node.value is not UNREADABLE:
            checker.error_at(
                codes.WEIGHT_OUT_OF_RANGE,
                key_path,
                f"a weight must be a number from 0 to {MAX_WEIGHT:g}, "
                f"got {describe_value(value_node.value)}",
                value_node,
            )
        return None
    weight = float(value_node.value)
    if not 0.0 <= weight <= MAX_WEIGHT:
        checker.error_at(
            codes.WEIGHT_OUT_OF_RANGE,
            key_path,
            f"a weight must be from 0 to {MAX_WEIGHT:g}, got {weight:g}",
            value_node,
        )
        return None
    if weight > 0 and key in SELF_REPORTED_METRICS and not count_self_reported:
        checker.error_at(
            codes.SELF_REPORTED_WEIGHT,
            key_path,
            f"{key} is reported by the model's endpoint itself; it weighs in by default "
            "only with 'count_self_reported: true' in aggregation_metric",
            value_node,
        )
        return None
    return weight
