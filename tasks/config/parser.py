"""Parse a task-config YAML document into a validated, immutable ``TaskConfig``.

Contract: ``parse_task_config(text)`` returns a ``TaskConfig`` or raises ``TaskConfigError``
carrying **every** problem found, each with a stable code (``tasks.config.codes``), a path
such as ``input[1].labels``, and the 1-based line (and column) in the YAML source. For any
``str`` it raises nothing else. Pure: no Django, no DB, no HTTP.

The YAML is read as a node tree (``yaml.compose`` with the safe loader) rather than loaded
straight into Python objects, so that every value keeps its line, duplicate keys are caught
(``yaml.safe_load`` silently keeps the last one), and alias expansion is bounded.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from tasks.config import codes
from tasks.config.checker import DocumentChecker, is_finite_number, join_path
from tasks.config.errors import ConfigIssue, TaskConfigError
from tasks.config.located_yaml import (
    UNREADABLE,
    LocatedMapping,
    LocatedValue,
    describe_value,
    plain_value,
    read_located_yaml,
)
from tasks.config.types import (
    DELTA_METRIC_TYPES,
    JOB_METRICS,
    AggregationMetric,
    FieldSpec,
    FieldType,
    ModelWrongMetric,
    PerfMetric,
    TaskConfig,
    Verdict,
)

SUPPORTED_SCHEMA_VERSION = 1
NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

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
)
# Dynabench keys this platform knows about but does not implement.
UNSUPPORTED_TOP_LEVEL_KEYS = {
    "train_file_metric": "DataPerf training-file metrics (train_file_metric) are not supported",
}

COMMON_FIELD_KEYS = frozenset(
    {"name", "type", "display_name", "placeholder", "optional", "help_text"}
)
TYPE_OPTION_KEYS: dict[FieldType, frozenset[str]] = {
    FieldType.STRING: frozenset({"max_length", "multiline"}),
    FieldType.MULTICLASS: frozenset({"labels", "as_goal_message"}),
    FieldType.MULTILABEL: frozenset({"labels"}),
    FieldType.CONTEXT_STRING_SELECTION: frozenset({"reference_name"}),
    FieldType.IMAGE: frozenset(),
    FieldType.PROB: frozenset({"reference_name", "single_prob"}),
}
# Options that only make sense in one section of the config.
SECTION_ONLY_KEYS = {
    "model_wrong_condition": "metadata.create",
    "validated_label_condition": "metadata.validate",
    "as_goal_message": "input",
}
ALL_FIELD_KEYS = COMMON_FIELD_KEYS.union(*TYPE_OPTION_KEYS.values(), SECTION_ONLY_KEYS)
# Field types that make no sense in a section: a prob is only ever produced by the model, and
# a selection needs a context to select from.
TYPES_NOT_IN_SECTION = {
    FieldType.PROB: ("context", "input", "metadata.create", "metadata.validate"),
    FieldType.CONTEXT_STRING_SELECTION: ("context",),
}

MODEL_WRONG_METRIC_KEYS = {
    "exact_match": frozenset({"type", "reference_names"}),
    "string_f1": frozenset({"type", "reference_name", "threshold"}),
    "ask_user": frozenset({"type"}),
}
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
MAX_WEIGHT = 5.0


# -- the validator ------------------------------------------------------------------------
@dataclass
class _RawField:
    """A field definition under construction, with where it came from."""

    spec: FieldSpec
    section: str
    path: str
    node: LocatedValue
    mapping: LocatedMapping


class _Validator(DocumentChecker):
    """Check a located document against the schema and build the TaskConfig."""

    # -- the document ---------------------------------------------------------------------
    def document(self, root: LocatedValue) -> TaskConfig | None:
        top = self.mapping(root, "")
        if top is None:
            return None
        for key in top.items:
            if key in UNSUPPORTED_TOP_LEVEL_KEYS:
                self.error(
                    codes.NOT_SUPPORTED, key, UNSUPPORTED_TOP_LEVEL_KEYS[key], top.key_lines[key]
                )
            elif key not in TOP_LEVEL_KEYS:
                self.error(
                    codes.UNKNOWN_TOP_LEVEL_KEY,
                    key,
                    f"unknown top-level key {key!r}; allowed: {', '.join(TOP_LEVEL_KEYS)}",
                    top.key_lines[key],
                )

        schema_version = self.schema_version(top)
        context = self.field_list(top, "context", root, required=False)
        inputs = self.field_list(top, "input", root, required=True)
        create, validate = self.metadata(top)
        outputs = self.outputs(top, root, context, inputs)
        every_field = context + inputs + outputs + create + validate
        self.check_unique_names([raw for raw in every_field if raw.section != "output*"])
        self.check_references(every_field, context, inputs, outputs)
        self.check_goal_fields(inputs)

        targets = {raw.spec.name for raw in inputs} & {raw.spec.name for raw in outputs}
        model_wrong_metric = self.model_wrong_metric(top, targets)
        output_names = {raw.spec.name for raw in outputs}
        perf_metrics, perf_complete = self.perf_metrics(top, root, output_names)
        delta_metrics = self.delta_metrics(top)
        aggregation = self.aggregation_metric(top, perf_metrics, perf_complete)
        goal_message = self.optional_string(top, "goal_message", "")
        content_warning = self.optional_string(top, "content_warning", "")
        instructions = self.optional_string(top, "instructions", "")

        if self.issues:
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
        )

    def schema_version(self, top: LocatedMapping) -> int:
        node = self.given(top, "schema_version")
        if node is None:
            return SUPPORTED_SCHEMA_VERSION
        version = self.integer(node, "schema_version")
        if version is not None and version != SUPPORTED_SCHEMA_VERSION:
            self.error_at(
                codes.UNSUPPORTED_SCHEMA_VERSION,
                "schema_version",
                f"schema_version {version} is not supported; this platform reads version "
                f"{SUPPORTED_SCHEMA_VERSION}",
                node,
            )
        return SUPPORTED_SCHEMA_VERSION

    # -- fields ---------------------------------------------------------------------------
    def field_list(
        self,
        container: LocatedMapping,
        key: str,
        owner: LocatedValue,
        *,
        required: bool,
        section: str | None = None,
        path: str | None = None,
    ) -> list[_RawField]:
        section = section or key
        path = path or key
        node = self.given(container, key)
        if node is None:
            if required:
                self.error_at(codes.MISSING_KEY, path, f"{key!r} is required", owner)
            return []
        items = self.sequence(node, path)
        if items is None:
            return []
        if required and not items:
            self.error_at(codes.EMPTY_LIST, path, f"{key!r} must list at least one field", node)
        fields = []
        for index, item in enumerate(items):
            raw = self.field(item, f"{path}[{index}]", section)
            if raw is not None:
                fields.append(raw)
        return fields

    def field(self, node: LocatedValue, path: str, section: str) -> _RawField | None:
        """Check one full field definition; return it unless its name or type is unusable."""
        mapping = self.mapping(node, path)
        if mapping is None:
            return None
        name = self.field_name(mapping, path, node, section)
        type_node = self.required(mapping, "type", path, node)
        field_type: FieldType | None = None
        if type_node is not None:
            type_text = self.string(type_node, join_path(path, "type"))
            if type_text is not None:
                try:
                    field_type = FieldType(type_text)
                except ValueError:
                    self.error_at(
                        codes.UNKNOWN_FIELD_TYPE,
                        join_path(path, "type"),
                        f"unknown field type {type_text!r}; known: "
                        + ", ".join(member.value for member in FieldType),
                        type_node,
                    )
        if field_type is not None and section in TYPES_NOT_IN_SECTION.get(field_type, ()):
            self.error_at(
                codes.TYPE_NOT_IN_SECTION,
                join_path(path, "type"),
                f"a {field_type.value} field cannot be used in {section}",
                type_node,
            )
        self.check_field_keys(mapping, path, section, field_type)

        options: dict[str, Any] = {
            "display_name": self.optional_string(mapping, "display_name", path) or name or "",
            "placeholder": self.optional_string(mapping, "placeholder", path),
            "help_text": self.optional_string(mapping, "help_text", path),
        }
        for key in ("optional", "multiline", "as_goal_message", "single_prob"):
            value = self.optional_bool(mapping, key, path)
            if value is not None:
                options[key] = value
        condition = self.optional_bool(mapping, "model_wrong_condition", path)
        if condition is not None:
            options["model_wrong_condition"] = condition
        verdict = self.verdict(mapping, path)
        if verdict is not None:
            options["validated_label_condition"] = verdict
        max_length = self.max_length(mapping, path)
        if max_length is not None:
            options["max_length"] = max_length
        reference_node = self.given(mapping, "reference_name")
        if reference_node is not None:
            options["reference_name"] = self.string(
                reference_node, join_path(path, "reference_name")
            )
        if field_type in (FieldType.MULTICLASS, FieldType.MULTILABEL):
            options["labels"] = self.labels(mapping, path, node)
        elif self.given(mapping, "labels") is not None:
            # Still read them so that their own problems are reported too.
            self.labels(mapping, path, node)
        if field_type == FieldType.CONTEXT_STRING_SELECTION and reference_node is None:
            self.required(mapping, "reference_name", path, node)
        if (
            field_type == FieldType.PROB
            and reference_node is None
            and not options.get("single_prob")
        ):
            self.error_at(
                codes.MISSING_KEY,
                join_path(path, "reference_name"),
                "a prob field needs reference_name (a multiclass field), or single_prob: true",
                node,
            )
        if name is None or field_type is None:
            return None
        spec = FieldSpec(name=name, type=field_type, line=node.line, **options)
        return _RawField(spec, section, path, node, mapping)

    def field_name(
        self, mapping: LocatedMapping, path: str, owner: LocatedValue, section: str
    ) -> str | None:
        node = self.required(mapping, "name", path, owner)
        if node is None:
            return None
        name = self.string(node, join_path(path, "name"))
        if name is None:
            return None
        self.written_names.setdefault(section.rstrip("*"), set()).add(name)
        if not NAME_PATTERN.fullmatch(name):
            self.error_at(
                codes.BAD_NAME,
                join_path(path, "name"),
                f"the name {name[:60]!r} must match {NAME_PATTERN.pattern} "
                "(letters, digits and underscores, not starting with a digit)",
                node,
            )
            return None
        return name

    def check_field_keys(
        self, mapping: LocatedMapping, path: str, section: str, field_type: FieldType | None
    ) -> None:
        for key in mapping.items:
            line = mapping.key_lines[key]
            key_path = join_path(path, key)
            if key not in ALL_FIELD_KEYS:
                self.error(
                    codes.UNKNOWN_KEY,
                    key_path,
                    f"unknown key {key!r} in a field; allowed: {', '.join(sorted(ALL_FIELD_KEYS))}",
                    line,
                )
            elif key in SECTION_ONLY_KEYS and section != SECTION_ONLY_KEYS[key]:
                self.error(
                    codes.OPTION_NOT_IN_SECTION,
                    key_path,
                    f"{key!r} is only allowed in {SECTION_ONLY_KEYS[key]}, not in {section}",
                    line,
                )
            elif (
                field_type is not None
                and key not in COMMON_FIELD_KEYS
                and key not in TYPE_OPTION_KEYS[field_type]
                and key not in ("model_wrong_condition", "validated_label_condition")
            ):
                self.error(
                    codes.OPTION_NOT_FOR_TYPE,
                    key_path,
                    f"{key!r} does not apply to a {field_type.value} field",
                    line,
                )

    def verdict(self, mapping: LocatedMapping, path: str) -> Verdict | None:
        node = self.given(mapping, "validated_label_condition")
        if node is None:
            return None
        text = self.string(node, join_path(path, "validated_label_condition"))
        if text is None:
            return None
        try:
            return Verdict(text)
        except ValueError:
            self.error_at(
                codes.NOT_ONE_OF,
                join_path(path, "validated_label_condition"),
                f"{text[:60]!r} is not one of: " + ", ".join(member.value for member in Verdict),
                node,
            )
            return None

    def max_length(self, mapping: LocatedMapping, path: str) -> int | None:
        node = self.given(mapping, "max_length")
        if node is None:
            return None
        value = self.integer(node, join_path(path, "max_length"))
        if value is not None and value <= 0:
            self.error_at(
                codes.BAD_MAX_LENGTH,
                join_path(path, "max_length"),
                f"max_length must be a positive integer, got {value}",
                node,
            )
            return None
        return value

    def labels(self, mapping: LocatedMapping, path: str, owner: LocatedValue) -> tuple[str, ...]:
        node = self.required(mapping, "labels", path, owner)
        if node is None:
            return ()
        labels_path = join_path(path, "labels")
        items = self.sequence(node, labels_path)
        if items is None:
            return ()
        if not items:
            self.error_at(codes.EMPTY_LIST, labels_path, "labels must not be empty", node)
        labels: list[str] = []
        for index, item in enumerate(items):
            item_path = f"{labels_path}[{index}]"
            if not isinstance(item.value, str):
                if item.value is not UNREADABLE:
                    self.error_at(
                        codes.WRONG_TYPE,
                        item_path,
                        f"a label must be a string, got {describe_value(item.value)} "
                        "(quote values such as 'yes', 'no' or numbers)",
                        item,
                    )
                continue
            if item.value in labels:
                self.error_at(
                    codes.DUPLICATE_LABEL, item_path, f"the label {item.value!r} is repeated", item
                )
                continue
            labels.append(item.value)
        return tuple(labels)

    def metadata(self, top: LocatedMapping) -> tuple[list[_RawField], list[_RawField]]:
        node = self.given(top, "metadata")
        if node is None:
            return [], []
        mapping = self.mapping(node, "metadata")
        if mapping is None:
            return [], []
        self.check_keys(mapping, "metadata", frozenset({"create", "validate"}), "metadata")
        create = self.field_list(
            mapping,
            "create",
            node,
            required=False,
            section="metadata.create",
            path="metadata.create",
        )
        validate = self.field_list(
            mapping,
            "validate",
            node,
            required=False,
            section="metadata.validate",
            path="metadata.validate",
        )
        return create, validate

    def outputs(
        self,
        top: LocatedMapping,
        root: LocatedValue,
        context: list[_RawField],
        inputs: list[_RawField],
    ) -> list[_RawField]:
        """Read ``output``; an entry without ``type`` takes an input/context definition."""
        node = self.given(top, "output")
        if node is None:
            self.output_readable = False
            self.error_at(codes.MISSING_KEY, "output", "'output' is required", root)
            return []
        items = self.sequence(node, "output")
        if items is None or not items:
            self.output_readable = False
        if items is None:
            return []
        if not items:
            self.error_at(codes.EMPTY_LIST, "output", "'output' must list at least one field", node)
        definitions = {raw.spec.name: raw for raw in context + inputs}
        resolved: list[_RawField] = []
        seen: dict[str, int] = {}
        for index, item in enumerate(items):
            path = f"output[{index}]"
            mapping = self.mapping(item, path)
            if mapping is None:
                continue
            if "type" in mapping.items:
                raw = self.field(item, path, "output")
                if raw is not None:
                    resolved.append(raw)
                continue
            name = self.field_name(mapping, path, item, "output")
            if name is None:
                continue
            definition = definitions.get(name)
            if definition is None and name in self.written("input", "context"):
                continue  # the definition itself is broken and already reported
            if definition is None:
                self.error_at(
                    codes.UNDEFINED_ABBREVIATED_OUTPUT,
                    path,
                    f"the output {name!r} has no type and no input or context field has that "
                    "name; give it a full definition",
                    item,
                )
                continue
            for key in mapping.items:
                if key != "name":
                    self.error(
                        codes.ABBREVIATED_OUTPUT_EXTRA_KEYS,
                        join_path(path, key),
                        f"{{name: {name}}} takes its definition from {definition.path}; "
                        f"remove {key!r} (or give a full definition under a new name)",
                        mapping.key_lines[key],
                    )
            if name in seen:
                self.error_at(
                    codes.DUPLICATE_NAME,
                    join_path(path, "name"),
                    f"the output {name!r} is listed twice (first at output[{seen[name]}])",
                    item,
                )
                continue
            seen[name] = index
            spec = replace(definition.spec, line=item.line)
            # The "output*" section marks a resolved copy: it is not a second definition.
            resolved.append(_RawField(spec, "output*", path, item, mapping))
        return resolved

    def check_unique_names(self, fields: list[_RawField]) -> None:
        first: dict[str, _RawField] = {}
        for raw in fields:
            name = raw.spec.name
            if name in first:
                hint = ""
                if raw.section == "output" and first[name].section in ("input", "context"):
                    hint = f"; write just {{name: {name}}} to reuse the {first[name].section} field"
                self.error_at(
                    codes.DUPLICATE_NAME,
                    join_path(raw.path, "name"),
                    f"the name {name!r} is already used at {first[name].path}{hint}",
                    raw.node,
                )
            else:
                first[name] = raw

    def check_references(
        self,
        every_field: list[_RawField],
        context: list[_RawField],
        inputs: list[_RawField],
        outputs: list[_RawField],
    ) -> None:
        context_by_name = {raw.spec.name: raw.spec for raw in context}
        known = {raw.spec.name: raw.spec for raw in every_field}
        labelled: dict[str, FieldSpec] = {}
        for raw in inputs + context + outputs:
            # The first definition wins: a redefinition is reported as a duplicate name.
            labelled.setdefault(raw.spec.name, raw.spec)
        broken = self.written(*self.written_names) - set(known)
        for raw in every_field:
            spec = raw.spec
            if raw.section == "output*" or spec.reference_name is None:
                continue
            if spec.reference_name in broken:
                continue  # the referenced field is broken and already reported
            if raw.section in TYPES_NOT_IN_SECTION.get(spec.type, ()):
                continue  # the misplaced type is the problem, already reported
            path = join_path(raw.path, "reference_name")
            reference_node = raw.mapping.items["reference_name"]
            target = spec.reference_name
            if spec.type == FieldType.CONTEXT_STRING_SELECTION:
                referenced = context_by_name.get(target)
                if referenced is None and target not in known:
                    self.error_at(
                        codes.DANGLING_REFERENCE,
                        path,
                        f"no context field is called {target!r}",
                        reference_node,
                    )
                elif referenced is None or referenced.type != FieldType.STRING:
                    self.error_at(
                        codes.WRONG_REFERENCE_KIND,
                        path,
                        f"{target!r} must be a string field in context",
                        reference_node,
                    )
            elif spec.type == FieldType.PROB:
                referenced = labelled.get(target)
                if referenced is None and target not in known:
                    self.error_at(
                        codes.DANGLING_REFERENCE,
                        path,
                        f"no field is called {target!r}",
                        reference_node,
                    )
                elif referenced is None or referenced.type != FieldType.MULTICLASS:
                    self.error_at(
                        codes.WRONG_REFERENCE_KIND,
                        path,
                        f"a prob field must reference a multiclass field (its labels are the "
                        f"keys); {target!r} is not one",
                        reference_node,
                    )

    def check_goal_fields(self, inputs: list[_RawField]) -> None:
        goals = [raw for raw in inputs if raw.spec.as_goal_message]
        for raw in goals[1:]:
            self.error_at(
                codes.SEVERAL_GOAL_FIELDS,
                join_path(raw.path, "as_goal_message"),
                f"only one input may have as_goal_message: true (already {goals[0].path})",
                raw.node,
            )

    # -- metrics --------------------------------------------------------------------------
    def model_wrong_metric(self, top: LocatedMapping, targets: set[str]) -> ModelWrongMetric:
        node = self.given(top, "model_wrong_metric")
        if node is None:
            return ModelWrongMetric()
        path = "model_wrong_metric"
        mapping = self.mapping(node, path)
        if mapping is None:
            return ModelWrongMetric()
        type_node = self.required(mapping, "type", path, node)
        metric_type = self.string(type_node, join_path(path, "type")) if type_node else None
        if metric_type is not None and metric_type not in MODEL_WRONG_METRIC_KEYS:
            self.error_at(
                codes.UNKNOWN_MODEL_WRONG_METRIC,
                join_path(path, "type"),
                f"unknown model_wrong_metric type {metric_type[:60]!r}; known: "
                + ", ".join(MODEL_WRONG_METRIC_KEYS),
                type_node,
            )
            metric_type = None
        every_key = frozenset().union(*MODEL_WRONG_METRIC_KEYS.values())
        for key in mapping.items:
            if key not in every_key:
                self.error(
                    codes.UNKNOWN_KEY,
                    join_path(path, key),
                    f"unknown key {key!r} in model_wrong_metric",
                    mapping.key_lines[key],
                )
            elif metric_type is not None and key not in MODEL_WRONG_METRIC_KEYS[metric_type]:
                self.error(
                    codes.OPTION_NOT_FOR_TYPE,
                    join_path(path, key),
                    f"{key!r} does not apply to model_wrong_metric type {metric_type}",
                    mapping.key_lines[key],
                )
        if metric_type == "exact_match":
            names = self.reference_names(mapping, path, node, targets)
            return ModelWrongMetric("exact_match", reference_names=names)
        if metric_type == "string_f1":
            names: tuple[str, ...] = ()
            reference_node = self.required(mapping, "reference_name", path, node)
            if reference_node is not None:
                name = self.string(reference_node, join_path(path, "reference_name"))
                if name is not None:
                    self.check_target(
                        name, join_path(path, "reference_name"), reference_node, targets
                    )
                    names = (name,)
            threshold = None
            threshold_node = self.given(mapping, "threshold")
            if threshold_node is None:
                self.error_at(
                    codes.MISSING_KEY,
                    join_path(path, "threshold"),
                    "string_f1 needs a threshold between 0 and 1 (the model is fooled when its "
                    "F1 is below it)",
                    node,
                )
            else:
                threshold = self.number(threshold_node, join_path(path, "threshold"))
                if threshold is not None and not 0.0 <= threshold <= 1.0:
                    self.error_at(
                        codes.THRESHOLD_OUT_OF_RANGE,
                        join_path(path, "threshold"),
                        f"threshold must be between 0 and 1, got {threshold}",
                        threshold_node,
                    )
            return ModelWrongMetric("string_f1", reference_names=names, threshold=threshold)
        return ModelWrongMetric()

    def reference_names(
        self, mapping: LocatedMapping, path: str, owner: LocatedValue, targets: set[str]
    ) -> tuple[str, ...]:
        node = self.required(mapping, "reference_names", path, owner)
        if node is None:
            return ()
        names_path = join_path(path, "reference_names")
        items = self.sequence(node, names_path)
        if items is None:
            return ()
        if not items:
            self.error_at(
                codes.EMPTY_LIST, names_path, "reference_names must name at least one target", node
            )
        names = []
        for index, item in enumerate(items):
            name = self.string(item, f"{names_path}[{index}]")
            if name is not None:
                self.check_target(name, f"{names_path}[{index}]", item, targets)
                names.append(name)
        return tuple(names)

    def check_target(self, name: str, path: str, node: LocatedValue, targets: set[str]) -> None:
        would_be_target = name in self.written("input") and name in self.written("output")
        if not self.output_readable or (would_be_target and name not in targets):
            return  # a consequence of an error in input/output, already reported
        if name not in targets:
            self.error_at(
                codes.REFERENCE_NOT_TARGET,
                path,
                f"{name[:60]!r} is not a target (an input also listed in output); targets: "
                + (", ".join(sorted(targets)) or "none"),
                node,
            )

    def perf_metrics(
        self, top: LocatedMapping, root: LocatedValue, output_names: set[str]
    ) -> tuple[list[PerfMetric], bool]:
        """Read ``perf_metric``; also say whether every entry was read without problems."""
        node = self.given(top, "perf_metric")
        if node is None:
            self.error_at(codes.MISSING_KEY, "perf_metric", "'perf_metric' is required", root)
            return [], False
        if isinstance(node.value, LocatedMapping):
            entries = [("perf_metric", node)]
        elif isinstance(node.value, list):
            if not node.value:
                self.error_at(
                    codes.EMPTY_LIST, "perf_metric", "perf_metric must not be empty", node
                )
            entries = [(f"perf_metric[{index}]", item) for index, item in enumerate(node.value)]
        else:
            self.wrong_type("perf_metric", "a mapping or a list of mappings", node)
            return [], False
        issues_before = len(self.issues)
        read: list[tuple[str, str, dict[str, Any], str, LocatedValue]] = []
        for path, entry in entries:
            mapping = self.mapping(entry, path)
            if mapping is None:
                continue
            type_node = self.required(mapping, "type", path, entry)
            metric_type = self.string(type_node, join_path(path, "type")) if type_node else None
            if metric_type in UNSUPPORTED_PERF_METRIC_TYPES:
                self.error_at(
                    codes.NOT_SUPPORTED,
                    join_path(path, "type"),
                    UNSUPPORTED_PERF_METRIC_TYPES[metric_type],
                    type_node,
                )
                metric_type = None
            elif metric_type is not None and metric_type not in PERF_METRIC_TYPES:
                self.error_at(
                    codes.UNKNOWN_PERF_METRIC,
                    join_path(path, "type"),
                    f"unknown perf_metric type {metric_type[:60]!r}; known: "
                    + ", ".join(PERF_METRIC_TYPES),
                    type_node,
                )
                metric_type = None
            reference_node = self.required(mapping, "reference_name", path, entry)
            reference = (
                self.string(reference_node, join_path(path, "reference_name"))
                if reference_node
                else None
            )
            if (
                reference is not None
                and reference not in output_names
                and self.output_readable
                and reference not in self.written("output")
            ):
                self.error_at(
                    codes.PERF_REFERENCE_NOT_OUTPUT,
                    join_path(path, "reference_name"),
                    f"{reference[:60]!r} is not an output field; outputs: "
                    + (", ".join(sorted(output_names)) or "none"),
                    reference_node,
                )
            options = self.perf_options(mapping, path)
            if metric_type is not None and reference is not None:
                read.append((metric_type, reference, options, path, entry))
        type_counts = Counter(metric_type for metric_type, *_ in read)
        metrics: list[PerfMetric] = []
        seen: dict[tuple[str, str], str] = {}
        for metric_type, reference, options, path, entry in read:
            if (metric_type, reference) in seen:
                self.error_at(
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
        return metrics, len(self.issues) == issues_before

    def perf_options(self, mapping: LocatedMapping, path: str) -> dict[str, Any]:
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
                self.wrong_type(
                    join_path(path, key), "a string, number, boolean or list of those", node
                )
        return options

    def delta_metrics(self, top: LocatedMapping) -> list[str]:
        node = self.given(top, "delta_metrics")
        if node is None:
            return []
        items = self.sequence(node, "delta_metrics")
        if items is None:
            return []
        metrics: list[str] = []
        for index, item in enumerate(items):
            path = f"delta_metrics[{index}]"
            mapping = self.mapping(item, path)
            if mapping is None:
                continue
            self.check_keys(mapping, path, frozenset({"type"}), "a delta metric")
            type_node = self.required(mapping, "type", path, item)
            metric_type = self.string(type_node, join_path(path, "type")) if type_node else None
            if metric_type is None:
                continue
            if metric_type not in DELTA_METRIC_TYPES:
                self.error_at(
                    codes.UNKNOWN_DELTA_METRIC,
                    join_path(path, "type"),
                    f"unknown delta metric {metric_type[:60]!r}; known: "
                    + ", ".join(DELTA_METRIC_TYPES),
                    type_node,
                )
            elif metric_type in metrics:
                self.error_at(
                    codes.DUPLICATE_DELTA_METRIC,
                    join_path(path, "type"),
                    f"the delta metric {metric_type} is listed twice",
                    type_node,
                )
            else:
                metrics.append(metric_type)
        return metrics

    def aggregation_metric(
        self, top: LocatedMapping, perf_metrics: list[PerfMetric], perf_complete: bool
    ) -> AggregationMetric:
        node = self.given(top, "aggregation_metric")
        if node is None:
            return AggregationMetric()
        path = "aggregation_metric"
        mapping = self.mapping(node, path)
        if mapping is None:
            return AggregationMetric()
        self.check_keys(mapping, path, frozenset({"type", "default_weights"}), "aggregation_metric")
        type_node = self.given(mapping, "type")
        if type_node is not None:
            metric_type = self.string(type_node, join_path(path, "type"))
            if metric_type is not None and metric_type not in AGGREGATION_METRIC_TYPES:
                self.error_at(
                    codes.UNKNOWN_AGGREGATION_METRIC,
                    join_path(path, "type"),
                    f"unknown aggregation_metric type {metric_type[:60]!r}; known: dynascore",
                    type_node,
                )
        weights_node = self.given(mapping, "default_weights")
        if weights_node is None:
            return AggregationMetric()
        weights_path = join_path(path, "default_weights")
        weights_mapping = self.mapping(weights_node, weights_path)
        if weights_mapping is None:
            return AggregationMetric()
        known = [metric.name for metric in perf_metrics]
        known += list(DELTA_METRIC_TYPES) + [name for name, _ in JOB_METRICS]
        weights: dict[str, float] = {}
        for key, value_node in weights_mapping.items.items():
            key_path = join_path(weights_path, key)
            # When perf_metric itself is broken, an unknown name may be a perf metric name:
            # stay silent rather than report a consequence of the first error.
            if key not in known and perf_complete:
                self.error(
                    codes.UNKNOWN_WEIGHT_METRIC,
                    key_path,
                    f"unknown metric {key[:60]!r}; known: {', '.join(known)}",
                    weights_mapping.key_lines[key],
                )
                continue
            if not is_finite_number(value_node.value):
                if value_node.value is not UNREADABLE:
                    self.error_at(
                        codes.WEIGHT_OUT_OF_RANGE,
                        key_path,
                        f"a weight must be a number from 0 to {MAX_WEIGHT:g}, "
                        f"got {describe_value(value_node.value)}",
                        value_node,
                    )
                continue
            weight = float(value_node.value)
            if not 0.0 <= weight <= MAX_WEIGHT:
                self.error_at(
                    codes.WEIGHT_OUT_OF_RANGE,
                    key_path,
                    f"a weight must be from 0 to {MAX_WEIGHT:g}, got {weight:g}",
                    value_node,
                )
                continue
            weights[key] = weight
        return AggregationMetric(default_weights=MappingProxyType(weights))


def parse_task_config(text: str) -> TaskConfig:
    """Parse and validate a task-config YAML document.

    Return the immutable ``TaskConfig``; raise ``TaskConfigError`` listing every problem.
    Nothing else is ever raised, whatever the text.
    """
    if not isinstance(text, str):
        raise TaskConfigError(
            [ConfigIssue(codes.WRONG_TYPE, "", f"expected YAML text, got {type(text).__name__}")]
        )
    issues: list[ConfigIssue] = []
    root = read_located_yaml(text, issues)
    if root is None:
        raise TaskConfigError(_in_source_order(issues))
    config = _Validator(issues).document(root)
    if issues or config is None:
        raise TaskConfigError(_in_source_order(issues))
    return config


def _in_source_order(issues: list[ConfigIssue]) -> list[ConfigIssue]:
    """Sort issues by line then column (stable), issues without a line first."""
    return sorted(issues, key=lambda issue: (issue.line or 0, issue.column or 0))
