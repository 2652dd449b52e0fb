"""The ``arena`` section of a task config: blind pairwise battles between the task's models.

Contract: ``read_arena(checker, top, chat)`` checks the top-level ``arena`` mapping and
returns ``(ArenaConfig, ChatConfig)``: the arena rules and the chat the battles run as (two
hidden seats). Without a ``chat`` section the battles use ``ARENA_CHAT`` (two seats, no choice
per turn); a ``chat`` section must keep two seats and hidden identities, and loses its
default per-turn choice (the vote is the choice). ``(None, chat)`` when ``arena`` is absent or
unusable; every problem goes to the checker with a code, a path (``arena.daily_vote_cap``)
and the line of the value. Pure: no Django, no DB, no HTTP.

Keys, all optional (see ``docs/leaderboard.md``, "Arena ratings")::

    arena:
      pairing: uniform            # uniform | uncertain (favours pairs whose order is unsure)
      min_battles_per_pair: 1     # a pair below this is drawn before any other
      daily_vote_cap: 100         # votes per worker per UTC day; 0 = no cap
      identity_words: [GPT, ...]  # an answer naming one voids the vote (the models' names too)
      void_identity_votes: true
      style_control: false        # answer length as a covariate on the board
      flag_min_votes: 10          # a rater is judged for agreement from this many votes on
      flag_spread: 3.0            # robust standard deviations under the median that flag one
      sealed: false               # battles and conversations for the owners only
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tasks.config import codes
from tasks.config.chat import ChatConfig
from tasks.config.checker import DocumentChecker, join_path
from tasks.config.located_yaml import LocatedMapping

PAIRINGS = ("uniform", "uncertain")
ARENA_KEYS = frozenset(
    {
        "pairing",
        "min_battles_per_pair",
        "daily_vote_cap",
        "identity_words",
        "void_identity_votes",
        "style_control",
        "flag_min_votes",
        "flag_spread",
        "sealed",
    }
)
MAX_MIN_BATTLES = 1000
MAX_DAILY_CAP = 100_000
MAX_IDENTITY_WORDS = 500
MAX_IDENTITY_WORD_LENGTH = 100
# Names a chat model commonly gives for itself; the owner's list replaces them.
DEFAULT_IDENTITY_WORDS = (
    "ChatGPT",
    "GPT-4",
    "GPT-3.5",
    "OpenAI",
    "Claude",
    "Anthropic",
    "Gemini",
    "Bard",
    "Google DeepMind",
    "LLaMA",
    "Meta AI",
    "Mistral",
    "Mixtral",
    "Qwen",
    "DeepSeek",
    "Vicuna",
)
# The chat a battle runs as when the config has no ``chat`` section.
ARENA_CHAT = ChatConfig(
    models_per_turn=2, min_turns=1, max_turns=10, turn_choice=(), hide_model_identities=True
)


@dataclass(frozen=True)
class ArenaConfig:
    """The arena's rules; each has the default a task gets when it leaves the key out."""

    pairing: str = "uniform"
    min_battles_per_pair: int = 1
    daily_vote_cap: int = 100
    identity_words: tuple[str, ...] = DEFAULT_IDENTITY_WORDS
    void_identity_votes: bool = True
    style_control: bool = False
    flag_min_votes: int = 10
    flag_spread: float = 3.0
    sealed: bool = False


def read_arena(
    checker: DocumentChecker, top: LocatedMapping, chat: ChatConfig | None
) -> tuple[ArenaConfig | None, ChatConfig | None]:
    """Check the ``arena`` section; return the arena rules and the chat battles run as."""
    node = checker.given(top, "arena")
    if node is None:
        return None, chat
    section = checker.mapping(node, "arena")
    if section is None:
        return None, chat
    checker.check_keys(section, "arena", ARENA_KEYS, "arena")
    before = len(checker.issues)
    config = ArenaConfig(
        pairing=_one_of(checker, section, "pairing", "uniform", PAIRINGS),
        min_battles_per_pair=_integer(
            checker, section, "min_battles_per_pair", 1, 0, MAX_MIN_BATTLES
        ),
        daily_vote_cap=_integer(checker, section, "daily_vote_cap", 100, 0, MAX_DAILY_CAP),
        identity_words=_identity_words(checker, section),
        void_identity_votes=_flag(checker, section, "void_identity_votes", True),
        style_control=_flag(checker, section, "style_control", False),
        flag_min_votes=_integer(checker, section, "flag_min_votes", 10, 1, 10_000),
        flag_spread=_spread(checker, section),
        sealed=_flag(checker, section, "sealed", False),
    )
    battle_chat = _battle_chat(checker, top, chat)
    if len(checker.issues) != before:
        return None, chat
    return config, battle_chat


def _battle_chat(
    checker: DocumentChecker, top: LocatedMapping, chat: ChatConfig | None
) -> ChatConfig | None:
    """The chat of a battle: two hidden seats; the vote replaces the per-turn choice."""
    if chat is None:
        return None if "chat" in top.items else ARENA_CHAT
    node = top.items["chat"]
    written = node.value.items if isinstance(node.value, LocatedMapping) else {}
    if chat.models_per_turn != 2:
        checker.error_at(
            codes.ARENA_CHAT_CONFLICT,
            "chat.models_per_turn",
            f"an arena battle has two models: set chat.models_per_turn to 2 "
            f"(it is {chat.models_per_turn})",
            written.get("models_per_turn", node),
        )
    if not chat.hide_model_identities:
        checker.error_at(
            codes.ARENA_CHAT_CONFLICT,
            "chat.hide_model_identities",
            "an arena hides the models until the vote: leave hide_model_identities true",
            written.get("hide_model_identities", node),
        )
    return chat if "turn_choice" in written else replace(chat, turn_choice=())


def _one_of(checker, section, key: str, default: str, allowed: tuple[str, ...]) -> str:
    node = checker.given(section, key)
    if node is None:
        return default
    value = checker.string(node, join_path("arena", key))
    if value is not None and value not in allowed:
        checker.error_at(
            codes.NOT_ONE_OF,
            join_path("arena", key),
            f"{key} must be one of {', '.join(allowed)}, got {value[:60]!r}",
            node,
        )
        return default
    return value or default


def _integer(checker, section, key: str, default: int, low: int, high: int) -> int:
    node = checker.given(section, key)
    if node is None:
        return default
    value = checker.integer(node, join_path("arena", key))
    if value is None:
        return default
    if not low <= value <= high:
        checker.error_at(
            codes.ARENA_OUT_OF_RANGE,
            join_path("arena", key),
            f"{key} must be from {low} to {high}, got {value}",
            node,
        )
        return default
    return value


def _flag(checker, section, key: str, default: bool) -> bool:
    value = checker.optional_bool(section, key, "arena")
    return default if value is None else value


def _spread(checker, section) -> float:
    node = checker.given(section, "flag_spread")
    if node is None:
        return 3.0
    value = checker.number(node, "arena.flag_spread")
    if value is None:
        return 3.0
    if not 0.5 <= value <= 10.0:
        checker.error_at(
            codes.ARENA_OUT_OF_RANGE,
            "arena.flag_spread",
            f"flag_spread must be from 0.5 to 10, got {value:g}",
            node,
        )
        return 3.0
    return value


def _identity_words(checker, section) -> tuple[str, ...]:
    node = checker.given(section, "identity_words")
    if node is None:
        return DEFAULT_IDENTITY_WORDS
    items = checker.sequence(node, "arena.identity_words")
    if items is None:
        return DEFAULT_IDENTITY_WORDS
    if len(items) > MAX_IDENTITY_WORDS:
        checker.error_at(
            codes.ARENA_OUT_OF_RANGE,
            "arena.identity_words",
            f"at most {MAX_IDENTITY_WORDS} identity words, got {len(items)}",
            node,
        )
        return DEFAULT_IDENTITY_WORDS
    words: list[str] = []
    for index, item in enumerate(items):
        path = f"arena.identity_words[{index}]"
        value = checker.string(item, path)
        if value is None:
            continue
        value = value.strip()
        if not value or len(value) > MAX_IDENTITY_WORD_LENGTH:
            checker.error_at(
                codes.ARENA_OUT_OF_RANGE,
                path,
                f"an identity word has 1 to {MAX_IDENTITY_WORD_LENGTH} characters",
                item,
            )
        elif value.lower() in {word.lower() for word in words}:
            checker.error_at(codes.DUPLICATE_LABEL, path, f"{value!r} is listed twice", item)
        else:
            words.append(value)
    return tuple(words)
