"""A text model's answer as a chat reply (pure: no database, no network)."""

from __future__ import annotations

from annotation.chat.text_models import answer_text, is_text_protocol, text_input
from tasks.config import parse_task_config
from tests.factories import demo_config


def test_chat_and_endpointless_protocols_are_not_text_models():
    assert is_text_protocol("dynatask") and is_text_protocol("hf_text_classification")
    assert not is_text_protocol("openai_chat") and not is_text_protocol("none")


def test_the_message_goes_into_the_first_string_input():
    config = parse_task_config(demo_config("arena"))
    assert text_input(config, "Hello") == {"uid": "0", "message": "Hello"}


def test_one_string_output_is_the_answer_else_one_line_per_field():
    config = parse_task_config(demo_config("arena"))
    assert answer_text(config, {"reply": "Mars is red.", "extra": 1}) == "Mars is red."
    sentiment = parse_task_config(demo_config("sentiment"))  # label and prob
    output = {"label": "positive", "prob": {"negative": 0.1, "positive": 0.9}}
    assert answer_text(sentiment, output) == (
        'label: positive\nprob: {"negative": 0.1, "positive": 0.9}'
    )
