"""Demo extractive QA model: a sliding-window overlap span extractor, offline.

Inputs ``context`` and ``question``; outputs ``answer`` (always a substring of the context)
and ``conf`` (one float in [0, 1]). Every span of up to ``max_span_words`` context words is
scored by the question words found in a window of ``window_words`` around it, each weighted
by its rarity in the context; spans that repeat question words score nothing (answers rarely
repeat the question), and the question word (who, when, how many...) adds a bonus for spans
of the expected kind (names, numbers and years).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from models_hub.demo.common import STOPWORDS, words

TOKEN_PATTERN = re.compile(r"[\w’'-]+|[^\w\s]", re.UNICODE)
MONTHS = frozenset(
    [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
)


def stem(word: str) -> str:
    """Return a crude stem so that plurals and simple inflections match."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def expected_kind(question: str) -> str:
    """Return the answer kind the question asks for: number, date, name or other."""
    lowered = question.lower()
    if re.search(
        r"\bhow (many|much|long|old|far|large|big|tall)\b|\bwhat (percent|percentage)", lowered
    ):
        return "number"
    if re.search(r"\bwhen\b|\bwhat (year|date|century|decade|month|day)\b|\bwhich year\b", lowered):
        return "date"
    if re.search(r"\bwho\b|\bwhom\b|\bwhose\b", lowered):
        return "name"
    if re.search(r"\bwhere\b", lowered):
        return "place"
    return "other"


class QAHandler:
    """Sliding-window span extractor (see the module docstring)."""

    model_version = "demo-sliding-window-qa-1"
    batch_size = 64

    def __init__(self, window_words: int = 4, max_span_words: int = 3, kind_bonus: float = 2.0):
        self.window_words = window_words
        self.max_span_words = max_span_words
        self.kind_bonus = kind_bonus

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Return ``answer`` and ``conf`` for every (context, question) pair."""
        return [
            self.predict_one(str(item.get("context", "")), str(item.get("question", "")))
            for item in batch
        ]

    def predict_one(self, context: str, question: str) -> dict[str, Any]:
        """Answer one question from its context."""
        tokens = [(m.group(0), m.start(), m.end()) for m in TOKEN_PATTERN.finditer(context)]
        if not tokens:
            return {"answer": "", "conf": 0.0}
        lowered = [stem(text.lower()) for text, _start, _end in tokens]
        counts = Counter(lowered)
        question_stems = {stem(w) for w in words(question) if w not in STOPWORDS}
        weights = [
            (1.0 / math.log(1.0 + counts[token])) if token in question_stems else 0.0
            for token in lowered
        ]
        total_weight = sum(1.0 / math.log(2.0) for _ in question_stems) or 1.0
        kind = expected_kind(question)
        prefix = [0.0]
        for weight in weights:
            prefix.append(prefix[-1] + weight)

        best_score, best_span = -1.0, (0, 0)
        count = len(tokens)
        for start in range(count):
            for length in range(1, self.max_span_words + 1):
                end = start + length  # exclusive
                if end > count:
                    break
                span_words = lowered[start:end]
                if weights[start] or weights[end - 1]:
                    continue
                if span_words[0] in STOPWORDS or span_words[-1] in STOPWORDS:
                    continue
                if not tokens[start][0][0].isalnum() or not tokens[end - 1][0][-1].isalnum():
                    continue
                left = max(0, start - self.window_words)
                right = min(count, end + self.window_words)
                score = prefix[right] - prefix[left] - (prefix[end] - prefix[start])
                score += self.kind_bonus * self.kind_match(kind, tokens[start:end])
                score -= 0.05 * length
                if score > best_score:
                    best_score, best_span = score, (start, end)
        start, end = best_span
        answer = context[tokens[start][1] : tokens[end - 1][2]]
        conf = max(0.0, min(1.0, best_score / (total_weight + self.kind_bonus)))
        return {"answer": answer, "conf": round(conf, 6)}

    @staticmethod
    def kind_match(kind: str, span: list[tuple[str, int, int]]) -> float:
        """Return 1 when the span looks like the expected kind of answer, else 0."""
        texts = [text for text, _start, _end in span]
        has_digit = any(any(ch.isdigit() for ch in text) for text in texts)
        if kind == "number":
            return float(has_digit)
        if kind == "date":
            has_year = any(re.fullmatch(r"1\d{3}|20\d{2}|\d{1,2}(st|nd|rd|th)?", t) for t in texts)
            return float(has_year or any(t.lower() in MONTHS for t in texts))
        if kind in ("name", "place"):
            return float(all(text[:1].isupper() for text in texts))
        return 0.0
