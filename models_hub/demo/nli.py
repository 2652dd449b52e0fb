"""Demo NLI model: word overlap plus negation and number mismatch heuristics, offline.

Inputs ``context`` (premise) and ``hypothesis``; outputs ``label``
(entailed/neutral/contradictory) and ``prob``. Three scores go through a softmax:

- entailed grows with the share of the hypothesis' content words found in the premise;
- contradictory grows when exactly one side is negated, or when the hypothesis has a number
  or a capitalised name that the premise lacks while the rest overlaps well (a swapped fact);
- neutral is the baseline, and wins when the hypothesis talks about much that is not there.
"""

from __future__ import annotations

import re
from typing import Any

from models_hub.demo.common import argmax, content_words, softmax, words

LABELS = ("entailed", "neutral", "contradictory")
NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "cannot",
        "can't",
        "isn't",
        "wasn't",
        "aren't",
        "weren't",
        "don't",
        "doesn't",
        "didn't",
        "won't",
        "wouldn't",
        "hasn't",
        "haven't",
        "hadn't",
        "couldn't",
        "shouldn't",
        "without",
        "n't",
    ]
)
CONTRAST_WORDS = frozenset(
    [
        "only",
        "first",
        "last",
        "before",
        "after",
        "more",
        "less",
        "fewer",
        "least",
        "most",
        "never",
        "always",
        "all",
        "every",
        "entire",
    ]
)
NUMBER_PATTERN = re.compile(r"\b\d[\d,.]*\b")
NAME_PATTERN = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+")


def stem(word: str) -> str:
    """Return a crude stem so that plurals and simple inflections match."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


class NLIHandler:
    """Overlap and mismatch heuristics with weights tuned on ANLI R1 dev (shared part)."""

    model_version = "demo-overlap-nli-1"
    batch_size = 512

    def __init__(
        self,
        entail_weight: float = 4.0,
        entail_offset: float = 0.95,
        negation_weight: float = 0.6,
        mismatch_weight: float = 2.0,
    ):
        self.entail_weight = entail_weight
        self.entail_offset = entail_offset
        self.negation_weight = negation_weight
        self.mismatch_weight = mismatch_weight

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Return ``label`` and ``prob`` for every (context, hypothesis) pair."""
        return [
            self.predict_one(str(item.get("context", "")), str(item.get("hypothesis", "")))
            for item in batch
        ]

    def scores(self, premise: str, hypothesis: str) -> dict[str, float]:
        """Return the unnormalised label scores of one pair."""
        premise_stems = {stem(word) for word in content_words(premise)}
        hypothesis_stems = [stem(word) for word in content_words(hypothesis)]
        if hypothesis_stems:
            coverage = sum(word in premise_stems for word in hypothesis_stems) / len(
                hypothesis_stems
            )
        else:
            coverage = 1.0
        premise_negated = bool(NEGATIONS & set(words(premise.replace("n't", " n't"))))
        hypothesis_negated = bool(NEGATIONS & set(words(hypothesis.replace("n't", " n't"))))
        premise_numbers = set(NUMBER_PATTERN.findall(premise))
        new_numbers = [n for n in NUMBER_PATTERN.findall(hypothesis) if n not in premise_numbers]
        new_contrast = [
            word
            for word in words(hypothesis)
            if word in CONTRAST_WORDS and word not in set(words(premise))
        ]

        contradiction = 0.0
        if hypothesis_negated and not premise_negated:
            contradiction += self.negation_weight
        if new_numbers:
            contradiction += self.mismatch_weight * coverage
        if new_contrast:
            contradiction += 0.5 * self.mismatch_weight * coverage
        return {
            "entailed": self.entail_weight * (coverage - self.entail_offset),
            "neutral": 0.0,
            "contradictory": contradiction - 0.5,
        }

    def predict_one(self, premise: str, hypothesis: str) -> dict[str, Any]:
        """Classify one pair."""
        probabilities = softmax(self.scores(premise, hypothesis))
        return {"label": argmax(probabilities, LABELS), "prob": probabilities}
