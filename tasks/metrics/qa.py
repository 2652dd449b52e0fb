"""Answer-text metrics: SQuAD F1 and exact match, VQA accuracy, and ``string_f1``.

SQuAD: the official v1.1 evaluation script's rules (``tasks.metrics.text``): both sides
normalised, an example scores the **maximum** over its gold answers, and an answer that
normalises to nothing ("the", ".") has F1 0 (exact match 1 only against a gold that also
normalises to nothing). VQA: the official formula — with ``n`` gold answers
(10 in VQA), accuracy is the mean over the ``n`` leave-one-out subsets of
``min(1, matches among the other n-1 answers / 3)``. For fewer than four answers the
divisor 3 cannot be reached, so it becomes ``n - 1`` (and one answer means exact match);
with four or more answers this is the official formula unchanged. Normalisation is
applied to every answer, also when all gold answers agree (the official script skips it
then, which only makes a differently written correct answer score 0).

A gold given as a single string is one answer (never split into characters); a ``None``
prediction scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tasks.metrics.base import (
    Metric,
    Options,
    answer_text,
    gold_alternatives,
    mean_from_statistics,
    mean_statistics,
    means_from_statistics,
)
from tasks.metrics.text import normalize_vqa_answer, squad_exact_match, squad_token_f1

VQA_MATCHES_FOR_FULL_CREDIT = 3


def _gold_texts(gold: object) -> list[str]:
    return [text for value in gold_alternatives(gold) if (text := answer_text(value)) is not None]


def string_f1(prediction: object, gold: object) -> float:
    """Return the SQuAD token F1 (0..1) of ``prediction``, max over the gold answers.

    Used live to decide whether a model was fooled; a ``None`` prediction scores 0. An
    answer that matches a gold exactly after normalisation scores 1.0, also when both
    normalise to nothing (the ``squad_f1`` metric, following SQuAD v1.1, gives 0 there):
    a model that gives the worker's own answer is never counted as fooled.
    """
    prediction_text = answer_text(prediction)
    if prediction_text is None:
        return 0.0
    return max(
        (
            max(squad_token_f1(prediction_text, text), squad_exact_match(prediction_text, text))
            for text in _gold_texts(gold)
        ),
        default=0.0,
    )


def _squad_f1_example(prediction: object, gold: object, options: Options) -> float:
    prediction_text = answer_text(prediction)
    if prediction_text is None:
        return 0.0
    return 100.0 * max(
        (squad_token_f1(prediction_text, text) for text in _gold_texts(gold)), default=0.0
    )


def _exact_match_example(prediction: object, gold: object, options: Options) -> float:
    prediction_text = answer_text(prediction)
    if prediction_text is None:
        return 0.0
    return 100.0 * max(
        (squad_exact_match(prediction_text, text) for text in _gold_texts(gold)), default=0.0
    )


def vqa_example_accuracy(prediction: object, gold: object) -> float:
    """Return the VQA accuracy (0..1) of one prediction against its gold answers."""
    prediction_text = answer_text(prediction)
    answers = [normalize_vqa_answer(text) for text in _gold_texts(gold)]
    if prediction_text is None or not answers:
        return 0.0
    predicted = normalize_vqa_answer(prediction_text)
    if len(answers) == 1:
        return float(predicted == answers[0])
    needed = min(VQA_MATCHES_FOR_FULL_CREDIT, len(answers) - 1)
    matches = sum(answer == predicted for answer in answers)
    total = 0.0
    for answer in answers:
        # Leave this annotator out: count the matches among the other answers.
        matches_among_others = matches - (answer == predicted)
        total += min(1.0, matches_among_others / needed)
    return total / len(answers)


def _vqa_example(prediction: object, gold: object, options: Options) -> float:
    return 100.0 * vqa_example_accuracy(prediction, gold)


def _mean_metric(name: str, description: str, example_score: Any) -> Metric:
    def statistics(
        predictions: Sequence[Any], golds: Sequence[Any], options: Options
    ) -> np.ndarray:
        return mean_statistics(
            [example_score(p, g, options) for p, g in zip(predictions, golds, strict=True)]
        )

    return Metric(
        name=name,
        description=description,
        statistics=statistics,
        score_from_statistics=mean_from_statistics,
        example_score=example_score,
        scores_from_statistics=means_from_statistics,
    )


SQUAD_F1 = _mean_metric(
    "squad_f1", "SQuAD token F1, best gold answer, averaged.", _squad_f1_example
)
EXACT_MATCH = _mean_metric(
    "exact_match", "SQuAD exact match after normalisation, any gold answer.", _exact_match_example
)
VQA_ACCURACY = _mean_metric(
    "vqa_accuracy", "VQA accuracy: min(1, matching annotators / 3), leave-one-out.", _vqa_example
)
