"""The ``Metric`` type shared by every metric, and the value helpers they use.

A metric turns each example into a row of *sufficient statistics* and turns the column
sums of those rows into a score. Averages (accuracy, SQuAD) use ``[score, 1]`` rows;
corpus metrics (F1, BLEU, chrF) use their counts. The same rows then serve the corpus
score, per-tag scores and bootstrap resampling without re-reading the text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from tasks.metrics.errors import EMPTY_INPUT, LENGTH_MISMATCH, MetricInputError

Options = Mapping[str, object]
StatisticsFunction = Callable[[Sequence[Any], Sequence[Any], Options], np.ndarray]
ScoreFromStatisticsFunction = Callable[[np.ndarray, Options], float]
ExampleScoreFunction = Callable[[Any, Any, Options], float]
BatchScoreFunction = Callable[[np.ndarray, Options], np.ndarray]

NO_OPTIONS: Options = MappingProxyType({})


@dataclass(frozen=True)
class Metric:
    """A perf metric: scores 0..100 from predictions and golds.

    ``statistics`` maps the examples to an ``(n_examples, k)`` array; the score is
    ``score_from_statistics(column sums)``. ``example_score`` (0..100) scores one example
    for the per-example browser; when ``is_decomposable`` the corpus score is exactly the
    mean of the example scores, otherwise it is a corpus statistic (F1, BLEU, chrF) and
    the example score is only indicative. ``scores_from_statistics``, when given, scores
    many summed rows at once (``(n_rows, k)`` in, ``n_rows`` scores out, each equal to
    ``score_from_statistics`` of its row): bootstrap resampling uses it.
    """

    name: str
    description: str
    statistics: StatisticsFunction
    score_from_statistics: ScoreFromStatisticsFunction
    example_score: ExampleScoreFunction | None = None
    is_decomposable: bool = True
    scores_from_statistics: BatchScoreFunction | None = None

    def batch_scores(self, summed_rows: np.ndarray, options: Options | None = None) -> np.ndarray:
        """Return the score of each row of summed statistics (``(n_rows, k)`` in)."""
        chosen = options or NO_OPTIONS
        rows = np.asarray(summed_rows, dtype=np.float64)
        if self.scores_from_statistics is not None:
            return np.asarray(self.scores_from_statistics(rows, chosen), dtype=np.float64)
        return np.fromiter(
            (self.score_from_statistics(row, chosen) for row in rows),
            dtype=np.float64,
            count=rows.shape[0],
        )

    def compute_statistics(
        self,
        predictions: Sequence[Any],
        golds: Sequence[Any],
        *,
        options: Options | None = None,
    ) -> np.ndarray:
        """Return the ``(n_examples, k)`` statistics after checking the inputs."""
        check_inputs(predictions, golds)
        return self.statistics(predictions, golds, options or NO_OPTIONS)

    def score(
        self,
        predictions: Sequence[Any],
        golds: Sequence[Any],
        *,
        options: Options | None = None,
    ) -> float:
        """Return the corpus score (0..100) of ``predictions`` against ``golds``."""
        statistics = self.compute_statistics(predictions, golds, options=options)
        return float(self.score_from_statistics(statistics.sum(axis=0), options or NO_OPTIONS))

    def per_example_scores(
        self,
        predictions: Sequence[Any],
        golds: Sequence[Any],
        *,
        options: Options | None = None,
    ) -> list[float] | None:
        """Return one score (0..100) per example, or None if the metric has none."""
        if self.example_score is None:
            return None
        check_inputs(predictions, golds)
        chosen = options or NO_OPTIONS
        return [
            float(self.example_score(prediction, gold, chosen))
            for prediction, gold in zip(predictions, golds, strict=True)
        ]


def check_inputs(predictions: Sequence[Any], golds: Sequence[Any]) -> None:
    """Raise ``MetricInputError`` unless there are as many predictions as golds, and some.

    An empty dataset is an error rather than a 0.0 score: a zero would rank a model on
    nothing and hide an upload or filtering bug.
    """
    if len(predictions) != len(golds):
        raise MetricInputError(
            f"{len(predictions)} predictions for {len(golds)} gold answers; "
            "every example needs exactly one prediction",
            code=LENGTH_MISMATCH,
        )
    if len(golds) == 0:
        raise MetricInputError("there are no examples to score", code=EMPTY_INPUT)


def mean_statistics(scores: Sequence[float]) -> np.ndarray:
    """Return ``[score, 1]`` rows, whose column sums give the mean of ``scores``."""
    rows = np.ones((len(scores), 2), dtype=np.float64)
    rows[:, 0] = scores
    return rows


def mean_from_statistics(summed: np.ndarray, options: Options) -> float:
    """Return the mean from summed ``[score, 1]`` rows (0.0 for no examples)."""
    del options  # same signature as every score_from_statistics
    return float(summed[0] / summed[1]) if summed[1] else 0.0


def means_from_statistics(summed_rows: np.ndarray, options: Options) -> np.ndarray:
    """Return ``mean_from_statistics`` of every row of summed ``[score, 1]`` rows."""
    del options
    totals = summed_rows[:, 0]
    counts = summed_rows[:, 1]
    means = np.zeros(summed_rows.shape[0], dtype=np.float64)
    np.divide(totals, counts, out=means, where=counts != 0)
    return means


def is_alternatives(gold: object) -> bool:
    """Return True when ``gold`` is a list of acceptable answers rather than one answer."""
    return isinstance(gold, list | tuple)


def gold_alternatives(gold: object) -> list[object]:
    """Return the acceptable answers of ``gold``: the list itself, or ``[gold]``.

    A string is always one answer, never a sequence of characters.
    """
    return list(gold) if is_alternatives(gold) else [gold]


def answer_text(value: object) -> str | None:
    """Return the text of an answer value, or None when there is no answer.

    A ``context_string_selection`` value may arrive as ``{"text": ..., "start": ...}``;
    its text is what is scored.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and "text" in value:
        text = value["text"]
        return None if text is None else str(text)
    return str(value)
