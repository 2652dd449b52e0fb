"""Check the model's side of a config: ``model_input``, ``model_output``, ``cast_output``,
``response_fields`` and ``model_evaluation_metric`` (Dynabench's v2 keys, read in both formats).

Contract: ``read_model_maps(checker, top, fields, v2_request_keys)`` returns a ``ModelMaps``:

- ``model_input: {request key: field}`` renames a model input field in every request (a field
  not named keeps its name; ``uid`` is always ``uid``). A target named there is never sent
  (a warning, ``config.W003``); a name that is no field, a field given two keys, or two fields
  given one key is ``config.E084``. The keys of a v2 context's ``field_names_for_the_model``
  rename its fields the same way;
- ``model_output: {model_prediction_label: key}``: the key of the model's answer that carries
  the prediction field (the first ``model_wrong_metric`` reference, else the first target,
  else the first output);
- ``cast_output: {label: raw value}``: raw values of the prediction that stand for a label.

``read_model_evaluation_metric`` reads ``model_evaluation_metric`` (``metric_name`` and
``metric_parameters.threshold``) on the prediction target, and reports ``config.E085`` when a
``model_wrong_metric`` is given too and says otherwise. ``read_response_field`` checks
``response_fields.input_by_user``. Pure: no Django, no DB, no HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from tasks.config import codes
from tasks.config.checker import DocumentChecker, join_path
from tasks.config.fields import RawField
from tasks.config.located_yaml import LocatedMapping, LocatedValue
from tasks.config.model_wrong_metric import MODEL_WRONG_METRIC_KEYS
from tasks.config.types import FieldType, ModelMaps, ModelWrongMetric

MODEL_OUTPUT_KEYS = frozenset({"model_prediction_label"})
RESPONSE_FIELD_KEYS = frozenset({"input_by_user"})
MODEL_EVALUATION_METRIC_KEYS = frozenset({"metric_name", "metric_parameters"})
METRIC_PARAMETER_KEYS = {"exact_match": frozenset(), "string_f1": frozenset({"threshold"})}


@dataclass
class TaskFields:
    """The fields the model maps refer to, already read."""

    context: list[RawField]
    inputs: list[RawField]
    outputs: list[RawField]
    targets: set[str]
    model_wrong_metric: ModelWrongMetric

    @property
    def model_input_names(self) -> list[str]:
        """The model input fields in request order: non-target inputs, then contexts."""
        names = [raw.spec.name for raw in self.inputs if raw.spec.name not in self.targets]
        return names + [raw.spec.name for raw in self.context]

    @property
    def prediction_field(self) -> str:
        """The output the model's prediction fills and the verdict compares."""
        if self.model_wrong_metric.reference_names:
            return self.model_wrong_metric.reference_names[0]
        targets = [raw.spec.name for raw in self.inputs if raw.spec.name in self.targets]
        if targets:
            return targets[0]
        return self.outputs[0].spec.name if self.outputs else ""


def read_model_maps(
    checker: DocumentChecker,
    top: LocatedMapping,
    fields: TaskFields,
    v2_request_keys: dict[str, tuple[str, LocatedValue]],
) -> ModelMaps:
    """Return the renames of requests and answers (see the module docstring)."""
    request_keys = _read_request_keys(checker, top, fields, v2_request_keys)
    prediction = fields.prediction_field
    answer_keys: dict[str, str] = {}
    mapping = _given_mapping(checker, top, "model_output")
    if mapping is not None:
        checker.check_keys(mapping, "model_output", MODEL_OUTPUT_KEYS, "model_output")
        key = checker.optional_string(mapping, "model_prediction_label", "model_output")
        if key and prediction and key != prediction:
            answer_keys[prediction] = key
    cast = _read_cast_output(checker, top, fields, prediction)
    return ModelMaps(
        request_keys=MappingProxyType(request_keys),
        answer_keys=MappingProxyType(answer_keys),
        prediction_field=prediction,
        cast=MappingProxyType(cast),
    )


def _given_mapping(checker: DocumentChecker, top: LocatedMapping, key: str):
    node = checker.given(top, key)
    return checker.mapping(node, key) if node is not None else None


def _read_request_keys(
    checker: DocumentChecker,
    top: LocatedMapping,
    fields: TaskFields,
    v2_request_keys: dict[str, tuple[str, LocatedValue]],
) -> dict[str, str]:
    """Return ``{field: request key}`` for the renamed model input fields."""
    sent = fields.model_input_names
    chosen: dict[str, tuple[str, str, LocatedValue]] = {}
    for name, (key, node) in v2_request_keys.items():
        if name in sent:
            chosen[name] = (key, f"context.field_names_for_the_model.{name}", node)
    mapping = _given_mapping(checker, top, "model_input")
    for key, node in (mapping.items if mapping is not None else {}).items():
        path = join_path("model_input", key)
        name = checker.string(node, path)
        if name is None:
            continue
        if name in fields.targets:
            checker.warn_at(
                codes.TARGET_NOT_SENT,
                path,
                f"{name!r} is the worker's target: it is never sent to a model (ignored here)",
                node,
            )
        elif name not in sent:
            checker.error_at(
                codes.BAD_MODEL_MAP,
                path,
                f"{name[:60]!r} is not a field sent to the model; those are: "
                + (", ".join(sent) or "none"),
                node,
            )
        elif name in chosen and chosen[name][0] != key:
            checker.error_at(
                codes.BAD_MODEL_MAP,
                path,
                f"{name!r} is already sent as {chosen[name][0]!r} ({chosen[name][1]})",
                node,
            )
        else:
            chosen[name] = (key, path, node)
    return _check_request_collisions(checker, sent, chosen)


def _check_request_collisions(
    checker: DocumentChecker, sent: list[str], chosen: dict[str, tuple[str, str, LocatedValue]]
) -> dict[str, str]:
    """Report two fields sent under one key (or as ``uid``); return the usable renames."""
    owner_of = {"uid": "uid"}
    for name in sent:
        if name not in chosen:
            owner_of.setdefault(name, name)
    renames: dict[str, str] = {}
    for name, (key, path, node) in chosen.items():
        owner = owner_of.get(key)
        if owner is not None and owner != name:
            checker.error_at(
                codes.BAD_MODEL_MAP,
                path,
                f"the request key {key!r} would carry both {owner!r} and {name!r}",
                node,
            )
            continue
        owner_of[key] = name
        if key != name:
            renames[name] = key
    return renames


def _read_cast_output(
    checker: DocumentChecker, top: LocatedMapping, fields: TaskFields, prediction: str
) -> dict[str, str]:
    """Return ``{str(raw value): label}`` from ``cast_output: {label: raw value}``."""
    mapping = _given_mapping(checker, top, "cast_output")
    if mapping is None:
        return {}
    output = next((raw.spec for raw in fields.outputs if raw.spec.name == prediction), None)
    labels = output.labels if output is not None and output.type == FieldType.MULTICLASS else ()
    cast: dict[str, str] = {}
    for label, node in mapping.items.items():
        path = join_path("cast_output", label)
        if labels and label not in labels:
            checker.error(
                codes.BAD_MODEL_MAP,
                path,
                f"{label[:60]!r} is not a label of {prediction}: " + ", ".join(labels),
                mapping.key_lines[label],
            )
            continue
        if not isinstance(node.value, str | int | float) or isinstance(node.value, bool):
            checker.wrong_type(path, "a string or a number", node)
            continue
        raw = str(node.value)
        if raw in cast:
            checker.error_at(
                codes.BAD_MODEL_MAP, path, f"{raw!r} already stands for {cast[raw]!r}", node
            )
            continue
        cast[raw] = label
    return cast


def read_response_field(
    checker: DocumentChecker, top: LocatedMapping, inputs: list[RawField]
) -> str:
    """Return ``response_fields.input_by_user`` when it names an input."""
    mapping = _given_mapping(checker, top, "response_fields")
    if mapping is None:
        return ""
    checker.check_keys(mapping, "response_fields", RESPONSE_FIELD_KEYS, "response_fields")
    node = checker.given(mapping, "input_by_user")
    name = checker.string(node, "response_fields.input_by_user") if node is not None else None
    names = [raw.spec.name for raw in inputs]
    if name is not None and name not in names and name not in checker.written("input"):
        checker.error_at(
            codes.DANGLING_REFERENCE,
            "response_fields.input_by_user",
            f"{name[:60]!r} is not an input; inputs: " + (", ".join(names) or "none"),
            node,
        )
        return ""
    return name or ""


def read_model_evaluation_metric(
    checker: DocumentChecker,
    top: LocatedMapping,
    fields: TaskFields,
) -> ModelWrongMetric:
    """Return the model-wrong metric, merging ``model_evaluation_metric`` into the v1 one."""
    v1 = fields.model_wrong_metric
    node = checker.given(top, "model_evaluation_metric")
    mapping = checker.mapping(node, "model_evaluation_metric") if node is not None else None
    if mapping is None:
        return v1
    path = "model_evaluation_metric"
    checker.check_keys(mapping, path, MODEL_EVALUATION_METRIC_KEYS, path)
    name_node = checker.required(mapping, "metric_name", path, node)
    name = checker.string(name_node, join_path(path, "metric_name")) if name_node else None
    if name is None:
        return v1
    if name not in MODEL_WRONG_METRIC_KEYS:
        checker.error_at(
            codes.UNKNOWN_MODEL_WRONG_METRIC,
            join_path(path, "metric_name"),
            f"unknown metric_name {name[:60]!r}; known: " + ", ".join(MODEL_WRONG_METRIC_KEYS),
            name_node,
        )
        return v1
    threshold = _read_threshold(checker, mapping, path, name, node)
    metric = _v2_metric(checker, name, threshold, fields, node)
    if metric is None:
        return v1
    if checker.given(top, "model_wrong_metric") is not None and metric != v1:
        checker.error_at(
            codes.CONFLICTING_KEYS,
            path,
            f"model_evaluation_metric ({_describe(metric)}) disagrees with model_wrong_metric "
            f"({_describe(v1)}); keep one, or make them say the same",
            node,
        )
        return v1
    return metric


def _read_threshold(
    checker: DocumentChecker, mapping: LocatedMapping, path: str, name: str, owner: LocatedValue
) -> float | None:
    parameters_node = checker.given(mapping, "metric_parameters")
    parameters_path = join_path(path, "metric_parameters")
    parameters = (
        checker.mapping(parameters_node, parameters_path) if parameters_node is not None else None
    )
    if parameters is not None:
        allowed = METRIC_PARAMETER_KEYS.get(name, frozenset())
        checker.check_keys(parameters, parameters_path, allowed, f"{name} metric_parameters")
    if name != "string_f1":
        return None
    threshold_node = checker.given(parameters, "threshold") if parameters is not None else None
    if threshold_node is None:
        checker.error_at(
            codes.MISSING_KEY,
            join_path(parameters_path, "threshold"),
            "string_f1 needs metric_parameters.threshold between 0 and 1",
            owner,
        )
        return None
    threshold = checker.number(threshold_node, join_path(parameters_path, "threshold"))
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        checker.error_at(
            codes.THRESHOLD_OUT_OF_RANGE,
            join_path(parameters_path, "threshold"),
            f"threshold must be between 0 and 1, got {threshold}",
            threshold_node,
        )
        return None
    return threshold


def _v2_metric(
    checker: DocumentChecker,
    name: str,
    threshold: float | None,
    fields: TaskFields,
    node: LocatedValue,
) -> ModelWrongMetric | None:
    """Build the metric on the prediction target; None when it cannot be."""
    if name == "ask_user":
        return ModelWrongMetric()
    target = fields.prediction_field
    if target not in fields.targets:
        if checker.output_readable:
            checker.error_at(
                codes.REFERENCE_NOT_TARGET,
                "model_evaluation_metric",
                f"{name} compares the model's answer with the worker's target, and this task "
                "has none (a goal with options, a selection, or an input also in output)",
                node,
            )
        return None
    if name == "string_f1" and threshold is None:
        return None
    return ModelWrongMetric(name, reference_names=(target,), threshold=threshold)


def _describe(metric: ModelWrongMetric) -> str:
    parts = [metric.type, *metric.reference_names]
    if metric.threshold is not None:
        parts.append(f"threshold {metric.threshold:g}")
    return " ".join(parts)
