"""The ``chat`` section (v1 keys); Dynabench's v2 chat contexts are in test_chat_v2.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.config import TaskConfigError, codes, parse_task_config
from tasks.config.chat import ChatScale

DEMO = Path(__file__).resolve().parents[3] / "tasks" / "demo_data" / "chat.yaml"
BASE = """\
input:
  - name: message
    type: string
output:
  - name: reply
    type: string
perf_metric:
  type: chrf
  reference_name: reply
"""


def parse(chat: str, extra: str = ""):
    return parse_task_config(BASE + extra + "chat:\n" + chat)


def issues(chat: str, extra: str = ""):
    with pytest.raises(TaskConfigError) as caught:
        parse(chat, extra)
    return [(issue.code, issue.path, issue.line) for issue in caught.value.issues]


def test_demo_config_reads_every_key():
    chat = parse_task_config(DEMO.read_text()).chat
    assert chat.models_per_turn == 2
    assert (chat.min_turns, chat.max_turns) == (2, 8)
    assert chat.turn_choice == ("best", "tie", "all_bad")
    assert chat.turn_slider == ChatScale("How much better is your pick?", 0, 100)
    assert chat.rating.min == 1 and chat.rating.max == 5
    assert chat.free_text and chat.system_prompt and chat.hide_model_identities
    assert chat.reply_timeout == 30.0 and chat.reply_max_chars == 4000


def test_defaults_make_a_plain_chat():
    chat = parse("  instructions: Talk.\n").chat
    assert chat.models_per_turn == 1 and chat.turn_choice == ()
    assert chat.fooled_by == "worker" and chat.asks_worker and not chat.asks_judge
    assert parse_task_config(BASE).chat is None


def test_side_by_side_defaults_to_all_three_choices():
    assert parse("  models_per_turn: 3\n").chat.turn_choice == ("best", "tie", "all_bad")


def test_ranges_are_checked_with_path_and_line():
    found = issues("  models_per_turn: 9\n  min_turns: 5\n  max_turns: 2\n")
    assert (codes.CHAT_OUT_OF_RANGE, "chat.models_per_turn", 11) in found
    assert (codes.CHAT_OUT_OF_RANGE, "chat.max_turns", 13) in found


def test_unknown_keys_and_types():
    found = issues("  turns: 3\n  unique_models: sometimes\n")
    assert (codes.UNKNOWN_KEY, "chat.turns", 11) in found
    assert (codes.WRONG_TYPE, "chat.unique_models", 12) in found


def test_turn_choice_needs_best_and_several_models():
    found = issues("  models_per_turn: 2\n  turn_choice: [tie, maybe, tie]\n")
    codes_found = {code for code, _path, _line in found}
    assert codes.NOT_ONE_OF in codes_found and codes.DUPLICATE_LABEL in codes_found
    assert codes.CHAT_CHOICE_WITHOUT_BEST in codes_found
    assert issues("  turn_choice: [best]\n")[0][0] == codes.CHAT_CHOICE_WITHOUT_BEST


def test_judge_is_required_for_judge_verdicts():
    assert issues("  fooled_by: judge\n") == [(codes.MISSING_KEY, "chat.judge", 11)]
    found = issues("  fooled_by: both\n  judge: {model: Judge}\n")
    assert (codes.MISSING_KEY, "chat.judge.rubric", 12) in found
    chat = parse('  fooled_by: both\n  judge: {model: Judge, rubric: "Was it wrong?"}\n').chat
    assert chat.judge.model == "Judge" and chat.judge.fooled_word == "FOOLED"
    assert chat.asks_worker and chat.asks_judge


def test_scales_need_rising_bounds():
    found = issues("  rating: {min: 5, max: 1}\n")
    assert found[0][:2] == (codes.CHAT_OUT_OF_RANGE, "chat.rating")


def test_a_metric_other_than_ask_user_conflicts():
    extra = "model_wrong_metric:\n  type: exact_match\n  reference_names: [message]\n"
    # message is not a target here, so exact_match reports that too; the chat conflict is there.
    found = issues("  models_per_turn: 1\n", extra)
    assert any(code == codes.CHAT_METRIC_CONFLICT for code, _path, _line in found)
