"""The JSON Schema (draft 2020-12) of task configs, both formats, built from the parser's tables.

Contract: ``task_config_schema(schema_id=None)`` returns the schema as a dict. Every key,
type name and allowed value in it comes from the tables the parser itself checks against
(``document.TOP_LEVEL_KEYS``, ``fields.TYPE_OPTION_KEYS``, the component tables of
``components``, the metric registries...), so the two cannot drift; only the JSON type of
each field key is written here (``FIELD_KEY_SCHEMAS``), and building the schema fails if a
key the parser knows has none. The schema checks structure (keys, types, allowed values);
relations between fields (a reference to a missing field, a duplicate name) are the parser's
alone. A config the schema refuses is always refused by the parser. Pure: no Django.
"""

from __future__ import annotations

from typing import Any

from tasks.config.arena import (
    ARENA_KEYS,
    MAX_DAILY_CAP,
    MAX_IDENTITY_WORD_LENGTH,
    MAX_IDENTITY_WORDS,
    MAX_MIN_BATTLES,
    PAIRINGS,
)
from tasks.config.chat import (
    CHAT_KEYS,
    FOOLED_BY,
    JUDGE_KEYS,
    MAX_MESSAGE_LENGTH,
    MAX_MODELS_PER_TURN,
    MAX_REPLY_CHARS,
    MAX_REPLY_TIMEOUT,
    MAX_TURNS,
    SCALE_KEYS,
    TURN_CHOICES,
    V2_ARTIFACT_KEYS,
    V2_CHAT_CONTEXT_KEYS,
    V2_CHAT_GENERATIVE_TYPES,
    V2_CHAT_TYPES,
    V2_GENERATIVE_KEYS,
)
from tasks.config.components import (
    CONTEXT_COMPONENTS,
    GOAL_COMPONENTS,
    USER_INPUT_COMPONENTS,
    VALIDATION_USER_INPUT_COMPONENTS,
    Component,
)
from tasks.config.document import MODEL_SIDE_KEYS, TOP_LEVEL_KEYS
from tasks.config.fields import ALL_FIELD_KEYS, COMMON_FIELD_KEYS, NAME_PATTERN, TYPE_OPTION_KEYS
from tasks.config.leaderboard_metrics import AGGREGATION_METRIC_TYPES, MAX_WEIGHT, PERF_METRIC_TYPES
from tasks.config.model_maps import (
    METRIC_PARAMETER_KEYS,
    MODEL_EVALUATION_METRIC_KEYS,
    MODEL_OUTPUT_KEYS,
    RESPONSE_FIELD_KEYS,
)
from tasks.config.model_wrong_metric import MODEL_WRONG_METRIC_KEYS
from tasks.config.page_settings import (
    EVALUATION_KEYS,
    EXTERNAL_VALIDATOR_COUNT_KEYS,
    EXTERNAL_VALIDATOR_KEYS,
    VALIDATION_CONTEXT_KEYS,
    VALIDATION_CONTEXT_TYPES,
)
from tasks.config.types import DELTA_METRIC_TYPES, JOB_METRICS, ChoiceWidget, FieldType, Verdict

DRAFT = "https://json-schema.org/draft/2020-12/schema"
STRING = {"type": "string"}
BOOLEAN = {"type": "boolean"}
INTEGER = {"type": "integer"}
NAME = {"type": "string", "pattern": NAME_PATTERN.pattern}
LABELS = {"type": "array", "items": STRING, "minItems": 1, "uniqueItems": True}
SCALAR = {"type": ["string", "number", "boolean"]}
SECTION_CONDITIONS = ("model_wrong_condition", "validated_label_condition")
FIELD_KEY_SCHEMAS: dict[str, dict[str, Any]] = {
    "name": NAME,
    "type": {"enum": [member.value for member in FieldType]},
    "display_name": STRING,
    "placeholder": STRING,
    "help_text": STRING,
    "instructions": STRING,
    "instructions_open": BOOLEAN,
    "optional": BOOLEAN,
    "max_length": {"type": "integer", "minimum": 1},
    "multiline": BOOLEAN,
    "labels": LABELS,
    "as_goal_message": BOOLEAN,
    "widget": {"enum": [member.value for member in ChoiceWidget]},
    "reference_name": STRING,
    "single_prob": BOOLEAN,
    "min": INTEGER,
    "max": INTEGER,
    "scale_labels": {
        "type": "array",
        "items": {"type": ["string", "integer"]},
        "minItems": 2,
        "maxItems": 2,
    },
    "scale_prompt": STRING,
    "model_wrong_condition": BOOLEAN,
    "validated_label_condition": {"enum": [member.value for member in Verdict]},
}
COMPONENT_KEY_SCHEMAS: dict[str, dict[str, Any]] = {
    "field_name_for_the_model": NAME,
    "placeholder": STRING,
    "instruction": STRING,
    "instructions": STRING,
    "initiate_open": BOOLEAN,
    "metadata": BOOLEAN,
    "show_na_checkbox": BOOLEAN,
    "options": {
        "type": "array",
        "minItems": 1,
        "items": {
            "anyOf": [
                STRING,
                {
                    "type": "object",
                    "properties": {"label": STRING},
                    "required": ["label"],
                    "additionalProperties": False,
                },
            ]
        },
    },
    "options_slider": {
        "type": "array",
        "items": {"type": ["string", "integer"]},
        "minItems": 2,
        "maxItems": 2,
    },
    "instructions_slider": STRING,
    "label": STRING,
    "text": STRING,
    "field_names_for_the_model": {
        "type": "object",
        "propertyNames": NAME,
        "additionalProperties": STRING,
    },
    "context_for_start": BOOLEAN,
}


def task_config_schema(schema_id: str | None = None) -> dict[str, Any]:
    """Return the JSON Schema of a task config in either format."""
    field = _field_schema()
    v2_context = _components_schema(CONTEXT_COMPONENTS)
    properties: dict[str, Any] = {
        "schema_version": {"const": 1},
        "context": {
            "anyOf": [{"type": "array", "items": field}, v2_context, _chat_context_schema()]
        },
        "input": {"type": "array", "items": field, "minItems": 1},
        "goal": _components_schema(GOAL_COMPONENTS),
        "user_input": {"type": "array", "items": _components_schema(USER_INPUT_COMPONENTS)},
        "required_fields": {"type": "array", "items": STRING},
        "validation_user_input": {
            "type": "array",
            "items": _components_schema(VALIDATION_USER_INPUT_COMPONENTS),
        },
        "output": {"type": "array", "minItems": 1, "items": {"anyOf": [field, _abbreviated()]}},
        "metadata": _object({"create": _list_of(field), "validate": _list_of(field)}),
        "model_wrong_metric": _model_wrong_metric_schema(),
        "perf_metric": {"anyOf": [_perf_metric_schema(), _list_of(_perf_metric_schema(), 1)]},
        "delta_metrics": _list_of(
            _object({"type": {"enum": list(DELTA_METRIC_TYPES)}}, required=["type"])
        ),
        "aggregation_metric": _aggregation_schema(),
        "goal_message": STRING,
        "content_warning": STRING,
        "instructions": STRING,
        "chat": _chat_schema(),
        "arena": _arena_schema(),
        **_model_side_schemas(),
    }
    missing = set(TOP_LEVEL_KEYS) - set(properties)
    if missing:
        raise AssertionError(f"the schema has no definition for {sorted(missing)}")
    schema: dict[str, Any] = {
        "$schema": DRAFT,
        "title": "Dynatask task config (v1 fields or Dynabench's v2 components)",
        "type": "object",
        "properties": {key: _nullable(properties[key]) for key in TOP_LEVEL_KEYS},
        "additionalProperties": False,
        "if": {
            "anyOf": [
                {"required": ["goal"]},
                {"required": ["user_input"]},
                {"required": ["context"], "properties": {"context": {"type": "object"}}},
            ]
        },
        "then": {"required": ["perf_metric"], "not": {"required": ["input"]}},
        "else": {"required": ["input", "output", "perf_metric"]},
    }
    if schema_id:
        schema = {"$id": schema_id, **schema}
    return schema


def _checked_keys(properties: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """Return ``properties`` after checking that they are exactly the parser's ``keys``."""
    if set(properties) != set(keys):
        raise AssertionError(f"the schema's keys {sorted(properties)} are not {sorted(keys)}")
    return properties


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """The parser reads a key set to null (``key:`` with nothing after it) as not given."""
    return {"anyOf": [{"type": "null"}, schema]}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {key: _nullable(value) for key, value in properties.items()},
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def _list_of(item: dict[str, Any], min_items: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": item}
    if min_items:
        schema["minItems"] = min_items
    return schema


def _field_schema() -> dict[str, Any]:
    """A v1 field: every key typed, and per type only the keys that type takes."""
    missing = ALL_FIELD_KEYS - set(FIELD_KEY_SCHEMAS)
    if missing:
        raise AssertionError(f"no JSON type for the field keys {sorted(missing)}")
    per_type = []
    for field_type, options in TYPE_OPTION_KEYS.items():
        allowed = sorted(COMMON_FIELD_KEYS | options | set(SECTION_CONDITIONS))
        per_type.append(
            {
                "if": {"properties": {"type": {"const": field_type.value}}},
                "then": {"propertyNames": {"enum": allowed}},
            }
        )
    schema = _object({key: FIELD_KEY_SCHEMAS[key] for key in sorted(ALL_FIELD_KEYS)})
    schema["required"] = ["name", "type"]
    schema["allOf"] = per_type
    return schema


def _abbreviated() -> dict[str, Any]:
    """An output written ``{name: X}``: X's definition is an input's or a context's."""
    return _object({"name": NAME}, required=["name"])


def _components_schema(table: dict[str, Component]) -> dict[str, Any]:
    """A v2 component: a known type, and only the keys that type takes."""
    keys = sorted({key for component in table.values() for key in component.keys})
    per_type = [
        {
            "if": {"properties": {"type": {"const": name}}},
            "then": {"propertyNames": {"enum": sorted(component.keys | {"type"})}},
        }
        for name, component in table.items()
    ]
    properties = {"type": {"enum": list(table)}}
    properties.update({key: COMPONENT_KEY_SCHEMAS[key] for key in keys})
    schema = _object(properties, required=["type"])
    schema["allOf"] = per_type
    return schema


def _model_wrong_metric_schema() -> dict[str, Any]:
    every_key = sorted({key for keys in MODEL_WRONG_METRIC_KEYS.values() for key in keys})
    types = {
        "type": {"enum": list(MODEL_WRONG_METRIC_KEYS)},
        "reference_names": LABELS,
        "reference_name": STRING,
        "threshold": {"type": "number", "minimum": 0, "maximum": 1},
    }
    schema = _object({key: types[key] for key in every_key}, required=["type"])
    schema["allOf"] = [
        {
            "if": {"properties": {"type": {"const": name}}},
            "then": {"propertyNames": {"enum": sorted(keys)}},
        }
        for name, keys in MODEL_WRONG_METRIC_KEYS.items()
    ]
    return schema


def _perf_metric_schema() -> dict[str, Any]:
    option = {"anyOf": [SCALAR, {"type": "array", "items": SCALAR}]}
    return {
        "type": "object",
        "properties": {
            "type": _nullable({"enum": list(PERF_METRIC_TYPES)}),
            "reference_name": _nullable(STRING),
        },
        "required": ["type", "reference_name"],
        "additionalProperties": option,
    }


def _aggregation_schema() -> dict[str, Any]:
    weight = {"type": "number", "minimum": 0, "maximum": MAX_WEIGHT}
    names = [name for name, _direction in JOB_METRICS] + list(DELTA_METRIC_TYPES)
    return _object(
        {
            "type": {"enum": list(AGGREGATION_METRIC_TYPES)},
            "default_weights": {
                "type": "object",
                "additionalProperties": weight,
                "description": "perf metric names and " + ", ".join(names),
            },
            "count_self_reported": BOOLEAN,
        }
    )


def _chat_context_schema() -> dict[str, Any]:
    """A v2 chat context (``tasks.config.chat.read_v2_chat``): the keys it reads, no others."""
    turns = {"type": "integer", "minimum": 1, "maximum": MAX_TURNS}
    artifacts = {
        "providers": {"type": ["array", "object"]},
        "first_explainatory_block": STRING,
        "prompt": STRING,
        "options_slider": {"type": "array", "items": INTEGER, "minItems": 2, "maxItems": 2},
        "min_interactions": turns,
        "max_interactions": turns,
        "memory_on": {"const": True},
    }
    generative = {
        "type": {"enum": list(V2_CHAT_GENERATIVE_TYPES)},
        "is_generative": {"const": True},
        "is_unique": BOOLEAN,
        "artifacts": _object(_checked_keys(artifacts, V2_ARTIFACT_KEYS)),
    }
    context = {
        "type": {"enum": list(V2_CHAT_TYPES)},
        "generative_context": _object(_checked_keys(generative, V2_GENERATIVE_KEYS)),
    }
    return _object(_checked_keys(context, V2_CHAT_CONTEXT_KEYS), required=["type"])


def _chat_schema() -> dict[str, Any]:
    """The ``chat`` section (``tasks.config.chat``), with the parser's ranges."""

    def between(low: int, high: int) -> dict[str, Any]:
        return {"type": "integer", "minimum": low, "maximum": high}

    scale = _object(
        _checked_keys(
            {"label": STRING, "min": between(-1000, 1000), "max": between(-1000, 1000)},
            SCALE_KEYS,
        )
    )
    judge = _object(
        _checked_keys(
            {"model": STRING, "rubric": STRING, "fooled_word": STRING, "not_fooled_word": STRING},
            JUDGE_KEYS,
        ),
        required=["model", "rubric"],
    )
    properties = {
        "instructions": STRING,
        "models_per_turn": between(1, MAX_MODELS_PER_TURN),
        "min_turns": between(1, MAX_TURNS),
        "max_turns": between(1, MAX_TURNS),
        "message_max_length": between(1, MAX_MESSAGE_LENGTH),
        "turn_choice": {
            "type": "array",
            "items": {"enum": list(TURN_CHOICES)},
            "uniqueItems": True,
        },
        "turn_slider": scale,
        "rating": scale,
        "free_text": STRING,
        "fooled_by": {"enum": list(FOOLED_BY)},
        "judge": judge,
        "hide_model_identities": BOOLEAN,
        "unique_models": BOOLEAN,
        "system_prompt": STRING,
        "reply_max_chars": between(1, MAX_REPLY_CHARS),
        "reply_timeout": between(1, MAX_REPLY_TIMEOUT),
    }
    return _object(_checked_keys(properties, CHAT_KEYS))


def _arena_schema() -> dict[str, Any]:
    """The ``arena`` section (``tasks.config.arena``), with the parser's ranges."""
    word = {"type": "string", "minLength": 1, "maxLength": MAX_IDENTITY_WORD_LENGTH}
    properties = {
        "pairing": {"enum": list(PAIRINGS)},
        "min_battles_per_pair": {"type": "integer", "minimum": 0, "maximum": MAX_MIN_BATTLES},
        "daily_vote_cap": {"type": "integer", "minimum": 0, "maximum": MAX_DAILY_CAP},
        "identity_words": {
            "type": "array",
            "items": word,
            "maxItems": MAX_IDENTITY_WORDS,
            "uniqueItems": True,
        },
        "void_identity_votes": BOOLEAN,
        "style_control": BOOLEAN,
        "flag_min_votes": {"type": "integer", "minimum": 1, "maximum": 10_000},
        "flag_spread": {"type": "number", "minimum": 0.5, "maximum": 10},
        "sealed": BOOLEAN,
    }
    return _object(_checked_keys(properties, ARENA_KEYS))


def _model_side_schemas() -> dict[str, Any]:
    """The keys of Dynabench's current format read in both formats (MODEL_SIDE_KEYS)."""
    metric_names = list(MODEL_WRONG_METRIC_KEYS)
    threshold = {"type": "number", "minimum": 0, "maximum": 1}
    parameters = {key for keys in METRIC_PARAMETER_KEYS.values() for key in keys}
    count = {"type": "integer", "minimum": 1}
    external = {key: count for key in EXTERNAL_VALIDATOR_COUNT_KEYS}
    external.update({"url": {"type": "string", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://"}})
    external["artifacts"] = {"type": "object", "additionalProperties": SCALAR}
    schemas = {
        "model_input": {"type": "object", "additionalProperties": STRING},
        "model_output": _object({key: STRING for key in MODEL_OUTPUT_KEYS}),
        "response_fields": _object({key: STRING for key in RESPONSE_FIELD_KEYS}),
        "cast_output": {"type": "object", "additionalProperties": {"type": ["string", "number"]}},
        "model_evaluation_metric": _object(
            _checked_keys(
                {
                    "metric_name": {"enum": metric_names},
                    "metric_parameters": _object({key: threshold for key in parameters}),
                },
                MODEL_EVALUATION_METRIC_KEYS,
            ),
            required=["metric_name"],
        ),
        "evaluation": _object({key: STRING for key in EVALUATION_KEYS}),
        "validation_options": {"type": "array", "items": STRING, "minItems": 1},
        "validation_context": _object(
            {
                "type": {"enum": list(VALIDATION_CONTEXT_TYPES)},
                **{key: STRING for key in VALIDATION_CONTEXT_KEYS - {"type"}},
            },
            required=["type"],
        ),
        "external_validator": {
            **_object({key: external[key] for key in sorted(EXTERNAL_VALIDATOR_KEYS)}),
            "required": ["url"],
            "anyOf": [{"required": [key]} for key in EXTERNAL_VALIDATOR_COUNT_KEYS],
        },
        "creation_samples_title": STRING,
    }
    if set(schemas) != set(MODEL_SIDE_KEYS):
        raise AssertionError("the model-side keys and their schemas differ")
    return schemas
