"""Two small chat models for the demo chat task: offline, CPU only, nothing downloaded.

- ``RetrievalChatHandler`` answers with the sentences of ``data/chat_corpus.md`` (our own
  notes on the solar system, tea and bicycles) that share the most words with the worker's
  last message, weighted by how rare each word is in the notes. Outside those topics it says
  so, and it is easy to fool with a question whose words match the wrong note.
- ``RuleChatHandler`` answers from a few pattern rules (greetings, "what is", "how do I",
  "why", yes/no questions) and echoes the worker's words back in a confident tone; it knows
  nothing, which is what a worker should catch.

Both stream their reply word by word (``chat``; ``token_delay`` seconds apart) through the
model server's OpenAI-compatible endpoint (``models_hub.chat_serving``), and answer the native
protocol too (``predict``: ``{"reply": ...}`` for each ``message``).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "data" / "chat_corpus.md"
WORD = re.compile(r"[a-z0-9]+")
_STOPWORD_TEXT = (
    "a an and are as at be by can do does for from how i in is it its of on or so the "
    "this to what when where which who why with you your me my about tell did was were"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split(" "))


def words(text: str) -> list[str]:
    return [word for word in WORD.findall(text.lower()) if word not in STOPWORDS]


def last_user_message(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


class _Streaming:
    """Split a reply into word pieces, ``token_delay`` seconds apart."""

    token_delay = 0.0
    batch_size = 16

    def stream(self, reply: str) -> Iterator[str]:
        for index, piece in enumerate(re.findall(r"\S+\s*", reply)):
            if self.token_delay and index:
                time.sleep(self.token_delay)
            yield piece

    def chat(self, messages: list[dict], options: dict) -> Iterator[str]:
        return self.stream(self.answer(messages))

    def predict(self, batch: list[dict]) -> list[dict]:
        return [
            {"reply": self.answer([{"role": "user", "content": str(item.get("message", ""))}])}
            for item in batch
        ]

    def answer(self, messages: list[dict]) -> str:
        raise NotImplementedError


class RetrievalChatHandler(_Streaming):
    """Answers with the best-matching sentences of the shipped notes (TF-IDF overlap)."""

    model_version = "retrieval-notes-1"

    def __init__(self, token_delay: float = 0.03, sentences: int = 2, corpus: str | None = None):
        self.token_delay = float(token_delay)
        self.sentences = int(sentences)
        text = Path(corpus).read_text(encoding="utf-8") if corpus else CORPUS.read_text("utf-8")
        self.paragraphs = [
            block.strip()
            for block in text.split("\n\n")
            if block.strip() and not block.lstrip().startswith(("#", "Written for"))
        ]
        counts = Counter(word for block in self.paragraphs for word in set(words(block)))
        total = len(self.paragraphs)
        self.idf = {word: math.log((1 + total) / (1 + count)) + 1 for word, count in counts.items()}
        self.bags = [Counter(words(block)) for block in self.paragraphs]

    def score(self, query: list[str], index: int) -> float:
        bag = self.bags[index]
        return sum(self.idf.get(word, 0.0) for word in set(query) if word in bag)

    def answer(self, messages: list[dict]) -> str:
        query = words(last_user_message(messages))
        if not query:
            return "Ask me about the solar system, tea or bicycles."
        ranked = sorted(range(len(self.paragraphs)), key=lambda i: -self.score(query, i))
        best = [i for i in ranked[: self.sentences] if self.score(query, i) > 0]
        if not best:
            return (
                "I only know a little about the solar system, tea and bicycles, "
                "and nothing in my notes matches that."
            )
        return " ".join(self.paragraphs[i] for i in best)


RULES: tuple[tuple[re.Pattern, str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), reply)
    for pattern, reply in (
        (
            r"^\s*(hi|hello|hey|good (morning|evening))\b",
            "Hello! What would you like to talk about?",
        ),
        (r"\bthank", "You are welcome. Anything else?"),
        (
            r"\bwhat is (an? |the )?(?P<x>[\w\s-]+?)\??$",
            "{x} is something I know well: it is "
            "one of the most important things there is, and everyone agrees on that.",
        ),
        (
            r"\bhow (do|can|should) i (?P<x>[\w\s-]+?)\??$",
            "To {x}, start slowly, follow the usual steps, and ask someone who has done it before.",
        ),
        (
            r"\bwhy (?P<x>[\w\s-]+?)\??$",
            "Because {x} is simply how things work; it has always been that way.",
        ),
        (r"^\s*(is|are|can|does|do|will|was) ", "Yes, definitely."),
        (r"\bhow (many|much)\b", "About twelve, give or take."),
    )
)


class RuleChatHandler(_Streaming):
    """A confident pattern-rule chatbot (in the spirit of ELIZA) that knows no facts."""

    model_version = "rules-1"

    def __init__(self, token_delay: float = 0.03):
        self.token_delay = float(token_delay)

    def answer(self, messages: list[dict]) -> str:
        message = last_user_message(messages).strip()
        for pattern, reply in RULES:
            match = pattern.search(message)
            if match:
                found = {key: value.strip() for key, value in match.groupdict().items() if value}
                text = reply.format(**found)
                return text[0].upper() + text[1:]
        turn = sum(1 for item in messages if item.get("role") == "user")
        if turn > 1:
            return f"Interesting. Tell me more about why you say: {message[:120]}"
        return f"You said: {message[:120]}. I agree completely."
