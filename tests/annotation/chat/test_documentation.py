"""docs/chat.md stays true: its config parses to what it says, its example lines are the
export's layouts, and it names every config key and API error code of chat collection."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

from tasks.config import parse_task_config
from tasks.config.chat import ChatConfig

DOC = Path(__file__).resolve().parents[3] / "docs" / "chat.md"
TEXT = DOC.read_text(encoding="utf-8")


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", TEXT, flags=re.DOTALL)


def test_the_config_parses_as_documented():
    (yaml_text,) = blocks("yaml")
    chat = parse_task_config(yaml_text).chat
    assert chat.models_per_turn == 2 and chat.fooled_by == "both"
    assert chat.judge.model == "Judge" and chat.judge.fooled_word == "FOOLED"
    assert chat.turn_slider.max == 100 and chat.rating.min == 1


def test_every_config_key_is_documented():
    for field in fields(ChatConfig):
        assert f"`{field.name}`" in TEXT, field.name


def test_the_example_lines_have_the_export_layouts():
    conversation, pair = (json.loads(block) for block in blocks("json"))
    assert set(conversation) == {"messages", "metadata"}
    assert {m["role"] for m in conversation["messages"]} == {"user", "assistant"}
    assert set(pair) == {"prompt", "chosen", "rejected"}


def test_every_error_code_of_the_services_is_documented():
    sources = Path(__file__).resolve().parents[3] / "annotation" / "chat"
    used = set()
    for path in sources.glob("*.py"):
        used |= set(re.findall(r'code="(chat\.[a-z_]+)"', path.read_text(encoding="utf-8")))
    assert used
    for code in used:
        assert f"`{code}`" in TEXT, code
