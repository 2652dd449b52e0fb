"""Dynabench's v2 chat contexts load into the same ``ChatConfig`` as the v1 ``chat`` section,
with every problem at once, each with its code, path and line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tasks.config import FieldType, TaskConfigError, codes, parse_task_config
from tasks.config.chat import V2_CHAT_TYPES, ChatScale

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PERF = "perf_metric:\n  type: chrf\n  reference_name: reply\n"


def parse(text: str):
    return parse_task_config(textwrap.dedent(text))


def problems(text: str) -> list[tuple[str, str, int | None]]:
    with pytest.raises(TaskConfigError) as caught:
        parse(text)
    return [(issue.code, issue.path, issue.line) for issue in caught.value.issues]


def chat_context(kind: str, generative: str = "") -> str:
    return f"context:\n  type: {kind}\n" + generative + PERF


def test_the_v2_fixture_gives_the_task_config_of_its_v1_twin():
    v2 = parse_task_config((FIXTURES / "v2_chat_compare.yaml").read_text())
    v1 = parse_task_config((FIXTURES / "chat_compare.yaml").read_text())
    assert v2.chat == v1.chat
    assert v2.chat.models_per_turn == 2 and v2.chat.unique_models
    assert v2.chat.turn_slider == ChatScale("How much better is your choice?", 0, 100)
    assert (v2.chat.min_turns, v2.chat.max_turns) == (2, 6)
    for section in ("context", "input", "output", "metadata_create", "metadata_validate"):
        assert getattr(v2, section) == getattr(v1, section), section
    assert v2.perf_metrics == v1.perf_metrics
    assert v2.model_wrong_metric == v1.model_wrong_metric
    assert v2.model_wrong_metric.type == "ask_user"
    assert v2.goal_message == v1.goal_message and v2.creation_title == v1.creation_title
    assert v2.source_format == "v2" and v1.source_format == "v1"
    assert v2.warnings == ()


@pytest.mark.parametrize("kind", ["chat-with-instructions", "chat-random-with-instructions"])
def test_the_chat_types_are_plain_chats_without_user_input(kind):
    config = parse(chat_context(kind, "  generative_context:\n    is_unique: true\n"))
    assert config.chat.models_per_turn == 1 and config.chat.turn_choice == ()
    assert config.chat.unique_models and config.chat.hide_model_identities
    assert [(spec.name, spec.type) for spec in config.input] == [("message", FieldType.STRING)]
    assert [spec.name for spec in config.output] == ["reply"]


def test_every_chat_type_loads_with_defaults():
    for kind in V2_CHAT_TYPES:
        chat = parse(chat_context(kind)).chat
        assert chat.models_per_turn == (2 if kind == "evaluate-texts-generative" else 1)
        assert (chat.min_turns, chat.max_turns) == (1, 10) and chat.fooled_by == "worker"


def test_providers_give_the_answers_per_turn_and_prompt_the_instructions():
    generative = (
        "  generative_context:\n    type: perdi\n    artifacts:\n"
        "      providers: {openai: [], cohere: [], anthropic: []}\n"
        "      prompt: Compare the answers.\n"
    )
    chat = parse(chat_context("evaluate-texts-generative", generative)).chat
    assert chat.models_per_turn == 3 and chat.turn_choice == ("best", "tie", "all_bad")
    assert chat.instructions == "Compare the answers."


def test_every_problem_has_its_code_path_and_line():
    text = """\
    context:
      type: chat-with-instructions
      field_names_for_the_model: {message: text}
      generative_context:
        type: perdi
        distinctive: true
        artifacts:
          options_slider: wide
          min_interactions: 0
          max_interactions: 3
          memory_on: false
          consent_uri: https://example.org/consent
          colour: blue
    perf_metric:
      type: chrf
      reference_name: reply
    """
    assert sorted(problems(text), key=lambda found: found[2]) == [
        (codes.UNKNOWN_KEY, "context.field_names_for_the_model", 3),
        (codes.CHAT_NOT_SUPPORTED, "context.generative_context.distinctive", 6),
        (codes.WRONG_TYPE, "context.generative_context.artifacts.options_slider", 8),
        (codes.CHAT_OUT_OF_RANGE, "context.generative_context.artifacts.min_interactions", 9),
        (codes.CHAT_NOT_SUPPORTED, "context.generative_context.artifacts.memory_on", 11),
        (codes.CHAT_NOT_SUPPORTED, "context.generative_context.artifacts.consent_uri", 12),
        (codes.UNKNOWN_KEY, "context.generative_context.artifacts.colour", 13),
    ]


def test_turn_bounds_and_providers_are_checked_at_their_lines():
    text = """\
    context:
      type: evaluate-texts-generative
      generative_context:
        artifacts:
          providers: [one]
          options_slider: [5, 1]
          min_interactions: 4
          max_interactions: 2
    perf_metric:
      type: chrf
      reference_name: reply
    """
    assert problems(text) == [
        (codes.CHAT_OUT_OF_RANGE, "context.generative_context.artifacts.providers", 5),
        (codes.CHAT_OUT_OF_RANGE, "context.generative_context.artifacts.options_slider", 6),
        (codes.CHAT_OUT_OF_RANGE, "context.generative_context.artifacts.max_interactions", 8),
    ]


def test_image_generation_is_refused_in_a_chat_and_a_chat_outside_one():
    nibbler = chat_context("chat-with-instructions", "  generative_context:\n    type: nibbler\n")
    assert problems(nibbler) == [(codes.V2_NOT_SUPPORTED, "context.generative_context.type", 4)]
    plain = """\
    user_input: [{type: text, field_name_for_the_model: claim}]
    output: [{name: claim}]
    perf_metric: {type: chrf, reference_name: claim}
    context:
      type: plain-text
      field_names_for_the_model: {context: context}
      generative_context:
        type: perdi
    """
    assert problems(plain) == [(codes.V2_NOT_SUPPORTED, "context.generative_context", 8)]


def test_a_chat_context_and_a_chat_section_conflict():
    text = chat_context("chat-with-instructions") + "chat:\n  models_per_turn: 2\n"
    assert problems(text) == [(codes.CONFLICTING_KEYS, "chat", 6)]


def test_a_goal_with_options_does_not_apply_to_a_chat():
    goal = "goal:\n  type: multioptions\n  options: [a, b]\n  field_name_for_the_model: label\n"
    assert problems(goal + chat_context("chat-with-instructions")) == [
        (codes.V2_NOT_SUPPORTED, "goal.type", 2)
    ]


def test_a_model_evaluation_metric_other_than_ask_user_conflicts_at_its_line():
    text = chat_context("chat-with-instructions") + "model_evaluation_metric:\n"
    found = problems(text + "  metric_name: string_f1\n")
    assert (codes.CHAT_METRIC_CONFLICT, "model_evaluation_metric", 6) in found
    assert parse(text + "  metric_name: ask_user\n").chat is not None


def test_user_inputs_are_asked_at_the_end_and_outputs_stay_the_owners():
    text = """\
    user_input:
      - type: text
        field_name_for_the_model: topic
      - type: simple-slider
        options_slider: [1, 5]
        field_name_for_the_model: enjoyment
    output:
      - name: reply
        type: string
      - name: summary
        type: string
    context:
      type: chat-with-instructions
    perf_metric:
      type: chrf
      reference_name: summary
    """
    config = parse(text)
    assert [spec.name for spec in config.input] == ["message"]
    assert [spec.name for spec in config.metadata_create] == ["topic", "enjoyment"]
    assert [spec.name for spec in config.output] == ["reply", "summary"]


def test_without_perf_metric_the_usual_error_is_given():
    assert problems("context:\n  type: chat-with-instructions\n") == [
        (codes.MISSING_KEY, "perf_metric", 1)
    ]


def test_required_fields_choose_the_required_questions_and_the_message_stays_required():
    text = """\
    user_input:
      - {type: text, field_name_for_the_model: topic}
      - {type: text, field_name_for_the_model: mood}
    required_fields: [mood]
    context:
      type: chat-with-instructions
    perf_metric:
      type: chrf
      reference_name: reply
    """
    config = parse(text)
    assert [(spec.name, spec.optional) for spec in config.input] == [("message", False)]
    optional = {spec.name: spec.optional for spec in config.metadata_create}
    assert optional == {"topic": True, "mood": False}
