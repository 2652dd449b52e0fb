"""Baselines for the demo leaderboards: the floor any real model must beat. Offline, no data.

- ``MajorityClassHandler(labels, answer)`` answers ``answer`` for every input, with all the
  probability on it (a classification task's ``label`` and ``prob`` outputs).
- ``FirstSpanQAHandler`` answers a question with the passage's first span of the kind the
  question word asks for (a number, a date, a capitalised name), else the passage's first
  ``fallback_words`` words; ``conf`` is 0.5 for a span of the asked kind, else 0.1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from models_hub.demo.qa import TOKEN_PATTERN, expected_kind


class MajorityClassHandler:
    """Always the same label (the most frequent one of the data it stands for)."""

    model_version = "demo-majority-class-1"
    batch_size = 1024

    def __init__(self, labels: Sequence[str], answer: str, output: str = "label"):
        if answer not in labels:
            raise ValueError(f"{answer!r} is not one of the labels {list(labels)}")
        self.output_name = output
        self.answer = answer
        self.probabilities = {label: 1.0 if label == answer else 0.0 for label in labels}

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Return the same ``label`` and ``prob`` for every input."""
        return [{self.output_name: self.answer, "prob": dict(self.probabilities)} for _ in batch]


YEAR = re.compile(r"1\d{3}|20\d{2}")


class FirstSpanQAHandler:
    """The first number, date or name of the passage, as the question word asks."""

    model_version = "demo-first-span-qa-1"
    batch_size = 256

    def __init__(self, fallback_words: int = 3):
        self.fallback_words = fallback_words

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Return ``answer`` and ``conf`` for every (context, question) pair."""
        return [
            self.predict_one(str(item.get("context", "")), str(item.get("question", "")))
            for item in batch
        ]

    def predict_one(self, context: str, question: str) -> dict[str, Any]:
        """Answer one question: a span of the asked kind, else the passage's first words."""
        tokens = [(m.group(0), m.start(), m.end()) for m in TOKEN_PATTERN.finditer(context)]
        words = [token for token in tokens if token[0][:1].isalnum()]
        if not words:
            return {"answer": "", "conf": 0.0}
        kind = expected_kind(question)
        for index, token in enumerate(words):
            if kind == "date" and YEAR.fullmatch(token[0]):
                return self._span(context, [token], 0.5)
            if kind == "number" and any(ch.isdigit() for ch in token[0]):
                return self._span(context, [token], 0.5)
            if kind in ("name", "place") and index > 0 and token[0][:1].isupper():
                name = [token]
                for following in words[index + 1 : index + 3]:
                    if not following[0][:1].isupper():
                        break
                    name.append(following)
                return self._span(context, name, 0.5)
        return self._span(context, words[: self.fallback_words], 0.1)

    @staticmethod
    def _span(context: str, tokens: list[tuple[str, int, int]], conf: float) -> dict[str, Any]:
        return {"answer": context[tokens[0][1] : tokens[-1][2]], "conf": conf}
