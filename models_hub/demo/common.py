"""Helpers shared by the demo handlers (offline, deterministic)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

WORD_PATTERN = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "he",
        "she",
        "they",
        "them",
        "his",
        "her",
        "their",
        "we",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "not",
        "no",
        "so",
        "than",
        "then",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "into",
        "out",
        "up",
        "down",
        "over",
        "under",
        "about",
        "after",
        "before",
        "during",
        "while",
        "also",
        "can",
        "could",
        "would",
        "should",
        "may",
        "might",
        "will",
        "shall",
        "just",
        "only",
        "very",
        "s",
        "t",
    ]
)


def words(text: str) -> list[str]:
    """Return the lower-cased words of ``text``."""
    return [match.group(0).lower() for match in WORD_PATTERN.finditer(text)]


def content_words(text: str) -> list[str]:
    """Return the lower-cased words of ``text`` that are not stopwords."""
    return [word for word in words(text) if word not in STOPWORDS]


def softmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Return a probability dict over the keys of ``scores``."""
    top = max(scores.values())
    exps = {label: math.exp(score - top) for label, score in scores.items()}
    total = sum(exps.values())
    return normalise({label: value / total for label, value in exps.items()})


def normalise(probabilities: Mapping[str, float]) -> dict[str, float]:
    """Round to 6 digits and put the rounding rest on the largest, so the sum is exactly 1."""
    rounded = {label: round(float(value), 6) for label, value in probabilities.items()}
    largest = max(rounded, key=lambda label: rounded[label])
    rounded[largest] = round(1.0 - sum(v for k, v in rounded.items() if k != largest), 6)
    return rounded


def argmax(probabilities: Mapping[str, float], order: Sequence[str]) -> str:
    """Return the most probable label; ties go to the earlier label in ``order``."""
    return max(order, key=lambda label: (probabilities[label], -order.index(label)))
