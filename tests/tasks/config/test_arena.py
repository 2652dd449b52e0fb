"""The ``arena`` section: defaults, ranges, and the chat a battle runs as."""

from __future__ import annotations

import pytest

from tasks.config import TaskConfigError, codes, parse_task_config
from tasks.config.arena import ARENA_CHAT, DEFAULT_IDENTITY_WORDS, ArenaConfig

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


def parse(arena: str, extra: str = ""):
    return parse_task_config(BASE + extra + "arena:\n" + arena)


def issues(arena: str, extra: str = ""):
    with pytest.raises(TaskConfigError) as caught:
        parse(arena, extra)
    return [(issue.code, issue.path, issue.line) for issue in caught.value.issues]


def test_an_empty_arena_has_every_default_and_two_hidden_seats():
    config = parse_task_config(BASE + "arena: {}\n")
    assert config.arena == ArenaConfig()
    assert config.arena.identity_words == DEFAULT_IDENTITY_WORDS
    assert config.chat == ARENA_CHAT
    assert config.chat.models_per_turn == 2 and config.chat.hide_model_identities
    assert config.chat.turn_choice == ()


def test_every_key_is_read():
    config = parse(
        "  pairing: uncertain\n  min_battles_per_pair: 3\n  daily_vote_cap: 0\n"
        "  identity_words: [Notes, pattern rule]\n  void_identity_votes: false\n"
        "  style_control: true\n  flag_min_votes: 4\n  flag_spread: 2.5\n  sealed: true\n"
    )
    assert config.arena == ArenaConfig(
        pairing="uncertain",
        min_battles_per_pair=3,
        daily_vote_cap=0,
        identity_words=("Notes", "pattern rule"),
        void_identity_votes=False,
        style_control=True,
        flag_min_votes=4,
        flag_spread=2.5,
        sealed=True,
    )


def test_no_arena_leaves_the_config_alone():
    assert parse_task_config(BASE).arena is None


@pytest.mark.parametrize(
    ("line", "code", "path"),
    [
        ("daily_vote_cap: -1", codes.ARENA_OUT_OF_RANGE, "arena.daily_vote_cap"),
        ("min_battles_per_pair: 5000", codes.ARENA_OUT_OF_RANGE, "arena.min_battles_per_pair"),
        ("flag_spread: 0.1", codes.ARENA_OUT_OF_RANGE, "arena.flag_spread"),
        ("pairing: elo", codes.NOT_ONE_OF, "arena.pairing"),
        ("sealed: maybe", codes.WRONG_TYPE, "arena.sealed"),
        ("bogus: 1", codes.UNKNOWN_KEY, "arena.bogus"),
        ("identity_words: [GPT, gpt]", codes.DUPLICATE_LABEL, "arena.identity_words[1]"),
        ("identity_words: ['  ']", codes.ARENA_OUT_OF_RANGE, "arena.identity_words[0]"),
    ],
)
def test_a_bad_rule_is_located(line, code, path):
    # BASE has 9 lines, "arena:" is line 10, the rule line 11.
    assert issues(f"  {line}\n") == [(code, path, 11)]


def test_a_chat_section_must_keep_two_hidden_seats():
    chat = "chat:\n  models_per_turn: 3\n  hide_model_identities: false\n"
    found = issues("  pairing: uniform\n", extra=chat)
    assert (codes.ARENA_CHAT_CONFLICT, "chat.models_per_turn", 11) in found
    assert (codes.ARENA_CHAT_CONFLICT, "chat.hide_model_identities", 12) in found


def test_a_chat_section_loses_its_default_turn_choice_but_keeps_a_written_one():
    plain = parse("  pairing: uniform\n", extra="chat:\n  models_per_turn: 2\n  max_turns: 3\n")
    assert plain.chat.turn_choice == () and plain.chat.max_turns == 3
    written = parse(
        "  pairing: uniform\n", extra="chat:\n  models_per_turn: 2\n  turn_choice: [best, tie]\n"
    )
    assert written.chat.turn_choice == ("best", "tie")
