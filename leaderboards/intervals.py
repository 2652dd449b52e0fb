"""Bootstrap intervals of the leaderboard's aggregates and rank confidence (pure: no DB).

Every Score keeps its main metric on the dataset's 1,000 seeded bootstrap resamples
(``leaderboards.scoring``: resample ``b`` of a dataset picks the same examples for every
model). This module combines them:

* ``aggregate_resamples``: the dataset-weighted aggregate of each model *per resample* --
  resample ``b`` of every scoring dataset, weighted with the dataset weights, exactly as
  the point aggregate is -- so its percentiles (``interval_bounds``, 2.5 and 97.5) are an
  interval of the aggregate itself, not an average of per-dataset bounds. With one dataset
  it is that dataset's interval.
* ``dynascore_resamples``: the Dynascore per resample, by calling
  ``leaderboards.dynascore.compute_dynascore_arrays`` once per resample with the main
  metric's aggregate replaced by its resampled value and every other metric (job metrics,
  delta metrics, other perf metrics) fixed at its value. A model without resamples (scored
  before they were kept) enters every resample with its point value, so it does not
  change the others' AMRS, and gets no interval of its own.
* ``ahead_share``: for two models, the share of resamples in which the first scores
  higher than the second; a resample where both are equal counts as half, so two
  identical models are ahead of each other in 50% of resamples. ``neighbour_confidence``
  gives it for each pair of neighbours in a ranking; a pair below ``TIE_BELOW`` (95%) is
  a *statistical tie*.

Arrays: ``resamples`` are models x datasets x resamples (or models x resamples), NaN
where a value is missing; a missing value makes the result NaN (None in the outputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from leaderboards.dynascore import MetricInput, compute_dynascore_arrays

CONFIDENCE = 0.95
# A neighbour pair whose upper model is ahead in fewer resamples than this is a tie.
TIE_BELOW = 0.95


def aggregate_resamples(resamples: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    """Return the weighted aggregate of each model on each resample (models x resamples).

    ``resamples`` is models x datasets x resamples; ``weights`` the datasets' weights (all
    positive). A model missing any dataset's resamples gets NaN throughout.
    """
    values = np.asarray(resamples, dtype=np.float64)
    count, _, width = values.shape
    if len(weights) == 0:
        return np.full((count, width), np.nan)
    weight = np.asarray(weights, dtype=np.float64)
    return np.einsum("mdb,d->mb", values, weight) / weight.sum()


def interval_bounds(
    resamples: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's percentile interval (lows, highs) of models x resamples; NaN rows NaN."""
    values = np.asarray(resamples, dtype=np.float64)
    lows = np.full(values.shape[0], np.nan)
    highs = np.full(values.shape[0], np.nan)
    if values.ndim != 2 or values.shape[1] == 0:
        return lows, highs
    complete = ~np.isnan(values).any(axis=1)
    if complete.any():
        tail = 100.0 * (1.0 - confidence) / 2.0
        bounds = np.percentile(values[complete], [tail, 100.0 - tail], axis=1)
        lows[complete] = bounds[0]
        highs[complete] = bounds[1]
    return lows, highs


def dynascore_resamples(
    models: Sequence[str],
    values: np.ndarray,
    metrics: Sequence[MetricInput],
    *,
    main_metric: str,
    main_resamples: np.ndarray,
) -> np.ndarray:
    """Return each model's Dynascore on each resample (models x resamples, NaN: none).

    ``values`` and ``metrics`` are what ``compute_dynascore_arrays`` takes (models x
    metrics, columns in ``metrics`` order); ``main_resamples`` (models x resamples) the
    main metric's aggregate per resample. Rows of NaN there keep the point value in every
    resample and come back NaN.
    """
    names = [metric.name for metric in metrics]
    main = names.index(main_metric)
    table = np.array(values, dtype=np.float64)
    resampled = np.asarray(main_resamples, dtype=np.float64)
    without = np.isnan(resampled).any(axis=1)
    filled = np.where(without[:, None], table[:, main][:, None], resampled)
    scores = np.full(resampled.shape, np.nan)
    for column in range(resampled.shape[1]):
        table[:, main] = filled[:, column]
        scores[:, column] = compute_dynascore_arrays(
            models, table, metrics, main_metric=main_metric
        ).dynascores
    scores[without] = np.nan
    return scores


def ahead_share(upper: np.ndarray, lower: np.ndarray) -> float | None:
    """Return the share (0..1) of resamples in which ``upper`` beats ``lower``; ties count half.

    None when either has a missing value or there are no resamples.
    """
    first = np.asarray(upper, dtype=np.float64)
    second = np.asarray(lower, dtype=np.float64)
    if first.size == 0 or np.isnan(first).any() or np.isnan(second).any():
        return None
    wins = np.count_nonzero(first > second)
    draws = np.count_nonzero(first == second)
    return float((wins + 0.5 * draws) / first.size)


@dataclass(frozen=True)
class PairConfidence:
    """How sure the ranking is that one model is ahead of the next one down."""

    share: float | None

    @property
    def is_tie(self) -> bool | None:
        """True below ``TIE_BELOW``; None when the share is unknown."""
        return None if self.share is None else self.share < TIE_BELOW


def neighbour_confidence(order: Sequence[int], resamples: np.ndarray) -> dict[int, PairConfidence]:
    """Return, for each model of ``order`` but the last, its ``ahead_share`` over the next.

    ``order`` lists row positions of ``resamples`` (models x resamples) from the top.
    """
    values = np.asarray(resamples, dtype=np.float64)
    positions = list(order)
    return {
        upper: PairConfidence(ahead_share(values[upper], values[lower]))
        for upper, lower in zip(positions, positions[1:], strict=False)
    }
