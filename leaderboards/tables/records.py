"""What the leaderboard is built from: plain records of models, datasets and scores (pure).

``ScoreColumns`` holds every Score of a board as parallel columns, the shape the selector
loads; ``ScoreRecord`` is one Score as an object (tests and small callers).
``finite_or_none`` and ``finite_array`` read a metric value as the table does: a finite
``int`` or ``float``, anything else missing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from operator import itemgetter, methodcaller
from typing import Any

import numpy as np

# Job metrics also have their own Score columns; ``Score.metrics`` wins when it has them.
SCORE_COLUMN_OF_METRIC = {
    "examples_per_second": "examples_per_second",
    "latency_p50_ms": "latency_p50_ms",
    "latency_p95_ms": "latency_p95_ms",
    "memory_utilization": "memory_gb",
}


@dataclass(slots=True)
class ModelRecord:
    """A model the viewer may see; ``show_identity`` is False for someone else's anonymous one."""

    model_id: int
    name: str
    owner_name: str
    is_anonymous: bool
    show_identity: bool


@dataclass(frozen=True)
class DatasetRecord:
    slug: str
    name: str
    access_type: str
    round_number: int | None
    default_weight: float


# Slots and no freezing: a caller may build thousands of these per request.
@dataclass(slots=True)
class ScoreRecord:
    model_id: int
    dataset_slug: str
    metrics: Mapping[str, Any]
    per_tag: Mapping[str, Any]
    main_value: float | None
    ci_low: float | None
    ci_high: float | None
    columns: Mapping[str, float | None]
    # Examples with a prediction, of ``total`` (None: not known; see ``Score.covered_count``).
    covered: int | None = None
    total: int = 0
    # The main metric per bootstrap resample, as stored (``Score.main_resamples``).
    main_resamples: bytes | None = None

    def metric(self, name: str, main_metric: str) -> float | None:
        """Return this score's value of ``name`` (None when absent or not a finite number)."""
        metrics = self.metrics if type(self.metrics) is dict else {}
        value = metrics.get(name)
        if value is None:
            column = SCORE_COLUMN_OF_METRIC.get(name)
            if column is not None:
                value = self.columns.get(column)
            if value is None and name == main_metric:
                value = self.main_value
        return finite_or_none(value)


@dataclass(frozen=True)
class ScoreColumns:
    """Every Score of a board as parallel columns: position ``i`` of each is one Score.

    What the selector loads: a 1,000-model board becomes a few lists, not thousands of
    objects. ``metrics`` and ``per_tag`` hold the decoded JSON fields, ``columns`` the job
    metric columns by column name (the values of ``SCORE_COLUMN_OF_METRIC``).
    ``main_per_tag`` (optional) holds each score's ``{tag: main metric value}``
    (``Score.main_per_tag``), or None where it must be taken from ``per_tag``; when it is
    given, ``per_tag`` is needed only at those positions. ``covered`` and ``totals``
    (optional) hold each score's coverage: examples with a prediction (None: not known) of
    the dataset's examples. ``main_resamples`` (optional) holds each score's stored
    ``Score.main_resamples`` (bytes or None).
    """

    model_ids: Sequence[int]
    dataset_slugs: Sequence[str]
    metrics: Sequence[Any]
    per_tag: Sequence[Any]
    main_values: Sequence[float | None]
    ci_lows: Sequence[float | None]
    ci_highs: Sequence[float | None]
    columns: Mapping[str, Sequence[float | None]]
    main_per_tag: Sequence[Mapping[str, Any] | None] = ()
    covered: Sequence[int | None] = ()
    totals: Sequence[int] = ()
    main_resamples: Sequence[bytes | memoryview | None] = ()

    @classmethod
    def from_records(cls, records: Iterable[ScoreRecord]) -> ScoreColumns:
        """Return the columns of ``records``."""
        records = list(records)
        names = dict.fromkeys(SCORE_COLUMN_OF_METRIC.values())
        return cls(
            model_ids=[record.model_id for record in records],
            dataset_slugs=[record.dataset_slug for record in records],
            metrics=[record.metrics for record in records],
            per_tag=[record.per_tag for record in records],
            main_values=[record.main_value for record in records],
            ci_lows=[record.ci_low for record in records],
            ci_highs=[record.ci_high for record in records],
            columns={name: [record.columns.get(name) for record in records] for name in names},
            covered=[record.covered for record in records],
            totals=[record.total for record in records],
            main_resamples=[record.main_resamples for record in records],
        )

    def metric(self, name: str, main_metric: str) -> np.ndarray:
        """Return every score's ``ScoreRecord.metric(name, main_metric)``, NaN for None."""
        if self._all_metrics_are_dicts:
            values = list(map(methodcaller("get", name), self.metrics))
        else:
            values = [
                metrics.get(name) if type(metrics) is dict else None for metrics in self.metrics
            ]
        if None in values:
            fallback: Sequence[Any] | None = None
            column = SCORE_COLUMN_OF_METRIC.get(name)
            if column is not None and column in self.columns:
                fallback = self.columns[column]
            if name == main_metric:
                fallback = (
                    self.main_values
                    if fallback is None
                    else [
                        main if value is None else value
                        for value, main in zip(fallback, self.main_values, strict=True)
                    ]
                )
            if fallback is not None:
                values = [
                    other if value is None else value
                    for value, other in zip(values, fallback, strict=True)
                ]
        return finite_array(values)

    def metric_matrix(self, names: Sequence[str], main_metric: str) -> np.ndarray:
        """Return ``metric`` of each of ``names`` as the columns of a scores x names array."""
        if names and self._all_metrics_are_dicts:
            # Common case, in one C-level pass: every score has every metric as a number
            # (no None, so no fallback to a column; bool is its own type, not int).
            try:
                picked = list(map(itemgetter(*names), self.metrics))
            except KeyError:
                picked = None
            if picked is not None:
                if len(names) == 1:
                    picked = [(value,) for value in picked]
                if set(map(type, chain.from_iterable(picked))) <= {float, int}:
                    array = np.array(picked, dtype=float).reshape(len(picked), len(names))
                    array[~np.isfinite(array)] = np.nan
                    return array
        columns = [self.metric(name, main_metric) for name in names]
        if not columns:
            return np.zeros((len(self.metrics), 0))
        return np.column_stack(columns)

    @cached_property
    def _all_metrics_are_dicts(self) -> bool:
        return set(map(type, self.metrics)) <= {dict}


_PLAIN_NUMBER_TYPES = {float, int, type(None)}


def finite_array(values: Sequence[Any]) -> np.ndarray:
    """Return ``finite_or_none`` of each value as a float array, NaN for None."""
    if set(map(type, values)) <= _PLAIN_NUMBER_TYPES:
        # What JSON numbers and float columns decode to: numpy converts them (None to NaN)
        # as ``float`` does. Anything else (bool, str, ...) takes the slow path: it is None.
        array = np.array(values, dtype=float)
    else:
        array = np.array(
            [
                value if type(value) is float else float(value) if type(value) is int else None
                for value in values
            ],
            dtype=float,
        )
    array[~np.isfinite(array)] = np.nan
    return array


def finite_or_none(value: Any) -> float | None:
    # ``type(...) is`` rather than isinstance: this runs for every metric of every score,
    # and JSON numbers are exactly int or float (bool is excluded on purpose).
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is int:
        return float(value)
    return None
