"""Read Dynabench's v2 form components (``goal``, ``context``, ``user_input``...) as fields.

Contract: ``is_v2(top)`` says whether a document describes its form with v2 components (a
``goal``, a ``user_input`` list, or a ``context`` mapping). ``read_v2_form(checker, top,
root)`` reads them into the same ``RawField`` objects as the v1 lists, so that everything
after (outputs, references, metrics) is checked by the v1 code:

- ``context`` (one component): each ``field_names_for_the_model`` entry ``name: key`` is a
  context field ``name`` (text, or an image for ``zoom_image``) that a model receives as
  ``key``; ``selectable-text`` also gives the worker a selection input ``answer`` in it;
- ``user_input``: one input field per component, named by ``field_name_for_the_model``;
  ``metadata: true`` makes it a ``metadata.create`` field instead;
- ``goal``: ``plain-text`` gives the goal message; ``multioptions`` and
  ``radio-button-options`` give a ``multiclass`` input with ``as_goal_message``;
- ``validation_user_input``: ``metadata.validate`` fields;
- ``required_fields``: when given, exactly the named inputs are required.

- a chat ``context`` (``tasks.config.chat.V2_CHAT_TYPES``): its ``generative_context`` is read
  by ``tasks.config.chat.read_v2_chat`` into ``V2Form.chat``; the form then has one input,
  ``message`` (the conversation's first message), and every ``user_input`` component is a
  ``metadata.create`` question asked at the end.

The inputs come in the order user inputs, goal, selection (the v1 twins' order). Components
the platform cannot render are ``config.E082``, unknown ones ``config.E081``. The tables here
are also what ``tasks.config.json_schema`` publishes. Pure: no Django, no DB, no HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from tasks.config import codes
from tasks.config.chat import (
    V2_CHAT_GENERATIVE_TYPES,
    V2_CHAT_TYPES,
    ChatConfig,
    read_v2_chat,
)
from tasks.config.checker import DocumentChecker, join_path
from tasks.config.fields import NAME_PATTERN, RawField, read_field_name
from tasks.config.located_yaml import LocatedMapping, LocatedValue, describe_value
from tasks.config.types import (
    LABELLED_FIELD_TYPES,
    SCALE_FIELD_TYPES,
    ChoiceWidget,
    FieldSpec,
    FieldType,
)

V2_FORM_KEYS = ("goal", "user_input", "required_fields", "validation_user_input")


@dataclass(frozen=True)
class Component:
    """What a v2 component becomes: a field type, a widget, and the keys it takes."""

    field_type: FieldType
    keys: frozenset[str]
    widget: ChoiceWidget | None = None


_INPUT_KEYS = frozenset(
    {
        "field_name_for_the_model",
        "placeholder",
        "instruction",
        "instructions",
        "initiate_open",
        "metadata",
        "show_na_checkbox",
    }
)
_OPTIONS = _INPUT_KEYS | {"options"}
_SLIDER = _INPUT_KEYS | {"options_slider", "instructions_slider"}
USER_INPUT_COMPONENTS: dict[str, Component] = {
    "text": Component(FieldType.STRING, _INPUT_KEYS),
    "input-with-instructions": Component(FieldType.STRING, _INPUT_KEYS),
    "multioptions": Component(FieldType.MULTILABEL, _OPTIONS),
    "multioptions-with-instructions": Component(FieldType.MULTILABEL, _OPTIONS),
    "radio-button-options": Component(FieldType.MULTICLASS, _OPTIONS, ChoiceWidget.RADIO),
    "horizontal-radio-button-options": Component(
        FieldType.MULTICLASS, _OPTIONS, ChoiceWidget.INLINE_RADIO
    ),
    "drop-down-single-select": Component(FieldType.MULTICLASS, _OPTIONS, ChoiceWidget.DROPDOWN),
    "basic-input-select-option-with-instructions": Component(
        FieldType.MULTICLASS, _OPTIONS, ChoiceWidget.DROPDOWN
    ),
    "simple-slider": Component(FieldType.SLIDER, _SLIDER),
    "multi-slider-selection": Component(FieldType.LABEL_SLIDERS, _SLIDER | {"options"}),
    "select-option-with-slider": Component(FieldType.LABEL_WITH_SLIDER, _SLIDER | {"options"}),
    # Upstream shows this component only when it has options, which it never uses.
    "basic-input-with-slider": Component(FieldType.TEXT_WITH_SLIDER, _SLIDER | {"options"}),
}
UNSUPPORTED_USER_INPUTS = {
    "audio": "audio recordings are not supported",
    "select-multiple-images": "choosing among generated images (image generation) is not supported",
}
_VALIDATION_KEYS = frozenset({"field_name_for_the_model", "options", "label", "placeholder"})
VALIDATION_USER_INPUT_COMPONENTS: dict[str, Component] = {
    "multioptions": Component(FieldType.MULTILABEL, _VALIDATION_KEYS),
    "radio-button-options": Component(FieldType.MULTICLASS, _VALIDATION_KEYS, ChoiceWidget.RADIO),
}
_GOAL_KEYS = frozenset({"text", "metadata"})
_GOAL_OPTION_KEYS = _GOAL_KEYS | {"options", "field_name_for_the_model"}
GOAL_COMPONENTS: dict[str, Component] = {
    "plain-text": Component(FieldType.STRING, _GOAL_KEYS),
    "multioptions": Component(FieldType.MULTICLASS, _GOAL_OPTION_KEYS),
    "radio-button-options": Component(FieldType.MULTICLASS, _GOAL_OPTION_KEYS, ChoiceWidget.RADIO),
}
UNSUPPORTED_GOALS = {
    "double-multioptions": "a goal chosen in two steps (double-multioptions) is not supported",
}
_CONTEXT_KEYS = frozenset({"field_names_for_the_model", "context_for_start"})
CONTEXT_COMPONENTS: dict[str, Component] = {
    "plain-text": Component(FieldType.STRING, _CONTEXT_KEYS),
    "selectable-text": Component(FieldType.STRING, _CONTEXT_KEYS),
    "zoom_image": Component(FieldType.IMAGE, _CONTEXT_KEYS),
}
UNSUPPORTED_CONTEXTS = {
    "audio": "audio contexts are not supported",
    "modify-original-text": "editing the context text (modify-original-text) is not supported",
    "select-multiple-images-generative": "image generation is not supported",
    "select-multiple-images-generative-dev": "image generation is not supported",
    "select-multiple-text-multiple-tags": "tagging several spans of a text is not supported",
    "describe-image": "image contexts drawn from S3 per country and language are not supported",
}
# Keys of a v2 component that the platform does not support, whatever the component.
UNSUPPORTED_COMPONENT_KEYS = {
    "goal": {"evaluation_label": "goal.evaluation_label is not supported"},
    "context": {
        "metadata": "context.metadata (storing context parts as metadata) is not supported",
        "tags": "context.tags are not supported",
    },
}
SELECTION_ROLE = "answer"
CONTEXT_ROLE = "context"
# The input a v2 chat's first message is stored in.
CHAT_MESSAGE_FIELD = "message"
CHAT_MESSAGE_LABEL = "Your message"


@dataclass
class V2Form:
    """The fields of a v2 form, ready for the v1 checks."""

    context: list[RawField] = field(default_factory=list)
    inputs: list[RawField] = field(default_factory=list)
    create: list[RawField] = field(default_factory=list)
    validate: list[RawField] = field(default_factory=list)
    # Request keys given by the context's field_names_for_the_model: {field: (key, node)}.
    request_keys: dict[str, tuple[str, LocatedValue]] = field(default_factory=dict)
    goal_text: str = ""
    goal_node: LocatedValue | None = None
    # A chat context (``V2_CHAT_TYPES``): its ChatConfig (None when it has problems).
    chat: ChatConfig | None = None
    chat_node: LocatedValue | None = None


def is_v2(top: LocatedMapping) -> bool:
    """Say whether the document describes its form with v2 components."""
    context = top.items.get("context")
    has_mapping_context = context is not None and isinstance(context.value, LocatedMapping)
    return has_mapping_context or any(
        DocumentChecker.given(top, key) is not None for key in ("goal", "user_input")
    )


def read_v2_form(checker: DocumentChecker, top: LocatedMapping, root: LocatedValue) -> V2Form:
    """Read every v2 form component of ``top`` (see the module docstring)."""
    form = V2Form()
    if checker.given(top, "input") is not None:
        checker.error(
            codes.MIXED_FORMATS,
            "input",
            "a config describes its form either with v1 fields (input, a context list) or "
            "with v2 components (goal, user_input, a context mapping), not both",
            top.key_lines["input"],
        )
    selection = _read_context(checker, top, form)
    _read_user_inputs(checker, top, form)
    _read_goal(checker, top, form)
    if selection is not None:
        form.inputs.append(selection)
    _read_validation_inputs(checker, top, form)
    if form.chat_node is None and not form.inputs and checker.given(top, "user_input") is None:
        checker.error_at(
            codes.MISSING_KEY,
            "user_input",
            "a v2 config needs user_input (or a goal with options, or a selectable-text context)",
            root,
        )
    _apply_required_fields(checker, top, form)
    if form.chat_node is not None:
        _chat_form(checker, form)
    return form


# -- components -------------------------------------------------------------------------------
def _component(
    checker: DocumentChecker,
    mapping: LocatedMapping,
    path: str,
    node: LocatedValue,
    known: dict[str, Component],
    unsupported: dict[str, str],
) -> tuple[str | None, Component | None]:
    """Return the component type written in ``mapping`` and its table entry (None if unusable)."""
    type_node = checker.required(mapping, "type", path, node)
    type_name = checker.string(type_node, join_path(path, "type")) if type_node else None
    if type_name is None:
        return None, None
    if type_name in known:
        return type_name, known[type_name]
    if type_name in unsupported:
        checker.error_at(
            codes.V2_NOT_SUPPORTED, join_path(path, "type"), unsupported[type_name], type_node
        )
    else:
        checker.error_at(
            codes.UNKNOWN_COMPONENT,
            join_path(path, "type"),
            f"unknown component type {type_name[:60]!r}; known: " + ", ".join(known),
            type_node,
        )
    return type_name, None


def _check_component_keys(
    checker: DocumentChecker, mapping: LocatedMapping, path: str, type_name: str, component
) -> None:
    """Report keys a component does not take (E021 when another component takes them)."""
    allowed = component.keys | {"type"}
    section = path.split("[")[0].split(".")[0]
    unsupported = UNSUPPORTED_COMPONENT_KEYS.get(section, {})
    for key in mapping.items:
        if key in allowed:
            continue
        line = mapping.key_lines[key]
        if key in unsupported:
            checker.error(codes.V2_NOT_SUPPORTED, join_path(path, key), unsupported[key], line)
        else:
            checker.error(
                codes.UNKNOWN_KEY,
                join_path(path, key),
                f"{key!r} does not apply to a {type_name} component; it takes: "
                + ", ".join(sorted(allowed)),
                line,
            )


def _read_user_inputs(checker: DocumentChecker, top: LocatedMapping, form: V2Form) -> None:
    node = checker.given(top, "user_input")
    items = checker.sequence(node, "user_input") if node is not None else None
    for index, item in enumerate(items or []):
        path = f"user_input[{index}]"
        mapping = checker.mapping(item, path)
        if mapping is None:
            continue
        as_metadata = checker.optional_bool(mapping, "metadata", path) is True
        section = "metadata.create" if as_metadata else "input"
        raw = _read_input_component(
            checker, item, mapping, path, section, USER_INPUT_COMPONENTS, UNSUPPORTED_USER_INPUTS
        )
        if raw is not None:
            (form.create if as_metadata else form.inputs).append(raw)


def _read_validation_inputs(checker: DocumentChecker, top: LocatedMapping, form: V2Form) -> None:
    node = checker.given(top, "validation_user_input")
    items = checker.sequence(node, "validation_user_input") if node is not None else None
    for index, item in enumerate(items or []):
        path = f"validation_user_input[{index}]"
        mapping = checker.mapping(item, path)
        if mapping is None:
            continue
        raw = _read_input_component(
            checker, item, mapping, path, "metadata.validate", VALIDATION_USER_INPUT_COMPONENTS, {}
        )
        if raw is not None:
            form.validate.append(raw)


def _read_input_component(
    checker: DocumentChecker,
    node: LocatedValue,
    mapping: LocatedMapping,
    path: str,
    section: str,
    known: dict[str, Component],
    unsupported: dict[str, str],
) -> RawField | None:
    """Read one user-input component as a field of ``section``."""
    name = read_field_name(checker, mapping, path, node, section, key="field_name_for_the_model")
    type_name, component = _component(checker, mapping, path, node, known, unsupported)
    if component is None or type_name is None:
        return None
    _check_component_keys(checker, mapping, path, type_name, component)
    options = _field_options(checker, mapping, path, node, component)
    if name is None:
        return None
    spec = FieldSpec(name=name, type=component.field_type, line=node.line, **options)
    return RawField(spec, section, path, node, mapping)


def _field_options(
    checker: DocumentChecker,
    mapping: LocatedMapping,
    path: str,
    node: LocatedValue,
    component: Component,
) -> dict[str, Any]:
    """Return the FieldSpec options of one input component."""
    options: dict[str, Any] = {
        "display_name": checker.optional_string(mapping, "label", path)
        or checker.optional_string(mapping, "field_name_for_the_model", path),
        "placeholder": checker.optional_string(mapping, "placeholder", path),
        "help_text": checker.optional_string(mapping, "instruction", path),
        "instructions": checker.optional_string(mapping, "instructions", path),
        "instructions_open": bool(checker.optional_bool(mapping, "initiate_open", path)),
        "optional": bool(checker.optional_bool(mapping, "show_na_checkbox", path)),
        "widget": component.widget,
    }
    if component.field_type in LABELLED_FIELD_TYPES:
        options["labels"] = read_options(checker, mapping, path, node)
    if component.field_type in SCALE_FIELD_TYPES:
        options.update(_read_options_slider(checker, mapping, path))
        options["scale_prompt"] = checker.optional_string(mapping, "instructions_slider", path)
    return options


def read_options(
    checker: DocumentChecker, mapping: LocatedMapping, path: str, owner: LocatedValue
) -> tuple[str, ...]:
    """Return a component's ``options`` as labels: strings, or mappings ``{label: ...}``."""
    node = checker.required(mapping, "options", path, owner)
    options_path = join_path(path, "options")
    items = checker.sequence(node, options_path) if node is not None else None
    if items is None:
        return ()
    if not items:
        checker.error_at(codes.EMPTY_LIST, options_path, "options must not be empty", node)
    labels: list[str] = []
    for index, item in enumerate(items):
        item_path = f"{options_path}[{index}]"
        label = _option_label(checker, item, item_path)
        if label is None:
            continue
        if label in labels:
            checker.error_at(
                codes.DUPLICATE_LABEL, item_path, f"the option {label!r} is repeated", item
            )
            continue
        labels.append(label)
    return tuple(labels)


def _option_label(checker: DocumentChecker, item: LocatedValue, path: str) -> str | None:
    if isinstance(item.value, LocatedMapping):
        checker.check_keys(item.value, path, frozenset({"label"}), "an option")
        label_node = checker.required(item.value, "label", path, item)
        return checker.string(label_node, join_path(path, "label")) if label_node else None
    if isinstance(item.value, str):
        return item.value
    checker.error_at(
        codes.WRONG_TYPE,
        path,
        f"an option must be a string or {{label: ...}}, got {describe_value(item.value)} "
        "(quote values such as 'yes', 'no' or numbers)",
        item,
    )
    return None


def _read_options_slider(
    checker: DocumentChecker, mapping: LocatedMapping, path: str
) -> dict[str, Any]:
    """``options_slider: [low, high]``: integers give the scale, words only its end labels."""
    node = checker.given(mapping, "options_slider")
    if node is None:
        return {}
    slider_path = join_path(path, "options_slider")
    items = checker.sequence(node, slider_path)
    if items is None:
        return {}
    ends = [item.value for item in items]
    if len(ends) != 2 or not all(isinstance(end, str | int) for end in ends):
        checker.error_at(codes.BAD_SCALE, slider_path, "options_slider must be [low, high]", node)
        return {}
    numbers = [_integer(end) for end in ends]
    if None in numbers:
        return {"scale_labels": tuple(str(end) for end in ends)}
    low, high = numbers
    if low >= high:
        checker.error_at(
            codes.BAD_SCALE, slider_path, f"the scale must rise, got {low} to {high}", node
        )
        return {}
    return {"min_value": low, "max_value": high, "scale_labels": (str(low), str(high))}


def _integer(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.lstrip("-").isdigit() and len(text) < 10:
        return int(text)
    return None


# -- goal ------------------------------------------------------------------------------------
def _read_goal(checker: DocumentChecker, top: LocatedMapping, form: V2Form) -> None:
    node = checker.given(top, "goal")
    mapping = checker.mapping(node, "goal") if node is not None else None
    if mapping is None:
        return
    type_name, component = _component(
        checker, mapping, "goal", node, GOAL_COMPONENTS, UNSUPPORTED_GOALS
    )
    if component is None or type_name is None:
        return
    _check_component_keys(checker, mapping, "goal", type_name, component)
    form.goal_text = checker.optional_string(mapping, "text", "goal")
    form.goal_node = mapping.items.get("text")
    if checker.optional_bool(mapping, "metadata", "goal"):
        checker.error(
            codes.V2_NOT_SUPPORTED,
            "goal.metadata",
            "a goal stored as metadata is not supported: the goal label is the worker's target",
            mapping.key_lines["metadata"],
        )
    if type_name == "plain-text":
        return
    name = read_field_name(checker, mapping, "goal", node, "input", key="field_name_for_the_model")
    labels = read_options(checker, mapping, "goal", node)
    if name is None:
        return
    spec = FieldSpec(
        name=name,
        type=FieldType.MULTICLASS,
        display_name=name,
        labels=labels,
        as_goal_message=True,
        widget=component.widget,
        line=node.line,
    )
    form.inputs.append(RawField(spec, "input", "goal", node, mapping))


# -- context ---------------------------------------------------------------------------------
def _read_context(checker: DocumentChecker, top: LocatedMapping, form: V2Form) -> RawField | None:
    """Read the context component; return the selection input of ``selectable-text``."""
    node = checker.given(top, "context")
    mapping = checker.mapping(node, "context") if node is not None else None
    if mapping is None:
        return None
    kind = mapping.items["type"].value if "type" in mapping.items else None
    if kind in V2_CHAT_TYPES:
        form.chat_node = node
        form.chat = read_v2_chat(checker, mapping, kind)
        return None
    _check_generative_context(checker, mapping)
    type_name, component = _component(
        checker, mapping, "context", node, CONTEXT_COMPONENTS, UNSUPPORTED_CONTEXTS
    )
    if component is None or type_name is None:
        return None
    _check_component_keys(
        checker,
        mapping,
        "context",
        type_name,
        replace(component, keys=component.keys | {"generative_context"}),
    )
    checker.optional_bool(mapping, "context_for_start", "context")
    roles = _read_field_names(checker, mapping, node)
    selectable = type_name == "selectable-text"
    if selectable and roles is not None and CONTEXT_ROLE not in roles:
        checker.error_at(
            codes.MISSING_KEY,
            "context.field_names_for_the_model.context",
            "a selectable-text context needs a 'context' entry (the text to select in)",
            node,
        )
    for name, (key, key_node) in (roles or {}).items():
        if selectable and name == SELECTION_ROLE:
            continue
        form.request_keys[name] = (key, key_node)
        spec = FieldSpec(
            name=name, type=component.field_type, display_name=name, line=key_node.line
        )
        checker.written_names.setdefault("context", set()).add(name)
        form.context.append(
            RawField(
                spec, "context", f"context.field_names_for_the_model.{name}", key_node, mapping
            )
        )
    if not selectable or roles is None or CONTEXT_ROLE not in roles:
        return None
    return _selection_field(checker, roles, form)


def _selection_field(
    checker: DocumentChecker, roles: dict[str, tuple[str, LocatedValue]], form: V2Form
) -> RawField:
    """The worker's selection in a selectable-text context (the v1 ``answer`` input)."""
    context_node = roles[CONTEXT_ROLE][1]
    key, node = roles.get(SELECTION_ROLE, (SELECTION_ROLE, context_node))
    form.request_keys[SELECTION_ROLE] = (key, node)
    reference = LocatedValue(CONTEXT_ROLE, context_node.line, context_node.column)
    synthetic = LocatedMapping({"reference_name": reference}, {"reference_name": node.line})
    spec = FieldSpec(
        name=SELECTION_ROLE,
        type=FieldType.CONTEXT_STRING_SELECTION,
        display_name=SELECTION_ROLE,
        reference_name=CONTEXT_ROLE,
        line=node.line,
    )
    checker.written_names.setdefault("input", set()).add(SELECTION_ROLE)
    path = "context.field_names_for_the_model.answer"
    return RawField(spec, "input", path, node, synthetic)


def _read_field_names(
    checker: DocumentChecker, mapping: LocatedMapping, owner: LocatedValue
) -> dict[str, tuple[str, LocatedValue]] | None:
    """Return ``field_names_for_the_model`` as ``{field name: (model key, node)}``."""
    path = "context.field_names_for_the_model"
    node = checker.required(mapping, "field_names_for_the_model", "context", owner)
    names = checker.mapping(node, path) if node is not None else None
    if names is None:
        return None
    roles: dict[str, tuple[str, LocatedValue]] = {}
    for name, value_node in names.items.items():
        key = checker.string(value_node, join_path(path, name))
        if not NAME_PATTERN.fullmatch(name):
            checker.error(
                codes.BAD_NAME,
                join_path(path, name),
                f"the name {name[:60]!r} must match {NAME_PATTERN.pattern}",
                names.key_lines[name],
            )
        elif key is not None:
            roles[name] = (key, value_node)
    return roles


def _check_generative_context(checker: DocumentChecker, mapping: LocatedMapping) -> None:
    """``generative_context`` outside a chat context: image generation, or a misplaced chat."""
    node = checker.given(mapping, "generative_context")
    if node is None:
        return
    generative = node.value if isinstance(node.value, LocatedMapping) else None
    type_node = generative.items.get("type") if generative is not None else None
    if type_node is not None and type_node.value in V2_CHAT_GENERATIVE_TYPES:
        checker.error_at(
            codes.V2_NOT_SUPPORTED,
            "context.generative_context",
            f"a {type_node.value} generative_context is a chat: context.type must be one of "
            + ", ".join(V2_CHAT_TYPES),
            node,
        )
        return
    checker.error_at(
        codes.V2_NOT_SUPPORTED,
        "context.generative_context",
        "generated contexts (image generation such as Adversarial Nibbler) are not supported",
        node,
    )


# -- chat ------------------------------------------------------------------------------------
def _chat_form(checker: DocumentChecker, form: V2Form) -> None:
    """A chat's form: the worker's messages are the input; user inputs are asked at the end.

    The conversation's first message is stored in the input ``message`` (a string of at most
    ``message_max_length`` characters). Every ``user_input`` component becomes a
    ``metadata.create`` question, asked when the worker finishes. A goal with options (a
    target label) does not apply to a conversation.
    """
    for raw in form.inputs:
        if raw.spec.as_goal_message:
            checker.error_at(
                codes.V2_NOT_SUPPORTED,
                "goal.type",
                "a chat has no target label: its goal is plain-text (or absent)",
                raw.mapping.items.get("type", raw.node),
            )
        else:
            form.create.append(replace(raw, section="metadata.create"))
    node = form.chat_node
    max_length = form.chat.message_max_length if form.chat else 2000
    spec = FieldSpec(
        name=CHAT_MESSAGE_FIELD,
        type=FieldType.STRING,
        display_name=CHAT_MESSAGE_LABEL,
        max_length=max_length,
        line=node.line,
    )
    checker.written_names.setdefault("input", set()).add(CHAT_MESSAGE_FIELD)
    form.inputs = [RawField(spec, "input", "context.type", node, LocatedMapping({}, {}))]


# -- required_fields -------------------------------------------------------------------------
def _apply_required_fields(checker: DocumentChecker, top: LocatedMapping, form: V2Form) -> None:
    """With ``required_fields``, the named inputs are required and the others optional."""
    node = checker.given(top, "required_fields")
    items = checker.sequence(node, "required_fields") if node is not None else None
    if items is None:
        return
    by_key = {key: name for name, (key, _node) in form.request_keys.items()}
    known = {raw.spec.name for raw in form.inputs + form.create}
    required: set[str] = set()
    for index, item in enumerate(items):
        name = checker.string(item, f"required_fields[{index}]")
        if name is None:
            continue
        name = name if name in known else by_key.get(name, name)
        if name not in known:
            checker.error_at(
                codes.DANGLING_REFERENCE,
                f"required_fields[{index}]",
                f"{name[:60]!r} is not a user input or goal field; fields: "
                + (", ".join(sorted(known)) or "none"),
                item,
            )
        required.add(name)
    for group in (form.inputs, form.create):
        for index, raw in enumerate(group):
            optional = raw.spec.name not in required
            group[index] = replace(raw, spec=replace(raw.spec, optional=optional))


__all__ = [
    "CONTEXT_COMPONENTS",
    "GOAL_COMPONENTS",
    "UNSUPPORTED_CONTEXTS",
    "UNSUPPORTED_GOALS",
    "UNSUPPORTED_USER_INPUTS",
    "USER_INPUT_COMPONENTS",
    "CHAT_MESSAGE_FIELD",
    "V2_FORM_KEYS",
    "VALIDATION_USER_INPUT_COMPONENTS",
    "V2Form",
    "is_v2",
    "read_v2_form",
]
