"""Check how the fields of a task config relate to one another.

Contract: ``read_outputs`` returns the output fields in source order as ``RawField`` objects; an
entry written as just ``{name: x}`` takes the definition of the input or context field ``x``
(its section is then ``output*``: a resolved copy, not a second definition). The ``check_*``
functions report, on the checker, names used twice, a ``reference_name`` that names no field or
a field of the wrong kind, and more than one goal-message input. A consequence of a problem
already reported (a broken field, an unreadable ``output``, a misplaced type) is not reported
again. Pure: no Django, no DB, no HTTP.
"""

from __future__ import annotations

from dataclasses import replace

from tasks.config import codes
from tasks.config.checker import DocumentChecker, join_path
from tasks.config.fields import TYPES_NOT_IN_SECTION, RawField, read_field, read_field_name
from tasks.config.located_yaml import LocatedMapping, LocatedValue
from tasks.config.types import FieldSpec, FieldType

# The output of a v2 chat that writes none: the model's reply.
CHAT_REPLY_OUTPUT = "reply"


def read_outputs(
    checker: DocumentChecker,
    top: LocatedMapping,
    root: LocatedValue,
    context: list[RawField],
    inputs: list[RawField],
    *,
    derive: bool = False,
    chat_reply: bool = False,
) -> list[RawField]:
    """Read ``output``; an entry without ``type`` takes an input/context definition.

    With ``derive`` (a v2 form), a missing ``output`` is the worker's answers the model must
    match: the goal field and the selection in a selectable-text context; with
    ``chat_reply`` too (a v2 chat context), it is the model's reply, a string ``reply``.
    """
    node = checker.given(top, "output")
    if node is None and derive:
        derived = [raw for raw in inputs if _is_v2_answer(raw)]
        if derived:
            return [replace(raw, section="output*", path="output") for raw in derived]
        if chat_reply:
            return [_chat_reply(root)]
    if node is None:
        checker.output_readable = False
        checker.error_at(codes.MISSING_KEY, "output", "'output' is required", root)
        return []
    items = checker.sequence(node, "output")
    if items is None or not items:
        checker.output_readable = False
    if items is None:
        return []
    if not items:
        checker.error_at(codes.EMPTY_LIST, "output", "'output' must list at least one field", node)
    definitions = {raw.spec.name: raw for raw in context + inputs}
    resolved: list[RawField] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        path = f"output[{index}]"
        mapping = checker.mapping(item, path)
        if mapping is None:
            continue
        if "type" in mapping.items:
            raw = read_field(checker, item, path, "output")
        else:
            raw = _abbreviated_output(checker, mapping, item, path, index, definitions, seen)
        if raw is not None:
            resolved.append(raw)
    return resolved


def _abbreviated_output(
    checker: DocumentChecker,
    mapping: LocatedMapping,
    item: LocatedValue,
    path: str,
    index: int,
    definitions: dict[str, RawField],
    seen: dict[str, int],
) -> RawField | None:
    """Resolve ``{name: ...}`` at ``output[index]`` to the input or context field of that
    name; None (after reporting why, unless already reported) when it cannot be."""
    name = read_field_name(checker, mapping, path, item, "output")
    if name is None:
        return None
    definition = definitions.get(name)
    if definition is None and name in checker.written("input", "context"):
        return None  # the definition itself is broken and already reported
    if definition is None:
        checker.error_at(
            codes.UNDEFINED_ABBREVIATED_OUTPUT,
            path,
            f"the output {name!r} has no type and no input or context field has that "
            "name; give it a full definition",
            item,
        )
        return None
    for key in mapping.items:
        if key != "name":
            checker.error(
                codes.ABBREVIATED_OUTPUT_EXTRA_KEYS,
                join_path(path, key),
                f"{{name: {name}}} takes its definition from {definition.path}; "
                f"remove {key!r} (or give a full definition under a new name)",
                mapping.key_lines[key],
            )
    if name in seen:
        checker.error_at(
            codes.DUPLICATE_NAME,
            join_path(path, "name"),
            f"the output {name!r} is listed twice (first at output[{seen[name]}])",
            item,
        )
        return None
    seen[name] = index
    spec = replace(definition.spec, line=item.line)
    # The "output*" section marks a resolved copy: it is not a second definition.
    return RawField(spec, "output*", path, item, mapping)


def _chat_reply(root: LocatedValue) -> RawField:
    """The output of a v2 chat without ``output``: the model's reply (``reply``, a string)."""
    spec = FieldSpec(name=CHAT_REPLY_OUTPUT, type=FieldType.STRING, display_name=CHAT_REPLY_OUTPUT)
    return RawField(spec, "output*", "output", root, LocatedMapping({}, {}))


def _is_v2_answer(raw: RawField) -> bool:
    """A v2 input that is the worker's answer: the goal label or the context selection."""
    return raw.spec.as_goal_message or raw.spec.type == FieldType.CONTEXT_STRING_SELECTION


def check_unique_names(checker: DocumentChecker, fields: list[RawField]) -> None:
    """Report every field whose name is already used by an earlier field."""
    first: dict[str, RawField] = {}
    for raw in fields:
        name = raw.spec.name
        if name in first:
            hint = ""
            if raw.section == "output" and first[name].section in ("input", "context"):
                hint = f"; write just {{name: {name}}} to reuse the {first[name].section} field"
            checker.error_at(
                codes.DUPLICATE_NAME,
                join_path(raw.path, "name"),
                f"the name {name!r} is already used at {first[name].path}{hint}",
                raw.node,
            )
        else:
            first[name] = raw


def check_references(
    checker: DocumentChecker,
    every_field: list[RawField],
    context: list[RawField],
    inputs: list[RawField],
    outputs: list[RawField],
) -> None:
    """Check that each ``reference_name`` names a field of the kind its type needs."""
    context_by_name = {raw.spec.name: raw.spec for raw in context}
    known = {raw.spec.name: raw.spec for raw in every_field}
    labelled: dict[str, FieldSpec] = {}
    for raw in inputs + context + outputs:
        # The first definition wins: a redefinition is reported as a duplicate name.
        labelled.setdefault(raw.spec.name, raw.spec)
    broken = checker.written(*checker.written_names) - set(known)
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
                checker.error_at(
                    codes.DANGLING_REFERENCE,
                    path,
                    f"no context field is called {target!r}",
                    reference_node,
                )
            elif referenced is None or referenced.type != FieldType.STRING:
                checker.error_at(
                    codes.WRONG_REFERENCE_KIND,
                    path,
                    f"{target!r} must be a string field in context",
                    reference_node,
                )
        elif spec.type == FieldType.PROB:
            referenced = labelled.get(target)
            if referenced is None and target not in known:
                checker.error_at(
                    codes.DANGLING_REFERENCE,
                    path,
                    f"no field is called {target!r}",
                    reference_node,
                )
            elif referenced is None or referenced.type != FieldType.MULTICLASS:
                checker.error_at(
                    codes.WRONG_REFERENCE_KIND,
                    path,
                    f"a prob field must reference a multiclass field (its labels are the "
                    f"keys); {target!r} is not one",
                    reference_node,
                )


def check_goal_fields(checker: DocumentChecker, inputs: list[RawField]) -> None:
    """Report every input after the first with ``as_goal_message: true``."""
    goals = [raw for raw in inputs if raw.spec.as_goal_message]
    for raw in goals[1:]:
        checker.error_at(
            codes.SEVERAL_GOAL_FIELDS,
            join_path(raw.path, "as_goal_message"),
            f"only one input may have as_goal_message: true (already {goals[0].path})",
            raw.node,
        )
