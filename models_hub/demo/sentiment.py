"""Demo sentiment model: VADER (``vaderSentiment``), offline, for the Dynabench sentiment task.

Input ``statement``; outputs ``label`` (negative/positive/neutral) and ``prob``. VADER's
compound score c in [-1, 1] is turned into three scores, positive ``k·(c - m)``, negative
``k·(-c - m)`` and neutral 0, and a softmax; so the label is neutral while |c| <= m.
"""

from __future__ import annotations

from typing import Any

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from models_hub.demo.common import argmax, softmax

LABELS = ("negative", "positive", "neutral")


class SentimentHandler:
    """VADER with a neutral band tuned on TweetEval (see docs/demo-models.md)."""

    model_version = "demo-vader-3.3.2"
    batch_size = 256

    def __init__(self, neutral_margin: float = 0.4, sharpness: float = 6.0):
        self.analyzer = SentimentIntensityAnalyzer()
        self.neutral_margin = neutral_margin
        self.sharpness = sharpness

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Return ``label`` and ``prob`` for every ``statement``."""
        return [self.predict_one(str(item.get("statement", ""))) for item in batch]

    def predict_one(self, statement: str) -> dict[str, Any]:
        """Classify one statement."""
        compound = self.analyzer.polarity_scores(statement)["compound"]
        margin, sharpness = self.neutral_margin, self.sharpness
        probabilities = softmax(
            {
                "negative": sharpness * (-compound - margin),
                "positive": sharpness * (compound - margin),
                "neutral": 0.0,
            }
        )
        return {"label": argmax(probabilities, LABELS), "prob": probabilities}
