"""Scores from streamed (prediction, gold) pairs (pure: no DB, no HTTP).

A run's scored field is held as one ``int32`` code per example, the code of its distinct
(prediction, gold) pair (``PairColumn``): every metric's statistics row depends only on
that pair, so the statistics are computed once per distinct pair and the corpus, per-tag
and bootstrap scores are sums of ``counts @ pair statistics``. Memory does not grow with
the outputs, and the scores equal the ``tasks.metrics`` functions applied to whole lists.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tasks.metrics import DEFAULT_RESAMPLES, percentile_interval, resampled_statistics

# Every interval on the leaderboard: 1,000 resamples, seeded by ``bootstrap_seed``.
BOOTSTRAP_RESAMPLES = DEFAULT_RESAMPLES
BOOTSTRAP_SEED = 0


class PairColumn:
    """One scored field of a run, streamed: a code per example for its (prediction, gold) pair.

    Every metric's statistics row depends only on the example's prediction and gold, so the
    statistics are computed once per *distinct* pair and the corpus, per-tag and bootstrap
    scores are sums of ``counts @ pair statistics``. A classification run of 100k examples
    holds one ``int32`` per example and a few pairs, not 100k values or statistics rows.
    """

    def __init__(self) -> None:
        self.codes = array("i")
        self.pairs: dict[tuple[Hashable, Hashable], int] = {}
        self.predictions: list[Any] = []
        self.golds: list[Any] = []

    def add(self, prediction: Any, gold: Any) -> None:
        key = (pair_key(prediction), pair_key(gold))
        code = self.pairs.get(key)
        if code is None:
            code = self.pairs[key] = len(self.predictions)
            self.predictions.append(prediction)
            self.golds.append(gold)
        self.codes.append(code)

    def __len__(self) -> int:
        return len(self.codes)

    def code_array(self) -> np.ndarray:
        return np.frombuffer(self.codes, dtype=np.int32) if self.codes else np.zeros(0, np.int32)


def pair_key(value: Any) -> Hashable:
    # Strings (labels, answers) are their own key. Anything else is keyed by its canonical
    # JSON, which never merges values the metrics tell apart (True and 1 stay distinct).
    if type(value) is str:
        return value
    return ("json", json.dumps(value, sort_keys=True, default=repr))


@dataclass
class RunData:
    """A run's scored fields (one ``PairColumn`` per reference name) and example tags."""

    columns: dict[str, PairColumn]
    tag_codes: array = field(default_factory=lambda: array("i"))
    tag_sets: dict[tuple[str, ...], int] = field(default_factory=dict)
    count: int = 0
    # Examples that have a prediction in the run (the others count as wrong).
    covered: int = 0

    def add_tags(self, tags: Any) -> None:
        names = [tags] if isinstance(tags, str) else list(tags or ())
        key = tuple(dict.fromkeys(str(name) for name in names))  # a repeated tag counts once
        code = self.tag_sets.get(key)
        if code is None:
            code = self.tag_sets[key] = len(self.tag_sets)
        self.tag_codes.append(code)

    def tag_masks(self) -> dict[str, np.ndarray]:
        """Return ``{tag: boolean mask over the examples}``, sorted by tag."""
        codes = np.frombuffer(self.tag_codes, dtype=np.int32)
        sets_by_tag: dict[str, list[int]] = {}
        for key, code in self.tag_sets.items():
            for name in key:
                sets_by_tag.setdefault(name, []).append(code)
        return {name: np.isin(codes, sets_by_tag[name]) for name in sorted(sets_by_tag)}


def pair_statistics(metric, column: PairColumn, options) -> np.ndarray:
    """Return the statistics rows of ``column``'s distinct pairs (raises MetricUnsupported)."""
    return metric.compute_statistics(column.predictions, column.golds, options=options)


def summed(codes: np.ndarray, statistics: np.ndarray) -> np.ndarray:
    return np.bincount(codes, minlength=statistics.shape[0]).astype(np.float64) @ statistics


def bootstrap_seed(dataset_id: int) -> tuple[int, int]:
    """Return the seed of dataset ``dataset_id``'s resamples: ``(BOOTSTRAP_SEED, dataset_id)``.

    The same for every model scored on the dataset, so resample ``b`` picks the same
    examples for all of them (their scores are compared resample by resample), and
    different for two datasets of the same size, which are resampled independently.
    """
    return (BOOTSTRAP_SEED, int(dataset_id))


def bootstrap_resamples(
    metric, codes: np.ndarray, statistics: np.ndarray, options, *, seed
) -> np.ndarray:
    """Return the metric's score on each of ``BOOTSTRAP_RESAMPLES`` seeded resamples.

    The same values as ``tasks.metrics.metric_resamples`` of the whole lists: each
    resample's counts of the distinct pairs times their statistics, scored at once.
    """
    sums = resampled_statistics(statistics, codes=codes, n_resamples=BOOTSTRAP_RESAMPLES, seed=seed)
    return metric.batch_scores(sums, options)


def bootstrap_interval(resamples: np.ndarray) -> tuple[float, float]:
    """Return the 95% percentile interval of ``bootstrap_resamples``' values."""
    return percentile_interval(resamples, 0.95)


def resamples_encode(values: np.ndarray) -> bytes:
    """Return resample values as stored on a Score: little-endian float32."""
    return np.ascontiguousarray(values, dtype="<f4").tobytes()


def resamples_decode(payload: bytes | memoryview | None) -> np.ndarray | None:
    """Return the values ``resamples_encode`` stored, None if absent, not 1,000 of them or
    not all finite (a score's resamples are 0..100: anything else was never written here,
    and an infinity would make every interval built on it infinite)."""
    if payload is None:
        return None
    data = bytes(payload)
    if len(data) != 4 * BOOTSTRAP_RESAMPLES:
        return None
    values = np.frombuffer(data, dtype="<f4")
    return values if np.isfinite(values).all() else None
