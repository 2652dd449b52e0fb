"""Check the field definitions of a task config: context, input, full outputs and metadata.

Contract: ``read_field_list`` and ``read_metadata`` check every field of a section and return
those whose name and type are usable as ``RawField`` objects (the ``FieldSpec`` with where it
was written), in source order; every problem of a field (missing or unknown keys, a bad name,
an unknown type, a type or option out of place, bad labels, a bad ``max_length`` or
``validated_label_condition``) is reported on the checker, and a field with a usable name and
type is kept even when one of its options was reported. Each name read is recorded on the
checker, so that later checks stay silent about references to a broken field. How fields
relate to one another is checked in ``tasks.config.field_relations``. Pure: no Django, no DB,
no HTTP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tasks.config import codes
from tasks.config.checker import DocumentChecker, join_path
from tasks.config.located_yaml import UNREADABLE, LocatedMapping, LocatedValue, describe_value
from tasks.config.types import (
    LABELLED_FIELD_TYPES,
    SCALE_FIELD_TYPES,
    ChoiceWidget,
    FieldSpec,
    FieldType,
    Verdict,
)

NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

COMMON_FIELD_KEYS = frozenset(
    {
        "name",
        "type",
        "display_name",
        "placeholder",
        "optional",
        "help_text",
        "instructions",
        "instructions_open",
    }
)
SCALE_KEYS = frozenset({"min", "max", "scale_labels"})
TYPE_OPTION_KEYS: dict[FieldType, frozenset[str]] = {
    FieldType.STRING: frozenset({"max_length", "multiline"}),
    FieldType.MULTICLASS: frozenset({"labels", "as_goal_message", "widget"}),
    FieldType.MULTILABEL: frozenset({"labels"}),
    FieldType.CONTEXT_STRING_SELECTION: frozenset({"reference_name"}),
    FieldType.IMAGE: frozenset(),
    FieldType.PROB: frozenset({"reference_name", "single_prob"}),
    FieldType.SLIDER: SCALE_KEYS,
    FieldType.LABEL_SLIDERS: SCALE_KEYS | {"labels"},
    FieldType.LABEL_WITH_SLIDER: SCALE_KEYS | {"labels", "scale_prompt"},
    FieldType.TEXT_WITH_SLIDER: SCALE_KEYS | {"max_length", "scale_prompt"},
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
    # A rating is asked of a person: never a context, never a model's answer.
    **{scale_type: ("context", "output") for scale_type in SCALE_FIELD_TYPES},
}


@dataclass
class RawField:
    """A field definition under construction, with where it came from."""

    spec: FieldSpec
    section: str
    path: str
    node: LocatedValue
    mapping: LocatedMapping


def read_field_list(
    checker: DocumentChecker,
    container: LocatedMapping,
    key: str,
    owner: LocatedValue,
    *,
    required: bool,
    section: str | None = None,
    path: str | None = None,
) -> list[RawField]:
    """Check the field list under ``key`` of ``container``; return its usable fields."""
    section = section or key
    path = path or key
    node = checker.given(container, key)
    if node is None:
        if required:
            checker.error_at(codes.MISSING_KEY, path, f"{key!r} is required", owner)
        return []
    items = checker.sequence(node, path)
    if items is None:
        return []
    if required and not items:
        checker.error_at(codes.EMPTY_LIST, path, f"{key!r} must list at least one field", node)
    fields = []
    for index, item in enumerate(items):
        raw = read_field(checker, item, f"{path}[{index}]", section)
        if raw is not None:
            fields.append(raw)
    return fields


def read_field(
    checker: DocumentChecker, node: LocatedValue, path: str, section: str
) -> RawField | None:
    """Check one full field definition; return it unless its name or type is unusable."""
    mapping = checker.mapping(node, path)
    if mapping is None:
        return None
    name = read_field_name(checker, mapping, path, node, section)
    field_type, type_node = _read_field_type(checker, mapping, path, node, section)
    _check_field_keys(checker, mapping, path, section, field_type)

    options = _read_field_options(checker, mapping, path, name, field_type)
    reference_node = checker.given(mapping, "reference_name")
    if reference_node is not None:
        options["reference_name"] = checker.string(
            reference_node, join_path(path, "reference_name")
        )
    if field_type in LABELLED_FIELD_TYPES:
        options["labels"] = _read_labels(checker, mapping, path, node)
    elif checker.given(mapping, "labels") is not None:
        # Still read them so that their own problems are reported too.
        _read_labels(checker, mapping, path, node)
    if field_type == FieldType.CONTEXT_STRING_SELECTION and reference_node is None:
        checker.required(mapping, "reference_name", path, node)
    if field_type == FieldType.PROB and reference_node is None and not options.get("single_prob"):
        checker.error_at(
            codes.MISSING_KEY,
            join_path(path, "reference_name"),
            "a prob field needs reference_name (a multiclass field), or single_prob: true",
            node,
        )
    if name is None or field_type is None:
        return None
    spec = FieldSpec(name=name, type=field_type, line=node.line, **options)
    return RawField(spec, section, path, node, mapping)


def _read_field_type(
    checker: DocumentChecker,
    mapping: LocatedMapping,
    path: str,
    node: LocatedValue,
    section: str,
) -> tuple[FieldType | None, LocatedValue | None]:
    """Return the field's type (None when missing or unknown) and its node; report a type
    that ``section`` cannot hold."""
    type_node = checker.required(mapping, "type", path, node)
    field_type: FieldType | None = None
    if type_node is not None:
        type_text = checker.string(type_node, join_path(path, "type"))
        if type_text is not None:
            try:
                field_type = FieldType(type_text)
            except ValueError:
                checker.error_at(
                    codes.UNKNOWN_FIELD_TYPE,
                    join_path(path, "type"),
                    f"unknown field type {type_text!r}; known: "
                    + ", ".join(member.value for member in FieldType),
                    type_node,
                )
    if field_type is not None and section in TYPES_NOT_IN_SECTION.get(field_type, ()):
        checker.error_at(
            codes.TYPE_NOT_IN_SECTION,
            join_path(path, "type"),
            f"a {field_type.value} field cannot be used in {section}",
            type_node,
        )
    return field_type, type_node


def _read_field_options(
    checker: DocumentChecker,
    mapping: LocatedMapping,
    path: str,
    name: str | None,
    field_type: FieldType | None,
) -> dict[str, Any]:
    """Return the field's display options, flags, verdict condition and maximum length."""
    options: dict[str, Any] = {
        "display_name": checker.optional_string(mapping, "display_name", path) or name or "",
        "placeholder": checker.optional_string(mapping, "placeholder", path),
        "help_text": checker.optional_string(mapping, "help_text", path),
        "instructions": checker.optional_string(mapping, "instructions", path),
        **read_widget(checker, mapping, path),
        **read_scale(checker, mapping, path, field_type),
    }
    for key in ("optional", "multiline", "as_goal_message", "single_prob", "instructions_open"):
        value = checker.optional_bool(mapping, key, path)
        if value is not None:
            options[key] = value
    condition = checker.optional_bool(mapping, "model_wrong_condition", path)
    if condition is not None:
        options["model_wrong_condition"] = condition
    verdict = _read_verdict(checker, mapping, path)
    if verdict is not None:
        options["validated_label_condition"] = verdict
    max_length = _read_max_length(checker, mapping, path)
    if max_length is not None:
        options["max_length"] = max_length
    return options


def read_field_name(
    checker: DocumentChecker,
    mapping: LocatedMapping,
    path: str,
    owner: LocatedValue,
    section: str,
    key: str = "name",
) -> str | None:
    """Return the valid name of a field (under ``key``), or None; record every string name."""
    node = checker.required(mapping, key, path, owner)
    if node is None:
        return None
    name = checker.string(node, join_path(path, key))
    if name is None:
        return None
    checker.written_names.setdefault(section.rstrip("*"), set()).add(name)
    if not NAME_PATTERN.fullmatch(name):
        checker.error_at(
            codes.BAD_NAME,
            join_path(path, key),
            f"the name {name[:60]!r} must match {NAME_PATTERN.pattern} "
            "(letters, digits and underscores, not starting with a digit)",
            node,
        )
        return None
    return name


def _check_field_keys(
    checker: DocumentChecker,
    mapping: LocatedMapping,
    path: str,
    section: str,
    field_type: FieldType | None,
) -> None:
    """Report keys unknown to fields, out of their section, or not for this type."""
    for key in mapping.items:
        line = mapping.key_lines[key]
        key_path = join_path(path, key)
        if key not in ALL_FIELD_KEYS:
            checker.error(
                codes.UNKNOWN_KEY,
                key_path,
                f"unknown key {key!r} in a field; allowed: {', '.join(sorted(ALL_FIELD_KEYS))}",
                line,
            )
        elif key in SECTION_ONLY_KEYS and section != SECTION_ONLY_KEYS[key]:
            checker.error(
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
            checker.error(
                codes.OPTION_NOT_FOR_TYPE,
                key_path,
                f"{key!r} does not apply to a {field_type.value} field",
                line,
            )


def read_widget(checker: DocumentChecker, mapping: LocatedMapping, path: str) -> dict[str, Any]:
    """Return ``{"widget": ChoiceWidget}`` when a known ``widget`` is given, else ``{}``."""
    node = checker.given(mapping, "widget")
    text = checker.string(node, join_path(path, "widget")) if node is not None else None
    if text is None:
        return {}
    try:
        return {"widget": ChoiceWidget(text)}
    except ValueError:
        checker.error_at(
            codes.NOT_ONE_OF,
            join_path(path, "widget"),
            f"{text[:60]!r} is not one of: " + ", ".join(member.value for member in ChoiceWidget),
            node,
        )
        return {}


def read_scale(
    checker: DocumentChecker, mapping: LocatedMapping, path: str, field_type: FieldType | None
) -> dict[str, Any]:
    """Return the scale options of a rating field (``min``, ``max``, ``scale_labels``...)."""
    if field_type not in SCALE_FIELD_TYPES:
        return {}
    options: dict[str, Any] = {
        "scale_prompt": checker.optional_string(mapping, "scale_prompt", path)
    }
    bounds = []
    for key in ("min", "max"):
        node = checker.given(mapping, key)
        bounds.append(checker.integer(node, join_path(path, key)) if node is not None else None)
    low, high = bounds
    low = 0 if low is None else low
    high = 100 if high is None else high
    if low >= high:
        checker.error(
            codes.BAD_SCALE,
            join_path(path, "max"),
            f"the scale must run from a lower to a higher integer, got {low} to {high}",
            mapping.key_lines.get("max", mapping.key_lines.get("min")),
        )
    else:
        options["min_value"], options["max_value"] = low, high
    labels_node = checker.given(mapping, "scale_labels")
    if labels_node is not None:
        options["scale_labels"] = read_scale_labels(
            checker, labels_node, join_path(path, "scale_labels")
        )
    return options


def read_scale_labels(checker: DocumentChecker, node: LocatedValue, path: str) -> tuple[str, ...]:
    """Return the two words shown at the ends of a scale, or () after reporting."""
    items = checker.sequence(node, path)
    if items is None:
        return ()
    words = [item.value for item in items]
    if len(words) != 2 or not all(isinstance(word, str | int) for word in words):
        checker.error_at(
            codes.BAD_SCALE, path, "scale_labels must be two words: the low end, the high end", node
        )
        return ()
    return tuple(str(word) for word in words)


def _read_verdict(checker: DocumentChecker, mapping: LocatedMapping, path: str) -> Verdict | None:
    """Return the ``validated_label_condition`` verdict when given and known."""
    node = checker.given(mapping, "validated_label_condition")
    if node is None:
        return None
    text = checker.string(node, join_path(path, "validated_label_condition"))
    if text is None:
        return None
    try:
        return Verdict(text)
    except ValueError:
        checker.error_at(
            codes.NOT_ONE_OF,
            join_path(path, "validated_label_condition"),
            f"{text[:60]!r} is not one of: " + ", ".join(member.value for member in Verdict),
            node,
        )
        return None


def _read_max_length(checker: DocumentChecker, mapping: LocatedMapping, path: str) -> int | None:
    """Return ``max_length`` when given as a positive integer."""
    node = checker.given(mapping, "max_length")
    if node is None:
        return None
    value = checker.integer(node, join_path(path, "max_length"))
    if value is not None and value <= 0:
        checker.error_at(
            codes.BAD_MAX_LENGTH,
            join_path(path, "max_length"),
            f"max_length must be a positive integer, got {value}",
            node,
        )
        return None
    return value


def _read_labels(
    checker: DocumentChecker, mapping: LocatedMapping, path: str, owner: LocatedValue
) -> tuple[str, ...]:
    """Return the labels of a field, each a string, without repeats."""
    node = checker.required(mapping, "labels", path, owner)
    if node is None:
        return ()
    labels_path = join_path(path, "labels")
    items = checker.sequence(node, labels_path)
    if items is None:
        return ()
    if not items:
        checker.error_at(codes.EMPTY_LIST, labels_path, "labels must not be empty", node)
    labels: list[str] = []
    for index, item in enumerate(items):
        item_path = f"{labels_path}[{index}]"
        if not isinstance(item.value, str):
            if item.value is not UNREADABLE:
                checker.error_at(
                    codes.WRONG_TYPE,
                    item_path,
                    f"a label must be a string, got {describe_value(item.value)} "
                    "(quote values such as 'yes', 'no' or numbers)",
                    item,
                )
            continue
        if item.value in labels:
            checker.error_at(
                codes.DUPLICATE_LABEL, item_path, f"the label {item.value!r} is repeated", item
            )
            continue
        labels.append(item.value)
    return tuple(labels)


def read_metadata(
    checker: DocumentChecker, top: LocatedMapping
) -> tuple[list[RawField], list[RawField]]:
    """Check ``metadata``; return its ``create`` and ``validate`` fields."""
    node = checker.given(top, "metadata")
    if node is None:
        return [], []
    mapping = checker.mapping(node, "metadata")
    if mapping is None:
        return [], []
    checker.check_keys(mapping, "metadata", frozenset({"create", "validate"}), "metadata")
    create = read_field_list(
        checker,
        mapping,
        "create",
        node,
        required=False,
        section="metadata.create",
        path="metadata.create",
    )
    validate = read_field_list(
        checker,
        mapping,
        "validate",
        node,
        required=False,
        section="metadata.validate",
        path="metadata.validate",
    )
    return create, validate
