"""Catalogue of the stable issue codes of the task-config schema.

Contract: a code, once released, keeps its meaning forever; callers and tests match on the
code, never on the message. ``config.E0xx`` codes come from ``parse_task_config``;
``value.E1xx`` codes come from the value checks in ``tasks.config.values``.
``docs/task-config-errors.md`` documents every code listed in ``CATALOGUE``.
"""

from __future__ import annotations

from types import MappingProxyType

# -- reading the YAML document ----------------------------------------------------------
YAML_SYNTAX = "config.E001"
TEXT_TOO_LARGE = "config.E002"
TOO_COMPLEX = "config.E003"
EMPTY_DOCUMENT = "config.E004"
DUPLICATE_KEY = "config.E005"
NON_STRING_KEY = "config.E006"
UNSUPPORTED_YAML_FEATURE = "config.E007"
UNREADABLE_VALUE = "config.E008"

# -- shapes shared by every section ------------------------------------------------------
WRONG_TYPE = "config.E010"
UNKNOWN_TOP_LEVEL_KEY = "config.E011"
MISSING_KEY = "config.E012"
EMPTY_LIST = "config.E013"
UNSUPPORTED_SCHEMA_VERSION = "config.E014"
NOT_ONE_OF = "config.E015"
NOT_SUPPORTED = "config.E016"

# -- field objects ------------------------------------------------------------------------
UNKNOWN_KEY = "config.E020"
OPTION_NOT_FOR_TYPE = "config.E021"
OPTION_NOT_IN_SECTION = "config.E022"
BAD_NAME = "config.E023"
DUPLICATE_NAME = "config.E024"
UNKNOWN_FIELD_TYPE = "config.E025"
TYPE_NOT_IN_SECTION = "config.E026"
DUPLICATE_LABEL = "config.E028"
BAD_MAX_LENGTH = "config.E029"
DANGLING_REFERENCE = "config.E030"
WRONG_REFERENCE_KIND = "config.E031"
UNDEFINED_ABBREVIATED_OUTPUT = "config.E032"
ABBREVIATED_OUTPUT_EXTRA_KEYS = "config.E033"
SEVERAL_GOAL_FIELDS = "config.E034"

# -- model_wrong_metric ----------------------------------------------------------------
UNKNOWN_MODEL_WRONG_METRIC = "config.E040"
REFERENCE_NOT_TARGET = "config.E042"
THRESHOLD_OUT_OF_RANGE = "config.E044"

# -- perf_metric --------------------------------------------------------------------------
UNKNOWN_PERF_METRIC = "config.E050"
PERF_REFERENCE_NOT_OUTPUT = "config.E052"
DUPLICATE_PERF_METRIC = "config.E054"

# -- delta_metrics ----------------------------------------------------------------------
UNKNOWN_DELTA_METRIC = "config.E060"
DUPLICATE_DELTA_METRIC = "config.E061"

# -- aggregation_metric -------------------------------------------------------------------
UNKNOWN_AGGREGATION_METRIC = "config.E070"
UNKNOWN_WEIGHT_METRIC = "config.E071"
WEIGHT_OUT_OF_RANGE = "config.E072"
SELF_REPORTED_WEIGHT = "config.E073"

# -- Dynabench's v2 format and the model maps -----------------------------------------------
MIXED_FORMATS = "config.E080"
UNKNOWN_COMPONENT = "config.E081"
V2_NOT_SUPPORTED = "config.E082"
CHAT_NOT_SUPPORTED = "config.E083"
BAD_MODEL_MAP = "config.E084"
CONFLICTING_KEYS = "config.E085"
UNKNOWN_MAIN_METRIC = "config.E086"
BAD_SCALE = "config.E087"

# -- warnings: the config loads, but says something its author probably did not mean ------
LABELS_SLIP = "config.W001"
GOAL_TEXT_IGNORED = "config.W002"
TARGET_NOT_SENT = "config.W003"

# -- chat (tasks.config.chat) --------------------------------------------------------------
CHAT_OUT_OF_RANGE = "config.E088"
CHAT_CHOICE_WITHOUT_BEST = "config.E089"
CHAT_METRIC_CONFLICT = "config.E090"

# -- arena (tasks.config.arena) ------------------------------------------------------------
ARENA_OUT_OF_RANGE = "config.E091"
ARENA_CHAT_CONFLICT = "config.E092"

# -- values checked against a config (tasks.config.values) ------------------------------
VALUE_NOT_MAPPING = "value.E100"
VALUE_MISSING = "value.E101"
VALUE_UNKNOWN_KEY = "value.E102"
VALUE_WRONG_TYPE = "value.E103"
VALUE_UNKNOWN_LABEL = "value.E104"
VALUE_REPEATED_LABEL = "value.E105"
VALUE_TOO_LONG = "value.E106"
VALUE_NOT_URL = "value.E107"
VALUE_SELECTION_NOT_IN_CONTEXT = "value.E108"
VALUE_PROB_KEYS = "value.E109"
VALUE_PROB_RANGE = "value.E110"
VALUE_PROB_SUM = "value.E111"
VALUE_BAD_UID = "value.E112"
VALUE_BAD_TAGS = "value.E113"
VALUE_BAD_INPUT_ID = "value.E114"
VALUE_EMPTY_LIST = "value.E115"
VALUE_OUT_OF_SCALE = "value.E116"

CATALOGUE: MappingProxyType[str, str] = MappingProxyType(
    {
        YAML_SYNTAX: "the text is not valid YAML (line and column given)",
        TEXT_TOO_LARGE: "the config text is larger than 200,000 characters",
        TOO_COMPLEX: "the YAML has too many nodes (alias expansion) or is nested too deeply",
        EMPTY_DOCUMENT: "the document is empty",
        DUPLICATE_KEY: "a mapping repeats a key",
        NON_STRING_KEY: "a mapping key is not a string",
        UNSUPPORTED_YAML_FEATURE: "a YAML tag or merge key (<<) is used; write plain values",
        UNREADABLE_VALUE: "a scalar could not be read (bad !!int, huge number, bad date...)",
        WRONG_TYPE: "a value has the wrong type (a list where a mapping is expected...)",
        UNKNOWN_TOP_LEVEL_KEY: "an unknown top-level key",
        MISSING_KEY: "a required key is missing",
        EMPTY_LIST: "a list that must not be empty is empty",
        UNSUPPORTED_SCHEMA_VERSION: "schema_version is not 1",
        NOT_ONE_OF: "a value is not one of the allowed values",
        NOT_SUPPORTED: "a Dynabench feature this platform does not support (DataPerf)",
        UNKNOWN_KEY: "an unknown key in a field or metric object",
        OPTION_NOT_FOR_TYPE: "an option that does not apply to this type",
        OPTION_NOT_IN_SECTION: "an option that does not apply in this section",
        BAD_NAME: "a field name does not match ^[A-Za-z_][A-Za-z0-9_]*$",
        DUPLICATE_NAME: "a field name is used twice",
        UNKNOWN_FIELD_TYPE: "an unknown field type",
        TYPE_NOT_IN_SECTION: "a field type not allowed in this section",
        DUPLICATE_LABEL: "labels repeat a label",
        BAD_MAX_LENGTH: "max_length is not a positive integer",
        DANGLING_REFERENCE: "reference_name names no field",
        WRONG_REFERENCE_KIND: "reference_name names a field of the wrong kind",
        UNDEFINED_ABBREVIATED_OUTPUT: "an output entry without type names no input/context field",
        ABBREVIATED_OUTPUT_EXTRA_KEYS: "an abbreviated output entry has keys besides name",
        SEVERAL_GOAL_FIELDS: "more than one input has as_goal_message: true",
        UNKNOWN_MODEL_WRONG_METRIC: "an unknown model_wrong_metric type",
        REFERENCE_NOT_TARGET: "model_wrong_metric names a field that is not a target",
        THRESHOLD_OUT_OF_RANGE: "string_f1 threshold is outside 0..1",
        UNKNOWN_PERF_METRIC: "an unknown perf_metric type",
        PERF_REFERENCE_NOT_OUTPUT: "perf_metric reference_name is not an output field",
        DUPLICATE_PERF_METRIC: "two perf metrics have the same type and reference_name",
        UNKNOWN_DELTA_METRIC: "an unknown delta metric type",
        DUPLICATE_DELTA_METRIC: "a delta metric is listed twice",
        UNKNOWN_AGGREGATION_METRIC: "aggregation_metric type is not dynascore",
        UNKNOWN_WEIGHT_METRIC: "default_weights names an unknown metric",
        WEIGHT_OUT_OF_RANGE: "a default weight is not a number in 0..5",
        SELF_REPORTED_WEIGHT: "a self-reported metric has a default weight without "
        "count_self_reported: true",
        MIXED_FORMATS: "a config mixes v1 fields (input) with v2 components (goal, user_input)",
        UNKNOWN_COMPONENT: "an unknown v2 component type",
        V2_NOT_SUPPORTED: "a Dynabench v2 component or key this platform does not support",
        CHAT_NOT_SUPPORTED: "a key of a Dynabench v2 chat context this platform does not support",
        BAD_MODEL_MAP: "model_input, model_output or cast_output names no usable field or "
        "repeats a key",
        CONFLICTING_KEYS: "two keys that say the same thing disagree",
        UNKNOWN_MAIN_METRIC: "evaluation.main_perf_metric names no perf metric",
        BAD_SCALE: "a slider's scale is not two integers, the first below the second",
        LABELS_SLIP: "warning: a validate label list mixes the target's labels with others",
        GOAL_TEXT_IGNORED: "warning: goal_message differs from goal.text, which is shown",
        TARGET_NOT_SENT: "warning: model_input names a target, which is never sent to a model",
        CHAT_OUT_OF_RANGE: "a chat number is outside its range (turns, models per turn...)",
        CHAT_CHOICE_WITHOUT_BEST: "chat.turn_choice lacks best, or is given for one model",
        CHAT_METRIC_CONFLICT: "a chat task has a model_wrong_metric other than ask_user",
        ARENA_OUT_OF_RANGE: "an arena number or identity word is outside its range",
        ARENA_CHAT_CONFLICT: "the chat section of an arena task has not two hidden seats",
        VALUE_NOT_MAPPING: "the value is not a JSON object",
        VALUE_MISSING: "a required field is missing or empty",
        VALUE_UNKNOWN_KEY: "a key the config does not define",
        VALUE_WRONG_TYPE: "a value has the wrong type",
        VALUE_UNKNOWN_LABEL: "a label is not one of the field's labels",
        VALUE_REPEATED_LABEL: "a multilabel value repeats a label",
        VALUE_TOO_LONG: "a string is longer than the field's max_length",
        VALUE_NOT_URL: "an image is not an http(s) URL",
        VALUE_SELECTION_NOT_IN_CONTEXT: "a selection does not occur in its context (at start)",
        VALUE_PROB_KEYS: "prob keys differ from the referenced labels",
        VALUE_PROB_RANGE: "a probability is outside [0, 1]",
        VALUE_PROB_SUM: "probabilities do not sum to 1 (within 1e-4)",
        VALUE_BAD_UID: "uid is missing, empty, or not a string/integer",
        VALUE_BAD_TAGS: "tags is not a list of strings",
        VALUE_BAD_INPUT_ID: "a perturbed row lacks a valid input_id",
        VALUE_EMPTY_LIST: "a list of acceptable gold answers is empty",
        VALUE_OUT_OF_SCALE: "a rating is not an integer on the field's scale",
    }
)
