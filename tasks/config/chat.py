"""The ``chat`` section of a task config: conversations with models in the loop.

Contract: ``read_chat(checker, top)`` checks the top-level ``chat`` mapping (our v1 keys) and
returns a ``ChatConfig``, or None when the section is absent or unusable; every problem goes to
the checker with a code, a path (``chat.max_turns``) and the line of the value.
``read_v2_chat(checker, context, node, kind)`` reads Dynabench's v2 chat context
(``context.type`` one of ``V2_CHAT_TYPES`` with its ``generative_context``) from the located
YAML into the same ``ChatConfig``, every problem with a code, a path under ``context`` and a
line (called by ``tasks.config.components``). Pure: no Django, no DB, no HTTP.

v1 keys (all optional but the section itself; see ``docs/chat.md``)::

    chat:
      instructions: shown beside the conversation (Markdown)
      models_per_turn: 2          # 1 = a plain chat; 2..4 = answers side by side
      min_turns: 1                # before the worker may finish
      max_turns: 10
      message_max_length: 2000    # characters of one worker message
      turn_choice: [best, tie, all_bad]   # what the worker records each turn ([] = nothing)
      turn_slider: {label: "How much better?", min: 0, max: 100}
      rating: {label: Rate the conversation, min: 1, max: 5}
      free_text: Anything else to tell us?
      fooled_by: worker           # worker | judge | both
      judge: {model: Judge, rubric: "...", fooled_word: FOOLED, not_fooled_word: NOT_FOOLED}
      hide_model_identities: true
      unique_models: false        # a worker never meets the same model twice
      system_prompt: You are a helpful assistant.
      reply_max_chars: 8000       # a streamed reply is cut (and failed) beyond this
      reply_timeout: 60           # seconds one streamed reply may take in all
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.config import codes
from tasks.config.checker import DocumentChecker, join_path
from tasks.config.located_yaml import LocatedMapping

CHOICE_BEST = "best"
CHOICE_TIE = "tie"
CHOICE_ALL_BAD = "all_bad"
TURN_CHOICES = (CHOICE_BEST, CHOICE_TIE, CHOICE_ALL_BAD)
FOOLED_BY = ("worker", "judge", "both")
MAX_MODELS_PER_TURN = 4
MAX_TURNS = 50
MAX_MESSAGE_LENGTH = 20_000
MAX_REPLY_CHARS = 100_000
MAX_REPLY_TIMEOUT = 600
CHAT_KEYS = frozenset(
    {
        "instructions",
        "models_per_turn",
        "min_turns",
        "max_turns",
        "message_max_length",
        "turn_choice",
        "turn_slider",
        "rating",
        "free_text",
        "fooled_by",
        "judge",
        "hide_model_identities",
        "unique_models",
        "system_prompt",
        "reply_max_chars",
        "reply_timeout",
    }
)
SCALE_KEYS = frozenset({"label", "min", "max"})
JUDGE_KEYS = frozenset({"model", "rubric", "fooled_word", "not_fooled_word"})
# Dynabench's v2 context types that hold a conversation (dynabench-v2.md, section 3), and
# the keys of such a context that are read (``read_v2_chat``) or refused as not supported.
V2_CHAT_TYPES = (
    "chat-with-instructions",
    "chat-random-with-instructions",
    "evaluate-texts-generative",
)
V2_CHAT_GENERATIVE_TYPES = ("perdi",)
V2_CHAT_CONTEXT_KEYS = frozenset({"type", "generative_context"})
V2_GENERATIVE_KEYS = frozenset({"type", "is_generative", "is_unique", "artifacts"})
V2_ARTIFACT_KEYS = frozenset(
    {
        "providers",
        "first_explainatory_block",
        "prompt",
        "options_slider",
        "min_interactions",
        "max_interactions",
        "memory_on",
    }
)
UNSUPPORTED_GENERATIVE_KEYS = {
    "distinctive": "drawing distinct contexts per worker does not apply to a chat here",
}
UNSUPPORTED_ARTIFACT_KEYS = {
    "consent_uri": "a consent page before the chat is not supported; put consent in the "
    "task's instructions or an external study page",
    "tags": "tags on a chat are not supported",
    "examples": "example conversations shown before the chat are not supported; write them "
    "in the instructions",
    "options": "Dynabench's preset chat options are not supported; the per-turn choice is "
    "best, tie or all bad",
    "additional_label": "an additional label on each answer is not supported",
}
METRIC_TYPE_KEYS = (("model_wrong_metric", "type"), ("model_evaluation_metric", "metric_name"))
V2_SLIDER_LABEL = "How much better is your choice?"
GENERATIVE_PATH = "context.generative_context"
ARTIFACTS_PATH = "context.generative_context.artifacts"
EMPTY = LocatedMapping({}, {})


@dataclass(frozen=True)
class ChatScale:
    """A slider or rating: an integer from ``min`` to ``max`` with a label."""

    label: str
    min: int = 0
    max: int = 100


@dataclass(frozen=True)
class ChatJudge:
    """A judge model (a registered ``openai_chat`` model of the task, by name) and its rubric.

    The judge's reply is read for ``fooled_word`` / ``not_fooled_word`` (whole words, the
    first one found wins; the longer wins at one position, so ``NOT_FOOLED`` beats ``FOOLED``).
    """

    model: str
    rubric: str
    fooled_word: str = "FOOLED"
    not_fooled_word: str = "NOT_FOOLED"


@dataclass(frozen=True)
class ChatConfig:
    """How a chat task's conversations run, what is recorded and how "fooled" is decided."""

    instructions: str = ""
    models_per_turn: int = 1
    min_turns: int = 1
    max_turns: int = 10
    message_max_length: int = 2000
    turn_choice: tuple[str, ...] = ()
    turn_slider: ChatScale | None = None
    rating: ChatScale | None = None
    free_text: str = ""
    fooled_by: str = "worker"
    judge: ChatJudge | None = None
    hide_model_identities: bool = True
    unique_models: bool = False
    system_prompt: str = ""
    reply_max_chars: int = 8000
    reply_timeout: float = 60.0

    @property
    def asks_worker(self) -> bool:
        """Whether the worker says if the models were fooled."""
        return self.fooled_by in ("worker", "both")

    @property
    def asks_judge(self) -> bool:
        """Whether the judge model says if the models were fooled."""
        return self.fooled_by in ("judge", "both")


def default_turn_choice(models_per_turn: int) -> tuple[str, ...]:
    """Best/tie/all bad with answers side by side; nothing to choose in a plain chat."""
    return TURN_CHOICES if models_per_turn > 1 else ()


# -- v1: the located ``chat`` section ---------------------------------------------------------
def read_chat(checker: DocumentChecker, top: LocatedMapping) -> ChatConfig | None:
    """Check the ``chat`` section; return its ``ChatConfig`` (None: absent or unusable)."""
    node = checker.given(top, "chat")
    if node is None:
        return None
    section = checker.mapping(node, "chat")
    if section is None:
        return None
    checker.check_keys(section, "chat", CHAT_KEYS, "chat")
    before = len(checker.issues)
    reader = _SectionReader(checker, section)
    models = reader.integer("models_per_turn", 1, 1, MAX_MODELS_PER_TURN)
    min_turns = reader.integer("min_turns", 1, 1, MAX_TURNS)
    max_turns = reader.integer("max_turns", max(10, min_turns), 1, MAX_TURNS)
    if max_turns < min_turns:
        reader.out_of_range("max_turns", f"max_turns ({max_turns}) is below min_turns")
    fooled_by = reader.one_of("fooled_by", "worker", FOOLED_BY)
    judge = _read_judge(checker, section)
    if fooled_by in ("judge", "both") and judge is None and "judge" not in section.items:
        checker.error_at(
            codes.MISSING_KEY, "chat.judge", f"fooled_by {fooled_by} needs a judge", node
        )
    config = ChatConfig(
        instructions=checker.optional_string(section, "instructions", "chat"),
        models_per_turn=models,
        min_turns=min_turns,
        max_turns=max_turns,
        message_max_length=reader.integer("message_max_length", 2000, 1, MAX_MESSAGE_LENGTH),
        turn_choice=_read_turn_choice(checker, section, models),
        turn_slider=_read_scale(checker, section, "turn_slider", (0, 100)),
        rating=_read_scale(checker, section, "rating", (1, 5)),
        free_text=checker.optional_string(section, "free_text", "chat"),
        fooled_by=fooled_by,
        judge=judge,
        hide_model_identities=reader.flag("hide_model_identities", True),
        unique_models=reader.flag("unique_models", False),
        system_prompt=checker.optional_string(section, "system_prompt", "chat"),
        reply_max_chars=reader.integer("reply_max_chars", 8000, 1, MAX_REPLY_CHARS),
        reply_timeout=float(reader.integer("reply_timeout", 60, 1, MAX_REPLY_TIMEOUT)),
    )
    return config if len(checker.issues) == before else None


class _SectionReader:
    """Typed reads of one mapping's keys with defaults and ranges, reporting on the checker."""

    def __init__(self, checker: DocumentChecker, section: LocatedMapping, path: str = "chat"):
        self.checker, self.section, self.path = checker, section, path

    def out_of_range(self, key: str, message: str) -> None:
        node = self.section.items[key]
        self.checker.error_at(codes.CHAT_OUT_OF_RANGE, join_path(self.path, key), message, node)

    def integer(self, key: str, default: int, low: int, high: int) -> int:
        node = self.checker.given(self.section, key)
        if node is None:
            return default
        value = self.checker.integer(node, join_path(self.path, key))
        if value is None:
            return default
        if not low <= value <= high:
            self.out_of_range(key, f"{key} must be from {low} to {high}, got {value}")
            return default
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.checker.optional_bool(self.section, key, self.path)
        return default if value is None else value

    def one_of(self, key: str, default: str, allowed: tuple[str, ...]) -> str:
        node = self.checker.given(self.section, key)
        if node is None:
            return default
        value = self.checker.string(node, join_path(self.path, key))
        if value is not None and value not in allowed:
            self.checker.error_at(
                codes.NOT_ONE_OF,
                join_path(self.path, key),
                f"{key} must be one of {', '.join(allowed)}, got {value[:60]!r}",
                node,
            )
            return default
        return value or default


def _read_turn_choice(
    checker: DocumentChecker, section: LocatedMapping, models: int
) -> tuple[str, ...]:
    node = checker.given(section, "turn_choice")
    if node is None:
        return default_turn_choice(models)
    items = checker.sequence(node, "chat.turn_choice")
    if items is None:
        return default_turn_choice(models)
    chosen: list[str] = []
    for index, item in enumerate(items):
        path = f"chat.turn_choice[{index}]"
        value = checker.string(item, path)
        if value is None:
            continue
        if value not in TURN_CHOICES:
            checker.error_at(
                codes.NOT_ONE_OF, path, f"a turn choice is one of {', '.join(TURN_CHOICES)}", item
            )
        elif value in chosen:
            checker.error_at(codes.DUPLICATE_LABEL, path, f"{value!r} is listed twice", item)
        else:
            chosen.append(value)
    if chosen and CHOICE_BEST not in chosen:
        checker.error_at(
            codes.CHAT_CHOICE_WITHOUT_BEST, "chat.turn_choice", "turn_choice needs best", node
        )
    if chosen and models == 1:
        checker.error_at(
            codes.CHAT_CHOICE_WITHOUT_BEST,
            "chat.turn_choice",
            "with one model per turn there is no answer to choose: leave turn_choice out",
            node,
        )
    return tuple(chosen)


def _read_scale(
    checker: DocumentChecker, section: LocatedMapping, key: str, default: tuple[int, int]
) -> ChatScale | None:
    node = checker.given(section, key)
    if node is None:
        return None
    path = join_path("chat", key)
    mapping = checker.mapping(node, path)
    if mapping is None:
        return None
    checker.check_keys(mapping, path, SCALE_KEYS, key)
    reader = _SectionReader(checker, mapping, path)
    label = checker.optional_string(mapping, "label", path) or key.replace("_", " ").capitalize()
    low = reader.integer("min", default[0], -1000, 1000)
    high = reader.integer("max", default[1], -1000, 1000)
    if high <= low:
        checker.error_at(codes.CHAT_OUT_OF_RANGE, path, f"{key}: max must exceed min", node)
        return None
    return ChatScale(label, low, high)


def _read_judge(checker: DocumentChecker, section: LocatedMapping) -> ChatJudge | None:
    node = checker.given(section, "judge")
    if node is None:
        return None
    mapping = checker.mapping(node, "chat.judge")
    if mapping is None:
        return None
    checker.check_keys(mapping, "chat.judge", JUDGE_KEYS, "chat.judge")
    words = {}
    for key in ("model", "rubric"):
        value_node = checker.required(mapping, key, "chat.judge", node)
        value = checker.string(value_node, f"chat.judge.{key}") if value_node else None
        if value_node is not None and value is not None and not value.strip():
            checker.error_at(codes.MISSING_KEY, f"chat.judge.{key}", f"{key} is empty", value_node)
        words[key] = (value or "").strip()
    fooled = checker.optional_string(mapping, "fooled_word", "chat.judge") or "FOOLED"
    not_fooled = checker.optional_string(mapping, "not_fooled_word", "chat.judge") or "NOT_FOOLED"
    if fooled.strip().lower() == not_fooled.strip().lower():
        checker.error_at(
            codes.DUPLICATE_LABEL, "chat.judge", "fooled_word and not_fooled_word are equal", node
        )
    if not (words["model"] and words["rubric"]):
        return None
    return ChatJudge(words["model"], words["rubric"], fooled.strip(), not_fooled.strip())


def check_chat_with_metric(
    checker: DocumentChecker, top: LocatedMapping, chat: ChatConfig | None, metric_type: str
) -> None:
    """A chat task decides "fooled" with ``chat.fooled_by``: its metric must be ``ask_user``.

    Checked on what is written (``model_wrong_metric.type``, or its v2 spelling
    ``model_evaluation_metric.metric_name``), so that the conflict is reported even when the
    metric has other problems (a chat has no target for ``exact_match`` to compare).
    """
    if chat is None:
        return
    written = {key: _written_metric(top, key, type_key) for key, type_key in METRIC_TYPE_KEYS}
    if metric_type != "ask_user" and not any(written.values()):
        written["model_wrong_metric"] = metric_type
    for key, value in written.items():
        if value and value != "ask_user":
            checker.error(
                codes.CHAT_METRIC_CONFLICT,
                key,
                "a chat task decides whether the model was fooled with chat.fooled_by (the "
                f"worker by default); leave {key} out (or use ask_user), not {value[:60]!r}",
                top.key_lines.get(key),
            )


def _written_metric(top: LocatedMapping, key: str, type_key: str) -> str | None:
    node = top.items.get(key)
    if node is None or not isinstance(node.value, LocatedMapping):
        return None
    type_node = node.value.items.get(type_key)
    return type_node.value if type_node is not None and isinstance(type_node.value, str) else None


# -- v2: Dynabench's chat context types -------------------------------------------------------
def read_v2_chat(checker: DocumentChecker, context: LocatedMapping, kind: str) -> ChatConfig | None:
    """Read a v2 ``context`` of a chat type (``V2_CHAT_TYPES``) as a ``ChatConfig``.

    Keys read (the ones Dynabench's code reads): ``generative_context.type`` (``perdi`` or
    absent; anything else is image generation, ``config.E082``), ``is_generative``,
    ``is_unique`` (``unique_models``) and ``artifacts``: ``providers`` (for
    ``evaluate-texts-generative``, one model per entry answers each turn, 2 to
    ``MAX_MODELS_PER_TURN``; the chat types answer with one), ``first_explainatory_block``
    or else ``prompt`` (the instructions), ``options_slider`` (``[min, max]``: the per-turn
    slider), ``min_interactions`` / ``max_interactions`` (turns) and ``memory_on`` (true:
    conversation memory is always on here). Keys of Dynabench's chat that this platform
    does not have (consent, tags, examples, options...) are ``config.E083``. Returns None
    when the context has problems (all reported, each at its line).
    """
    before = len(checker.issues)
    checker.check_keys(context, "context", V2_CHAT_CONTEXT_KEYS, f"a {kind} context")
    generative = _v2_generative(checker, context)
    artifacts = _v2_artifacts(checker, generative)
    path = ARTIFACTS_PATH
    reader = _SectionReader(checker, artifacts, path)
    models = 1
    if kind == "evaluate-texts-generative":
        models = _v2_models(checker, artifacts)
    block = checker.optional_string(artifacts, "first_explainatory_block", path)
    prompt = checker.optional_string(artifacts, "prompt", path)
    min_turns = reader.integer("min_interactions", 1, 1, MAX_TURNS)
    max_turns = reader.integer("max_interactions", max(10, min_turns), 1, MAX_TURNS)
    if max_turns < min_turns:
        reader.out_of_range(
            "max_interactions", f"max_interactions ({max_turns}) is below min_interactions"
        )
    memory = checker.optional_bool(artifacts, "memory_on", path)
    if memory is False:
        checker.error(
            codes.CHAT_NOT_SUPPORTED,
            join_path(path, "memory_on"),
            "memory_on: false (each turn answered without the conversation) is not supported: "
            "every model sees the whole conversation",
            artifacts.key_lines["memory_on"],
        )
    config = ChatConfig(
        instructions=block or prompt,
        models_per_turn=models,
        min_turns=min_turns,
        max_turns=max_turns,
        turn_choice=default_turn_choice(models),
        turn_slider=_v2_slider(checker, artifacts),
        unique_models=checker.optional_bool(generative, "is_unique", GENERATIVE_PATH) is True,
        hide_model_identities=True,
    )
    return config if len(checker.issues) == before else None


def _unsupported_keys(
    checker: DocumentChecker, mapping: LocatedMapping, path: str, unsupported: dict[str, str]
) -> None:
    for key in mapping.items:
        if key in unsupported:
            checker.error(
                codes.CHAT_NOT_SUPPORTED,
                join_path(path, key),
                f"{key}: {unsupported[key]}",
                mapping.key_lines[key],
            )


def _v2_generative(checker: DocumentChecker, context: LocatedMapping) -> LocatedMapping:
    """Check ``generative_context`` (optional); return it, or an empty mapping."""
    node = checker.given(context, "generative_context")
    generative = checker.mapping(node, GENERATIVE_PATH) if node is not None else None
    if generative is None:
        return EMPTY
    allowed = V2_GENERATIVE_KEYS | set(UNSUPPORTED_GENERATIVE_KEYS)
    checker.check_keys(generative, GENERATIVE_PATH, frozenset(allowed), "generative_context")
    _unsupported_keys(checker, generative, GENERATIVE_PATH, UNSUPPORTED_GENERATIVE_KEYS)
    type_node = checker.given(generative, "type")
    kind = checker.string(type_node, f"{GENERATIVE_PATH}.type") if type_node else None
    if kind is not None and kind not in V2_CHAT_GENERATIVE_TYPES:
        checker.error_at(
            codes.V2_NOT_SUPPORTED,
            f"{GENERATIVE_PATH}.type",
            f"generative_context type {kind[:60]!r} is image generation (such as Adversarial "
            "Nibbler), which is not supported; a chat's generative_context is perdi or has no "
            "type",
            type_node,
        )
    if checker.optional_bool(generative, "is_generative", GENERATIVE_PATH) is False:
        checker.error(
            codes.CHAT_NOT_SUPPORTED,
            f"{GENERATIVE_PATH}.is_generative",
            "a chat context is always generative: leave is_generative out or set it true",
            generative.key_lines["is_generative"],
        )
    return generative


def _v2_artifacts(checker: DocumentChecker, generative: LocatedMapping) -> LocatedMapping:
    node = checker.given(generative, "artifacts")
    artifacts = checker.mapping(node, ARTIFACTS_PATH) if node is not None else None
    if artifacts is None:
        return EMPTY
    allowed = V2_ARTIFACT_KEYS | set(UNSUPPORTED_ARTIFACT_KEYS)
    checker.check_keys(artifacts, ARTIFACTS_PATH, frozenset(allowed), "artifacts")
    _unsupported_keys(checker, artifacts, ARTIFACTS_PATH, UNSUPPORTED_ARTIFACT_KEYS)
    return artifacts


def _v2_models(checker: DocumentChecker, artifacts: LocatedMapping) -> int:
    """Models per turn of ``evaluate-texts-generative``: one per provider entry, 2 to 4."""
    node = checker.given(artifacts, "providers")
    if node is None:
        return 2
    path = f"{ARTIFACTS_PATH}.providers"
    if not isinstance(node.value, list | LocatedMapping):
        checker.wrong_type(path, "a list or a mapping of providers", node)
        return 2
    count = len(node.value) if isinstance(node.value, list) else len(node.value.items)
    if not 2 <= count <= MAX_MODELS_PER_TURN:
        checker.error_at(
            codes.CHAT_OUT_OF_RANGE,
            path,
            f"evaluate-texts-generative shows one answer per provider: 2 to "
            f"{MAX_MODELS_PER_TURN} providers, got {count}",
            node,
        )
        return 2
    return count


def _v2_slider(checker: DocumentChecker, artifacts: LocatedMapping) -> ChatScale | None:
    node = checker.given(artifacts, "options_slider")
    if node is None:
        return None
    path = f"{ARTIFACTS_PATH}.options_slider"
    items = checker.sequence(node, path)
    if items is None:
        return None
    numbers = [item.value for item in items]
    if (
        len(numbers) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers)
        or numbers[1] <= numbers[0]
    ):
        checker.error_at(
            codes.CHAT_OUT_OF_RANGE,
            path,
            "options_slider must be [min, max], two rising integers",
            node,
        )
        return None
    return ChatScale(V2_SLIDER_LABEL, numbers[0], numbers[1])
