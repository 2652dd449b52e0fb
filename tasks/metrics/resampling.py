"""Bootstrap confidence intervals and per-tag scores (pure, deterministic with numpy).

Contract:

* A resample is ``n`` example indices drawn with replacement. ``resample_indices`` draws
  the ``(n_resamples, n)`` index matrix from ``numpy.random.default_rng(seed)`` (``seed``
  an int or a sequence of ints, e.g. ``(0, dataset id)``), in batches of whole rows that
  keep the int64 matrix near 4 MB; the batches are the rows of one matrix, so the same
  size and seed always give the same resamples, whatever the batch size.
* ``resampled_statistics`` turns each resample into its summed statistics rows in one
  pass per batch: the count of each example (or of each distinct (prediction, gold) pair,
  given ``codes``) per resample by one ``bincount`` over offset indices, times the
  statistics matrix. ``Metric.batch_scores`` then scores every resample at once
  (accuracy and SQuAD as means, macro and micro F1 from the per-label counts; BLEU and
  chrF call sacrebleu per resample). Every metric gets ``DEFAULT_RESAMPLES`` (1,000)
  resamples unless asked for more.
* ``metric_resamples`` is the score of each resample; ``percentile_interval`` the
  percentile interval of such values; ``metric_bootstrap_ci`` both at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tasks.metrics.base import Metric, Options
from tasks.metrics.errors import BAD_OPTION, EMPTY_INPUT, LENGTH_MISMATCH, MetricInputError
from tasks.metrics.registry import get_metric

DEFAULT_RESAMPLES = 1000
Seed = int | Sequence[int]
# Bound the index matrix of one batch of resamples (about 4 MB of int64; with the counts
# and the shifted copy an evaluation worker peaks a few times that).
_MAX_INDICES_PER_BATCH = 500_000


def _check_parameters(n_resamples: int, confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise MetricInputError(
            f"confidence must be between 0 and 1, got {confidence}", code=BAD_OPTION
        )
    if n_resamples < 1:
        raise MetricInputError(
            f"n_resamples must be at least 1, got {n_resamples}", code=BAD_OPTION
        )


def resample_indices(
    size: int,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: Seed = 0,
    *,
    max_indices: int = _MAX_INDICES_PER_BATCH,
) -> Iterator[np.ndarray]:
    """Yield the rows of the ``(n_resamples, size)`` index matrix, in batches of rows.

    Row ``b`` is resample ``b``: ``size`` indices in ``[0, size)`` drawn with replacement.
    The rows do not depend on ``max_indices`` (the batch bound).
    """
    rng = np.random.default_rng(seed)
    batch = max(1, max_indices // max(size, 1))
    remaining = n_resamples
    while remaining > 0:
        rows = min(batch, remaining)
        yield rng.integers(0, size, size=(rows, size), dtype=np.int64)
        remaining -= rows


def resampled_statistics(
    statistics: np.ndarray,
    *,
    codes: np.ndarray | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: Seed = 0,
) -> np.ndarray:
    """Return the summed statistics of every resample, ``(n_resamples, k)``.

    Without ``codes`` row ``i`` of ``statistics`` is example ``i``; with ``codes`` example
    ``i`` is row ``codes[i]`` (its distinct (prediction, gold) pair), so ``statistics``
    holds one row per pair and the examples are ``len(codes)``.
    """
    statistics = np.asarray(statistics, dtype=np.float64)
    size = statistics.shape[0] if codes is None else int(codes.shape[0])
    if size == 0:
        raise MetricInputError("there are no examples to resample", code=EMPTY_INPUT)
    if n_resamples < 1:
        raise MetricInputError(
            f"n_resamples must be at least 1, got {n_resamples}", code=BAD_OPTION
        )
    width = statistics.shape[0]
    sums = np.empty((n_resamples, statistics.shape[1]), dtype=np.float64)
    done = 0
    for indices in resample_indices(size, n_resamples, seed):
        rows = indices.shape[0]
        picked = indices if codes is None else codes[indices]
        # One bincount for the batch: resample r's rows are shifted by r * width.
        offsets = picked + (np.arange(rows, dtype=np.int64) * width)[:, None]
        counts = np.bincount(offsets.ravel(), minlength=rows * width).reshape(rows, width)
        sums[done : done + rows] = counts.astype(np.float64) @ statistics
        done += rows
    return sums


def percentile_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Return the ``confidence`` percentile interval ``(low, high)`` of ``values``."""
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(np.asarray(values, dtype=np.float64), [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap_ci(
    per_example_scores: Sequence[float] | np.ndarray,
    *,
    aggregate: Callable[[np.ndarray], float] = np.mean,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: Seed = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Return the percentile bootstrap interval ``(low, high)`` of ``aggregate(scores)``."""
    _check_parameters(n_resamples, confidence)
    scores = np.asarray(per_example_scores, dtype=np.float64)
    if scores.size == 0:
        raise MetricInputError("there are no example scores to resample", code=EMPTY_INPUT)
    values = []
    for indices in resample_indices(scores.size, n_resamples, seed):
        resampled = scores[indices]
        if aggregate is np.mean:
            values.append(resampled.mean(axis=1))  # one vectorised pass per batch
        else:
            values.append(np.array([aggregate(row) for row in resampled], dtype=np.float64))
    return percentile_interval(np.concatenate(values), confidence)


def _resolve(metric: Metric | str) -> Metric:
    return get_metric(metric) if isinstance(metric, str) else metric


def metric_resamples(
    metric: Metric | str,
    predictions: Sequence[Any],
    golds: Sequence[Any],
    *,
    options: Options | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: Seed = 0,
) -> np.ndarray:
    """Return ``metric``'s corpus score on each of ``n_resamples`` resamples of the examples."""
    chosen = _resolve(metric)
    statistics = chosen.compute_statistics(predictions, golds, options=options)
    sums = resampled_statistics(statistics, n_resamples=n_resamples, seed=seed)
    return chosen.batch_scores(sums, options)


def metric_bootstrap_ci(
    metric: Metric | str,
    predictions: Sequence[Any],
    golds: Sequence[Any],
    *,
    options: Options | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: Seed = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Return the bootstrap interval of ``metric``'s corpus score over the examples."""
    _check_parameters(n_resamples, confidence)
    values = metric_resamples(
        metric, predictions, golds, options=options, n_resamples=n_resamples, seed=seed
    )
    return percentile_interval(values, confidence)


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
