"""Bootstrap intervals of the leaderboard's aggregates and rank confidence (pure: no DB).

Every Score keeps its main metric on the dataset's 1,000 seeded bootstrap resamples
(``leaderboards.scoring``: resample ``b`` of a dataset picks the same examples for every
model). This module combines them:

* ``aggregate_resamples``: the dataset-weighted aggregate of each model *per resample* --
  resample ``b`` of every scoring dataset, weighted with the dataset weights, exactly as
  the point aggregate is -- so its percentiles (``interval_bounds``, 2.5 and 97.5) are an
  interval of the aggregate itself, not an average of per-dataset bounds. With one dataset
  it is that dataset's interval.
* ``dynascore_resamples``: the Dynascore per resample, with the main metric's aggregate
  moved to its resampled value and every other metric (job metrics, delta metrics, other
  perf metrics) and the board's conversion rates (AMRS) held at their point values. A
  model without resamples (scored before they were kept) gets no interval.
* ``ahead_share``: for two models, the share of resamples in which the first scores
  higher than the second; a resample where both are equal counts as half, so two
  identical models are ahead of each other in 50% of resamples. ``neighbour_confidence``
  gives it for each pair of neighbours in a ranking. The test is two-sided: a pair is a
  *statistical tie* when neither model is ahead in ``TIE_BELOW`` (95%) of resamples; when
  the lower model is ahead in 95% or more, *the next model is ahead*, not a tie.

Arrays: ``resamples`` are models x datasets x resamples (or models x resamples), NaN
where a value is missing; a missing value makes the result NaN (None in the outputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from leaderboards.dynascore import (
    DEFAULT_EPSILON,
    HIGHER,
    DynascoreArrays,
    MetricInput,
    compute_dynascore_arrays,
)
from tasks.metrics.jobs import quantize_to_resolution

CONFIDENCE = 0.95
# A neighbour pair in which neither model is ahead in this share of resamples is a tie.
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
    epsilon: float = DEFAULT_EPSILON,
) -> np.ndarray:
    """Return each model's Dynascore on each resample (models x resamples, NaN: none).

    ``values`` and ``metrics`` are what ``compute_dynascore_arrays`` takes (models x
    metrics, columns in ``metrics`` order); ``main_resamples`` (models x resamples) the
    main metric's aggregate per resample. Rows of NaN there, and incomplete models, come
    back NaN.

    The board's conversion rates (the AMRS of every metric, from the point values) and
    every metric but the main one stay as they are: only the main metric's aggregate moves
    from resample to resample. A model's Dynascore on resample ``b`` is then its point
    Dynascore plus the main metric's normalised weight times the change of its converted
    main value, so the interval says how far sampling alone moves the model's own score on
    this board's scale.
    """
    point = compute_dynascore_arrays(
        models, values, metrics, main_metric=main_metric, epsilon=epsilon
    )
    main = next(metric for metric in metrics if metric.name == main_metric)
    return shifted_dynascores(point, main, main_resamples)


def shifted_dynascores(
    point: DynascoreArrays,
    main: MetricInput,
    main_resamples: np.ndarray,
    positions: np.ndarray | None = None,
) -> np.ndarray:
    """Return ``dynascore_resamples`` from the point computation ``point`` of the board.

    With ``positions``, ``main_resamples`` holds the rows of those model positions only.
    """
    rows = slice(None) if positions is None else positions
    column = point.metrics.index(main.name)
    weight = point.normalized_weights[main.name]
    resampled = np.asarray(main_resamples, dtype=np.float64)
    moved = _converted_main(main, resampled) - point.converted[rows, column][:, None]
    # NaN rows (incomplete models, models without resamples) stay NaN.
    return point.dynascores[rows][:, None] + weight * moved


def shifted_bounds(
    point: DynascoreArrays, main: MetricInput, lows: np.ndarray, highs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return the Dynascore interval of each model from its main aggregate's interval.

    The Dynascore on a resample is a monotone function of the main aggregate on it (see
    ``dynascore_resamples``), so its percentiles are the images of the aggregate's: the
    same bounds ``interval_bounds(shifted_dynascores(...))`` gives, without the resamples.
    """
    column = point.metrics.index(main.name)
    weight = point.normalized_weights[main.name]
    base = point.dynascores - weight * point.converted[:, column]
    low = base + weight * _converted_main(main, np.asarray(lows, dtype=np.float64))
    high = base + weight * _converted_main(main, np.asarray(highs, dtype=np.float64))
    return np.fmin(low, high), np.fmax(low, high)


def _converted_main(metric: MetricInput, values: np.ndarray) -> np.ndarray:
    """Return ``values`` of the main metric rounded to its resolution and turned higher-better."""
    converted = values
    if metric.resolution and metric.relative_resolution:
        step = float(metric.resolution)
        converted = np.vectorize(
            lambda value: quantize_to_resolution(float(value), step, relative=True),
            otypes=[np.float64],
        )(values)
    elif metric.resolution:
        step = float(metric.resolution)
        converted = np.round(values / step) * step + 0.0
    if str(metric.direction) != HIGHER:
        converted = float(metric.offset) - converted
    return converted


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
        """True when neither model is ahead in ``TIE_BELOW`` of resamples; None if unknown."""
        if self.share is None:
            return None
        return self.share < TIE_BELOW and not self._lower_ahead()

    @property
    def next_ahead(self) -> bool | None:
        """True when the lower model is ahead in ``TIE_BELOW`` of resamples; None if unknown."""
        return None if self.share is None else self._lower_ahead()

    def _lower_ahead(self) -> bool:
        # The lower model's share is 1 - share (a draw counts half for both).
        return 1.0 - float(self.share) >= TIE_BELOW  # type: ignore[arg-type]


def neighbour_confidence(order: Sequence[int], resamples: np.ndarray) -> dict[int, PairConfidence]:
    """Return, for each model of ``order`` but the last, its ``ahead_share`` over the next.

    ``order`` lists row positions of ``resamples`` (models x resamples) from the top. All
    pairs are compared at once.
    """
    uppers, lowers = _pair_arrays(list(zip(order, list(order)[1:], strict=False)))
    values = np.asarray(resamples, dtype=np.float64)
    return _pair_confidence(uppers, values[uppers] - values[lowers])


def pair_confidence_both(
    pairs: Sequence[tuple[int, int]],
    main_resamples: np.ndarray,
    point: DynascoreArrays,
    main: MetricInput,
) -> dict[int, tuple[PairConfidence, PairConfidence]]:
    """Return, for each (upper, lower) pair of model positions, by upper: the share of
    resamples in which upper is ahead on the main metric, and on the Dynascore
    (``dynascore_resamples`` of ``point``), from one pass over their resamples.

    Without a resolution the Dynascore's gap on a resample is an affine function of the
    main aggregate's gap (see ``dynascore_resamples``), so it needs no Dynascore per resample.
    """
    uppers, lowers = _pair_arrays(pairs)
    values = np.asarray(main_resamples, dtype=np.float64)
    gaps = values[uppers] - values[lowers]
    on_main = _pair_confidence(uppers, gaps)
    if main.resolution:
        dynascore_gaps = shifted_dynascores(point, main, values[uppers], uppers) - (
            shifted_dynascores(point, main, values[lowers], lowers)
        )
    else:
        column = point.metrics.index(main.name)
        weight = point.normalized_weights[main.name]
        sign = 1.0 if str(main.direction) == HIGHER else -1.0
        base = point.dynascores - weight * point.converted[:, column]
        dynascore_gaps = (base[uppers] - base[lowers])[:, None] + (weight * sign) * gaps
    on_dynascore = _pair_confidence(uppers, dynascore_gaps)
    return {index: (on_main[index], on_dynascore[index]) for index in on_main}


def _pair_arrays(pairs: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    uppers = np.array([upper for upper, _ in pairs], dtype=np.int64)
    lowers = np.array([lower for _, lower in pairs], dtype=np.int64)
    return uppers, lowers


def _pair_confidence(uppers: np.ndarray, gaps: np.ndarray) -> dict[int, PairConfidence]:
    """Shares of resamples with a positive gap (a zero gap counts half), by upper position."""
    if uppers.size == 0:
        return {}
    width = gaps.shape[1]
    known = ~np.isnan(gaps).any(axis=1) & (width > 0)
    wins = np.count_nonzero(gaps > 0, axis=1)
    draws = np.count_nonzero(gaps == 0, axis=1)
    shares = (wins + 0.5 * draws) / max(width, 1)
    return {
        int(position): PairConfidence(float(share) if ok else None)
        for position, share, ok in zip(
            uppers.tolist(), shares.tolist(), known.tolist(), strict=True
        )
    }
