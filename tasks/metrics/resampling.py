"""Bootstrap confidence intervals and per-tag scores (pure, deterministic with numpy).

Resampling draws example indices with replacement from ``numpy.random.default_rng(seed)``,
so the same inputs and seed always give the same interval. For a metric that is a mean
of example scores the example scores are resampled; for a corpus metric (F1, BLEU, chrF)
the per-example statistics of each resample are summed and the corpus score recomputed,
capped at ``CORPUS_METRIC_MAX_RESAMPLES`` resamples to keep leaderboard jobs fast.
Intervals are percentile intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tasks.metrics.base import Metric, Options
from tasks.metrics.errors import BAD_OPTION, EMPTY_INPUT, LENGTH_MISMATCH, MetricInputError
from tasks.metrics.registry import get_metric

CORPUS_METRIC_MAX_RESAMPLES = 200
# Bound the index matrix of one batch of resamples (about 16 MB of int64).
_MAX_INDICES_PER_BATCH = 2_000_000


def _check_parameters(n_resamples: int, confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise MetricInputError(
            f"confidence must be between 0 and 1, got {confidence}", code=BAD_OPTION
        )
    if n_resamples < 1:
        raise MetricInputError(
            f"n_resamples must be at least 1, got {n_resamples}", code=BAD_OPTION
        )


def _resampled_indices(size: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Yield batches of index rows; each row is one resample of ``size`` indices."""
    rng = np.random.default_rng(seed)
    batch = max(1, _MAX_INDICES_PER_BATCH // size)
    remaining = n_resamples
    while remaining > 0:
        rows = min(batch, remaining)
        yield rng.integers(0, size, size=(rows, size))
        remaining -= rows


def _percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap_ci(
    per_example_scores: Sequence[float] | np.ndarray,
    *,
    aggregate: Callable[[np.ndarray], float] = np.mean,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Return the percentile bootstrap interval ``(low, high)`` of ``aggregate(scores)``."""
    _check_parameters(n_resamples, confidence)
    scores = np.asarray(per_example_scores, dtype=np.float64)
    if scores.size == 0:
        raise MetricInputError("there are no example scores to resample", code=EMPTY_INPUT)
    values = []
    for indices in _resampled_indices(scores.size, n_resamples, seed):
        resampled = scores[indices]
        if aggregate is np.mean:
            values.append(resampled.mean(axis=1))  # one vectorised pass per batch
        else:
            values.append(np.array([aggregate(row) for row in resampled], dtype=np.float64))
    return _percentile_interval(np.concatenate(values), confidence)


def _resolve(metric: Metric | str) -> Metric:
    return get_metric(metric) if isinstance(metric, str) else metric


def metric_bootstrap_ci(
    metric: Metric | str,
    predictions: Sequence[Any],
    golds: Sequence[Any],
    *,
    options: Options | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Return the bootstrap interval of ``metric``'s corpus score over the examples."""
    _check_parameters(n_resamples, confidence)
    chosen = _resolve(metric)
    statistics = chosen.compute_statistics(predictions, golds, options=options)
    if chosen.is_decomposable:
        return bootstrap_ci(
            statistics[:, 0] / statistics[:, 1],
            n_resamples=n_resamples,
            seed=seed,
            confidence=confidence,
        )
    resamples = min(n_resamples, CORPUS_METRIC_MAX_RESAMPLES)
    size = statistics.shape[0]
    values = []
    for indices in _resampled_indices(size, resamples, seed):
        for row in indices:
            summed = np.bincount(row, minlength=size).astype(np.float64) @ statistics
            values.append(chosen.score_from_statistics(summed, options or {}))
    return _percentile_interval(np.asarray(values, dtype=np.float64), confidence)


@dataclass(frozen=True)
class TagScore:
    """The score of the examples carrying one tag, and how many there are."""

    score: float
    count: int


def metric_per_tag(
    metric: Metric | str,
    predictions: Sequence[Any],
    golds: Sequence[Any],
    tags: Sequence[Sequence[str] | str | None],
    *,
    options: Options | None = None,
) -> dict[str, TagScore]:
    """Return ``metric`` per tag, sorted by tag.

    ``tags[i]`` lists the tags of example ``i`` (a single string is one tag; None or an
    empty list: untagged). An example counts once in each of its tags; untagged examples
    only count in the overall score.
    """
    chosen = _resolve(metric)
    if len(tags) != len(golds):
        raise MetricInputError(
            f"{len(tags)} tag lists for {len(golds)} examples", code=LENGTH_MISMATCH
        )
    statistics = chosen.compute_statistics(predictions, golds, options=options)
    rows_by_tag: dict[str, list[int]] = {}
    for row, example_tags in enumerate(tags):
        names = [example_tags] if isinstance(example_tags, str) else list(example_tags or ())
        for name in dict.fromkeys(names):  # a tag repeated on one example counts once
            rows_by_tag.setdefault(name, []).append(row)
    return {
        name: TagScore(
            score=float(chosen.score_from_statistics(statistics[rows].sum(axis=0), options or {})),
            count=len(rows),
        )
        for name, rows in sorted(rows_by_tag.items())
    }
