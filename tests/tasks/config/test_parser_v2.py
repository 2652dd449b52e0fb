"""Dynabench's current ("v2") format: what each key becomes, and every problem with its code,
path and line. Our own snippets only: the shared configs are covered by the samples."""

from __future__ import annotations

import textwrap

import pytest

from tasks.config import FieldType, TaskConfigError, Verdict, parse_task_config
from tasks.config.chat import V2_CHAT_TYPES
from tasks.config.types import ChoiceWidget

GOAL = """\
goal:
  type: multioptions
  options: [yes_, no_]
  field_name_for_the_model: label
"""
TEXT_INPUT = """\
user_input:
  - type: text
    field_name_for_the_model: claim
"""
PERF = """\
perf_metric:
  type: accuracy
  reference_name: label
"""


def parse(text: str):
    return parse_task_config(textwrap.dedent(text))


def problems(text: str) -> list[tuple[str, str, int | None]]:
    with pytest.raises(TaskConfigError) as caught:
        parse(text)
    return [(issue.code, issue.path, issue.line) for issue in caught.value.issues]


def test_a_minimal_v2_config_derives_its_output_from_the_goal():
    config = parse(GOAL + TEXT_INPUT + PERF)
    assert config.source_format == "v2"
    assert [(s.name, s.type) for s in config.input] == [
        ("claim", FieldType.STRING),
        ("label", FieldType.MULTICLASS),
    ]
    assert config.goal_field.name == "label" and config.goal_field.labels == ("yes_", "no_")
    assert config.output_names == ("label",)
    assert config.model_input_names == ("uid", "claim")


def test_each_user_input_component_becomes_its_field_type_and_widget():
    config = parse(
        GOAL
        + """\
user_input:
  - {type: radio-button-options, options: [a, b], field_name_for_the_model: r}
  - {type: horizontal-radio-button-options, options: [a, b], field_name_for_the_model: h}
  - {type: drop-down-single-select, options: [a, b], field_name_for_the_model: d}
  - {type: multioptions, options: [a, {label: b}], field_name_for_the_model: m}
  - {type: input-with-instructions, instructions: Read this, field_name_for_the_model: i}
  - {type: simple-slider, options_slider: ["-3", "3"], field_name_for_the_model: s}
  - {type: simple-slider, options_slider: [low, high], field_name_for_the_model: w}
"""
        + PERF
    )
    fields = {spec.name: spec for spec in config.input}
    assert fields["r"].widget == ChoiceWidget.RADIO
    assert fields["h"].widget == ChoiceWidget.INLINE_RADIO
    assert fields["d"].widget == ChoiceWidget.DROPDOWN
    assert (fields["m"].type, fields["m"].labels) == (FieldType.MULTILABEL, ("a", "b"))
    assert fields["i"].instructions == "Read this"
    assert (fields["s"].min_value, fields["s"].max_value) == (-3, 3)
    assert (fields["w"].min_value, fields["w"].scale_labels) == (0, ("low", "high"))


def test_required_fields_make_the_others_optional_and_metadata_inputs_move():
    config = parse(
        GOAL
        + """\
user_input:
  - {type: text, field_name_for_the_model: claim}
  - {type: text, field_name_for_the_model: note}
  - {type: text, field_name_for_the_model: mood, metadata: true}
required_fields: [claim, label]
"""
        + PERF
    )
    assert {s.name: s.optional for s in config.input} == {
        "claim": False,
        "note": True,
        "label": False,
    }
    assert [(s.name, s.optional) for s in config.metadata_create] == [("mood", True)]


def test_the_model_side_keys():
    config = parse(
        GOAL
        + TEXT_INPUT
        + """\
context:
  type: plain-text
  field_names_for_the_model:
    passage: premise
model_input:
  hypothesis: claim
model_output:
  model_prediction_label: prediction
cast_output:
  yes_: 1
  no_: 0
model_evaluation_metric:
  metric_name: exact_match
validation_options: [Flag, correct]
external_validator:
  url: https://survey.example.org/
  required_number_of_examples: 4
perf_metric:
  - {type: accuracy, reference_name: label}
  - {type: macro_f1, reference_name: label}
evaluation:
  main_perf_metric: macro_f1
"""
    )
    assert config.model_request_names == ("uid", "hypothesis", "premise")
    assert config.model_maps.answer_keys == {"label": "prediction"}
    assert config.model_maps.cast == {"1": "yes_", "0": "no_"}
    assert config.model_wrong_metric.reference_names == ("label",)
    assert config.verdicts == (Verdict.FLAGGED, Verdict.CORRECT)
    assert config.external_validator.required_examples == 4
    assert [metric.name for metric in config.perf_metrics] == ["macro_f1", "accuracy"]
    assert config.metrics()[0].is_main and config.metrics()[0].name == "macro_f1"


def test_both_spellings_of_the_external_validator_count_must_agree():
    base = GOAL + TEXT_INPUT + PERF + "external_validator:\n  url: https://s.org/\n"
    same = parse(base + "  total_required_examples: 3\n  required_number_of_examples: 3\n")
    assert same.external_validator.required_examples == 3
    assert problems(base + "  total_required_examples: 3\n  required_number_of_examples: 4\n") == [
        ("config.E085", "external_validator.required_number_of_examples", 14)
    ]


def test_upstream_slips_load_with_warnings():
    config = parse(
        GOAL.replace("multioptions", "radio-button-options")
        + TEXT_INPUT
        + PERF
        + """\
goal_message: Something else
model_input:
  label: label
metadata:
  validate:
    - {name: fixed, type: multiclass, labels: [yes_, maybe], validated_label_condition: incorrect}
"""
    )
    assert [(w.code, w.path) for w in config.warnings] == [
        ("config.W003", "model_input.label"),
        ("config.W001", "metadata.validate[0].labels"),
    ]


def test_every_v2_problem_is_reported_at_once_with_its_code_and_line():
    text = """\
goal:
  type: double-multioptions
context:
  type: describe-image
user_input:
  - type: textbox
    field_name_for_the_model: a
  - type: audio
    field_name_for_the_model: b
  - type: text
    field_name_for_the_model: c
    options: [x]
  - type: simple-slider
    field_name_for_the_model: d
    options_slider: [9, 1]
input:
  - {name: e, type: string}
model_input:
  k: nowhere
submit_config: {allow_hf: true}
evaluation:
  inference_url: https://x.org
output: [{name: c}]
perf_metric:
  type: accuracy
  reference_name: c
"""
    assert problems(text) == [
        ("config.E082", "goal.type", 2),
        ("config.E082", "context.type", 4),
        ("config.E081", "user_input[0].type", 6),
        ("config.E082", "user_input[1].type", 8),
        ("config.E020", "user_input[2].options", 12),
        ("config.E087", "user_input[3].options_slider", 15),
        ("config.E080", "input", 16),
        ("config.E084", "model_input.k", 19),
        ("config.E082", "submit_config", 20),
        ("config.E082", "evaluation.inference_url", 22),
    ]


@pytest.mark.parametrize("context_type", V2_CHAT_TYPES)
def test_chat_contexts_load_as_chats(context_type):
    # More in test_chat_v2.py; a chat's user inputs are asked at the end of the conversation.
    config = parse(
        TEXT_INPUT + "perf_metric: {type: chrf, reference_name: reply}\n"
        f"context:\n  type: {context_type}\n"
    )
    assert config.chat is not None and config.source_format == "v2"
    assert [spec.name for spec in config.input] == ["message"]
    assert [spec.name for spec in config.metadata_create] == ["claim"]


def test_a_generative_context_outside_a_chat_is_not_supported():
    base = GOAL + TEXT_INPUT + PERF + "context:\n  type: plain-text\n"
    base += "  field_names_for_the_model: {context: context}\n  generative_context:\n"
    for kind in ("perdi", "nibbler"):
        assert problems(base + f"    type: {kind}\n") == [
            ("config.E082", "context.generative_context", 15)
        ]


def test_model_maps_refuse_collisions_and_unknown_labels():
    base = GOAL + TEXT_INPUT + PERF
    context = "context:\n  type: plain-text\n  field_names_for_the_model: {context: text}\n"
    assert problems(base + context + "model_input:\n  text: claim\n") == [
        ("config.E084", "model_input.text", 15)
    ]
    assert problems(base + "cast_output:\n  maybe: 3\n") == [
        ("config.E084", "cast_output.maybe", 12)
    ]


def test_model_evaluation_metric_must_agree_with_model_wrong_metric():
    base = GOAL + TEXT_INPUT + PERF
    agreeing = base + (
        "model_wrong_metric: {type: exact_match, reference_names: [label]}\n"
        "model_evaluation_metric: {metric_name: exact_match}\n"
    )
    assert parse(agreeing).model_wrong_metric.type == "exact_match"
    assert problems(
        base + "model_wrong_metric: {type: ask_user}\n"
        "model_evaluation_metric: {metric_name: exact_match}\n"
    ) == [("config.E085", "model_evaluation_metric", 12)]


def test_a_main_perf_metric_that_names_nothing():
    text = GOAL + TEXT_INPUT + PERF + "evaluation:\n  main_perf_metric: bleu\n"
    assert problems(text) == [("config.E086", "evaluation.main_perf_metric", 12)]


def test_v2_keys_in_a_v1_config_are_refused():
    text = "input: [{name: t, type: string}]\noutput: [{name: t}]\n"
    text += "perf_metric: {type: exact_match, reference_name: t}\nrequired_fields: [t]\n"
    assert problems(text) == [("config.E080", "required_fields", 4)]


def test_a_v1_config_may_use_the_model_side_keys():
    config = parse(
        "input: [{name: t, type: string}, {name: y, type: multiclass, labels: [a, b]}]\n"
        "output: [{name: y}]\nperf_metric: {type: accuracy, reference_name: y}\n"
        "model_input: {text: t}\ncast_output: {a: 0, b: 1}\n"
    )
    assert config.source_format == "v1"
    assert config.model_request_names == ("uid", "text")
    assert config.model_maps.prediction_field == "y"
