"""Dynascore: one leaderboard number from several metrics (pure: no DB, no HTTP).

Source: Ma, Ethayarajh, Thrush et al., "Dynaboard: An Evaluation-As-A-Service Platform for
Holistic Next-Generation Benchmarking", NeurIPS 2021, arXiv:2106.06052, section 5. The
score is a utility: each metric is exchanged into units of the main (performance) metric
through its average marginal rate of substitution (AMRS) with it, then weighted.

Contract, for metrics ``i`` with user weights ``w_i`` and a main metric ``perf``:

1. Each metric is averaged over the scoring datasets with the dataset weights
   (``average_over_datasets``).
2. A metric with a resolution (``MetricInput.resolution``, declared by the metric
   registry, ``tasks.metrics.jobs``) is compared at that resolution: each value is first
   rounded to the nearest step of its grid (``quantize_to_resolution``: multiples of the
   step, or powers of ``1 + step`` for a relative resolution). Values on the same step
   are ties, so noise below the resolution moves no model; a metric whose values all
   fall on one step has no spread, its AMRS is 0 and it adds nothing (rule below). A
   resolution of 0 (the default) leaves the values exact.
   Each value is then converted so that higher is better: ``x`` for "higher" metrics and
   ``offset - x`` for "lower" metrics (latency or memory: memory *saved* is the instance
   memory minus the memory used; the caller passes the offset, e.g. the instance memory
   or the largest value observed).
3. The complete models are sorted by the converted main metric and grouped into
   *levels* (``tie_levels``): models whose converted main values differ by less than
   ``epsilon`` (or not at all) are one level (a chain: each value within ``epsilon`` of
   the next). Two levels are always at least ``epsilon`` apart on the main metric.
4. ``AMRS_i = mean over consecutive levels (a, b) of rate_i(a, b)``, where ``rate_i(a, b)``
   is the mean of ``|x_i(n) - x_i(m)| / |perf(n) - perf(m)|`` over every cross pair of a
   model ``m`` of ``a`` and a model ``n`` of ``b`` (``level_pair_rate``; two models of one
   level form no ratio), over the models that have metric ``i``. It is the paper's AMRS
   averaged over every way of keeping one model per level, so a tied level keeps the
   spread of its models and a model that joins it moves each rate only part of the way
   toward the rate it would give alone. ``epsilon`` defaults to 1e-4, absolute as the
   paper states it (Dynabench's own code scales it by the largest perf value); the
   leaderboard passes the main metric's declared resolution (``MAIN_METRIC_RESOLUTION``).
   On a board without ties (every gap at least ``epsilon``) each level is one model and
   this is the paper's formula exactly. ``AMRS_perf = 1`` by definition.
5. ``dynascore(model) = sum_i (w_i / sum_j w_j) * x_i(model) / AMRS_i``.

A metric whose AMRS is 0 (constant across models, or no usable pair, e.g. with one model)
contributes nothing and is listed in ``non_contributing_metrics``; the weights are not
re-normalised for it, so with one model only the main metric counts. A model without a
value for the main metric or for a metric of positive weight is *incomplete*: it gets no
Dynascore, takes no part in the AMRS, and is listed after the ranked models with the
metrics it misses (never dropped). Inputs are never mutated. Bad inputs raise
``DynascoreError`` with a stable code.

``compute_dynascores`` and ``average_over_datasets`` are the reference (dicts in, dicts
out). ``compute_dynascore_arrays`` and ``average_over_datasets_array`` are the same maths
on numpy arrays for large leaderboards (NaN = missing value): same checks, same error
codes and the same floats, bit for bit (every ``math.fsum`` of the reference is an
``fsum`` or a single correctly rounded addition there, and the means inside a pair of tied
levels are the same additions in the same order, that of the values). Tests compare the
two on random tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from tasks.metrics.jobs import quantize_to_resolution

HIGHER = "higher"
LOWER = "lower"
DEFAULT_EPSILON = 1e-4

# Stable error codes.
ALL_WEIGHTS_ZERO = "dynascore.E001"
BAD_WEIGHT = "dynascore.E002"
MAIN_METRIC_NOT_LISTED = "dynascore.E003"
DUPLICATE_METRIC = "dynascore.E004"
BAD_DIRECTION = "dynascore.E005"
BAD_VALUE = "dynascore.E006"
BAD_OFFSET = "dynascore.E007"
BAD_EPSILON = "dynascore.E008"
BAD_DATASET_WEIGHT = "dynascore.E009"
BAD_RESOLUTION = "dynascore.E010"


class DynascoreError(ValueError):
    """Raised for inputs the Dynascore cannot be computed from; ``code`` is stable."""

    def __init__(self, code: str, message: str):
        self.code = code
        self.message = message
        super().__init__(f"{message} [{code}]")


@dataclass(frozen=True)
class MetricInput:
    """One metric of the Dynascore: its direction, user weight and conversion offset.

    ``direction`` is "higher" or "lower" (``tasks.config.Direction`` values work too);
    ``offset`` only applies to "lower" metrics, which enter as ``offset - value``.
    ``resolution`` (0: exact) is the step at which values are compared, a fraction of
    the value when ``relative_resolution``; values are rounded to it before anything else.
    """

    name: str
    direction: str = HIGHER
    weight: float = 1.0
    offset: float = 0.0
    resolution: float = 0.0
    relative_resolution: bool = False


@dataclass(frozen=True)
class ModelScore:
    """One leaderboard row: a model's Dynascore (None if incomplete) and its parts."""

    model: str
    dynascore: float | None
    # 1-based; equal Dynascores share a rank (1, 2, 2, 4). None for incomplete models.
    rank: int | None
    # Converted metric values (higher is better) that entered the score.
    converted: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    # Each metric's share of the Dynascore: normalised weight * converted value / AMRS.
    contributions: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    missing_metrics: tuple[str, ...] = ()


@dataclass(frozen=True)
class DynascoreResult:
    """Everything the leaderboard shows about one Dynascore computation."""

    dynascores: Mapping[str, float | None]
    amrs: Mapping[str, float]
    normalized_weights: Mapping[str, float]
    # Complete models by Dynascore (desc, ties by name), then incomplete ones by name.
    ranking: tuple[ModelScore, ...]
    incomplete: Mapping[str, tuple[str, ...]]
    non_contributing_metrics: tuple[str, ...]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite_number(value: object, code: str, what: str) -> float:
    if not _is_number(value) or not math.isfinite(value):  # type: ignore[arg-type]
        raise DynascoreError(code, f"{what} must be a finite number, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _checked_metrics(metrics: Sequence[MetricInput], main_metric: str) -> dict[str, MetricInput]:
    by_name: dict[str, MetricInput] = {}
    for metric in metrics:
        if metric.name in by_name:
            raise DynascoreError(DUPLICATE_METRIC, f"metric {metric.name!r} is listed twice")
        if str(metric.direction) not in (HIGHER, LOWER):
            raise DynascoreError(
                BAD_DIRECTION,
                f"metric {metric.name!r}: direction must be 'higher' or 'lower', "
                f"got {metric.direction!r}",
            )
        weight = _finite_number(metric.weight, BAD_WEIGHT, f"the weight of {metric.name!r}")
        if weight < 0:
            raise DynascoreError(
                BAD_WEIGHT, f"metric {metric.name!r}: weights cannot be negative, got {weight}"
            )
        offset = _finite_number(metric.offset, BAD_OFFSET, f"the offset of {metric.name!r}")
        resolution = _finite_number(
            metric.resolution, BAD_RESOLUTION, f"the resolution of {metric.name!r}"
        )
        if resolution < 0:
            raise DynascoreError(
                BAD_RESOLUTION,
                f"metric {metric.name!r}: a resolution cannot be negative, got {resolution}",
            )
        if str(metric.direction) == HIGHER and offset != 0:
            raise DynascoreError(
                BAD_OFFSET,
                f"metric {metric.name!r} is higher-is-better; an offset only applies to "
                "lower-is-better metrics",
            )
        by_name[metric.name] = metric
    if main_metric not in by_name:
        raise DynascoreError(
            MAIN_METRIC_NOT_LISTED, f"the main metric {main_metric!r} is not among the metrics"
        )
    if sum(float(metric.weight) for metric in by_name.values()) <= 0:
        raise DynascoreError(
            ALL_WEIGHTS_ZERO,
            "every metric weight is 0: give at least one metric a positive weight",
        )
    return by_name


def _convert(metric: MetricInput, value: float) -> float:
    value = _quantize(metric, value)
    return value if str(metric.direction) == HIGHER else float(metric.offset) - value


def _quantize(metric: MetricInput, value: float) -> float:
    if not metric.resolution:
        return value
    return quantize_to_resolution(
        value, float(metric.resolution), relative=bool(metric.relative_resolution)
    )


def tie_levels(
    ordered_values: Sequence[tuple[float, float]], *, epsilon: float = DEFAULT_EPSILON
) -> list[list[tuple[float, float]]]:
    """Return the levels of ``(perf, metric)`` pairs sorted by perf, lowest first.

    A level is a run of consecutive pairs each less than ``epsilon`` (or nothing) above
    the one before it: a chain, so its ends may be further apart. Any two levels are at
    least ``epsilon`` (and more than 0) apart. The levels keep every pair as it is.
    """
    levels: list[list[tuple[float, float]]] = []
    start = 0
    for end in range(1, len(ordered_values) + 1):
        if end < len(ordered_values):
            step = ordered_values[end][0] - ordered_values[end - 1][0]
            if step < epsilon or step == 0:
                continue
        levels.append(list(ordered_values[start:end]))
        start = end
    return levels


def level_pair_rate(
    lower: Sequence[tuple[float, float]], upper: Sequence[tuple[float, float]]
) -> float:
    """Return the mean of ``|delta metric| / |delta perf|`` over the cross pairs of two levels.

    Every pair of one model of ``lower`` and one of ``upper`` forms a ratio (pairs inside a
    level form none); the mean is taken as the mean over ``lower``'s models of their mean
    rate to ``upper``'s, each with ``_mean``, so a level made of copies of one model gives
    that model's rate to the last bit. Between two single models it is the paper's ratio.
    The levels come as ``tie_levels`` gives them, in ``(perf, metric)`` order: an order of
    the values alone, so the sums (and their last bit) never depend on ids or names.
    """
    return _mean(
        [
            _mean([abs(metric_b - metric_a) / abs(perf_b - perf_a) for perf_b, metric_b in upper])
            for perf_a, metric_a in lower
        ]
    )


def _mean(values: list[float]) -> float:
    """The mean of ``values`` (at least 0 each); equal values (one, or a tie) are themselves.

    The values are added one after the other in the order given (the array path makes the
    same additions); when the sum overflows, each value is divided first.
    """
    first = values[0]
    count = len(values)
    if values.count(first) == count:
        return first
    total = _sequential_sum(values)
    if math.isinf(total):
        return _sequential_sum([value / count for value in values])
    return total / count


def _sequential_sum(values: list[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total


def average_metric_ratio_scaling(
    ordered_values: Sequence[tuple[float, float]], *, epsilon: float = DEFAULT_EPSILON
) -> float:
    """Return the AMRS of a metric from ``(perf, metric)`` pairs sorted by perf.

    The mean over consecutive levels (``tie_levels``: pairs within ``epsilon`` of each
    other on perf are one level) of their cross-pair rate (``level_pair_rate``); 0.0 with
    fewer than two levels. Without ties it is the paper's mean over neighbouring pairs.
    """
    levels = tie_levels(ordered_values, epsilon=epsilon)
    rates = [
        level_pair_rate(lower, upper) for lower, upper in zip(levels, levels[1:], strict=False)
    ]
    return math.fsum(rates) / len(rates) if rates else 0.0


def _checked_epsilon(epsilon: object) -> float:
    number = _finite_number(epsilon, BAD_EPSILON, "epsilon")
    if number < 0:
        raise DynascoreError(BAD_EPSILON, f"epsilon cannot be negative, got {number}")
    return number


def _normalized_weights(by_name: Mapping[str, MetricInput]) -> dict[str, float]:
    """Return each metric's weight over the sum of the weights (``fsum``)."""
    total_weight = math.fsum(float(metric.weight) for metric in by_name.values())
    return {name: float(metric.weight) / total_weight for name, metric in by_name.items()}


def compute_dynascores(
    models: Mapping[str, Mapping[str, float | None]],
    metrics: Sequence[MetricInput],
    *,
    main_metric: str,
    epsilon: float = DEFAULT_EPSILON,
) -> DynascoreResult:
    """Return the Dynascore of every model (see the module docstring for the formula).

    ``models`` maps a model name to its metric values (already averaged over datasets);
    a missing or None value means the model has no value for that metric.
    """
    by_name = _checked_metrics(metrics, main_metric)
    epsilon = _checked_epsilon(epsilon)
    normalized_weights = _normalized_weights(by_name)
    required = [name for name, m in by_name.items() if name == main_metric or m.weight > 0]
    converted, incomplete = _converted_models(models, by_name, required)
    amrs: dict[str, float] = {}
    for name in by_name:
        if name == main_metric:
            amrs[name] = 1.0
            continue
        # Sorted by value alone: a level's rates are exactly rounded means, so the order
        # of tied models cannot matter.
        pairs = sorted((row[main_metric], row[name]) for row in converted.values() if name in row)
        amrs[name] = average_metric_ratio_scaling(pairs, epsilon=epsilon)
    complete_scores = [
        _model_score(model, row, by_name, normalized_weights, amrs)
        for model, row in converted.items()
    ]
    ranking = _ranked(complete_scores)
    for model, missing in incomplete.items():
        ranking.append(ModelScore(model=model, dynascore=None, rank=None, missing_metrics=missing))
    return DynascoreResult(
        dynascores=MappingProxyType({score.model: score.dynascore for score in ranking}),
        amrs=MappingProxyType(amrs),
        normalized_weights=MappingProxyType(normalized_weights),
        ranking=tuple(ranking),
        incomplete=MappingProxyType(incomplete),
        non_contributing_metrics=tuple(name for name, value in amrs.items() if value == 0),
    )


def _converted_models(
    models: Mapping[str, Mapping[str, float | None]],
    by_name: Mapping[str, MetricInput],
    required: Sequence[str],
) -> tuple[dict[str, dict[str, float]], dict[str, tuple[str, ...]]]:
    """Return the converted values of the complete models and the missing metrics of the others.

    Models are taken by name; a value that is not a finite number raises ``BAD_VALUE``.
    """
    converted: dict[str, dict[str, float]] = {}
    incomplete: dict[str, tuple[str, ...]] = {}
    for model in sorted(models):
        values = models[model]
        row: dict[str, float] = {}
        for name, metric in by_name.items():
            value = values.get(name)
            if value is not None:
                number = _finite_number(value, BAD_VALUE, f"model {model!r}, metric {name!r}")
                row[name] = _convert(metric, number)
        missing = tuple(name for name in required if name not in row)
        if missing:
            incomplete[model] = missing
        else:
            converted[model] = row
    return converted, incomplete


def _model_score(
    model: str,
    row: Mapping[str, float],
    by_name: Mapping[str, MetricInput],
    normalized_weights: Mapping[str, float],
    amrs: Mapping[str, float],
) -> ModelScore:
    """Return the unranked score of a complete model: the sum of its metrics' contributions."""
    contributions = {
        name: normalized_weights[name] * row[name] / amrs[name]
        for name in by_name
        if amrs[name] > 0 and name in row
    }
    return ModelScore(
        model=model,
        dynascore=math.fsum(contributions.values()),
        rank=None,
        converted=MappingProxyType(dict(row)),
        contributions=MappingProxyType(contributions),
    )


def _ranked(scores: Sequence[ModelScore]) -> list[ModelScore]:
    """Return ``scores`` by Dynascore (desc, ties by name), ranked; equal scores share a rank."""
    ordered = sorted(scores, key=lambda score: (-score.dynascore, score.model))  # type: ignore[operator]
    ranking: list[ModelScore] = []
    for position, score in enumerate(ordered, start=1):
        tied = ranking and ranking[-1].dynascore == score.dynascore
        rank = ranking[-1].rank if tied else position
        ranking.append(
            ModelScore(score.model, score.dynascore, rank, score.converted, score.contributions)
        )
    return ranking


def _checked_dataset_weights(dataset_weights: Mapping[str, float]) -> dict[str, float]:
    weights: dict[str, float] = {}
    for dataset, weight in dataset_weights.items():
        number = _finite_number(weight, BAD_DATASET_WEIGHT, f"the weight of {dataset!r}")
        if number < 0:
            raise DynascoreError(
                BAD_DATASET_WEIGHT, f"dataset {dataset!r}: weights cannot be negative"
            )
        weights[dataset] = number
    if weights and not any(weights.values()):
        raise DynascoreError(
            ALL_WEIGHTS_ZERO, "every dataset weight is 0: give a scoring dataset a weight"
        )
    return weights


def average_over_datasets(
    per_dataset: Mapping[str, Mapping[str, Mapping[str, float | None]]],
    dataset_weights: Mapping[str, float] | None = None,
) -> dict[str, dict[str, float | None]]:
    """Return each model's metrics averaged over the scoring datasets, weighted.

    ``per_dataset`` maps model -> dataset -> metric -> value. The scoring datasets are the
    keys of ``dataset_weights`` (datasets of weight 0 and unlisted datasets are ignored),
    or, without weights, every dataset in the table with equal weights. A metric is
    averaged over the scoring datasets where some model has it (fairness may exist on
    some datasets only); a model missing it on any of those gets None (incomplete).
    """
    if dataset_weights is None:
        names = sorted({dataset for datasets in per_dataset.values() for dataset in datasets})
        weights = dict.fromkeys(names, 1.0)
    else:
        weights = _checked_dataset_weights(dataset_weights)
    scoring = [dataset for dataset, weight in weights.items() if weight > 0]

    metrics_of: dict[str, list[str]] = {dataset: [] for dataset in scoring}
    for model in sorted(per_dataset):
        for dataset in scoring:
            for metric, value in per_dataset[model].get(dataset, {}).items():
                if value is not None and metric not in metrics_of[dataset]:
                    metrics_of[dataset].append(metric)
    all_metrics = list(dict.fromkeys(m for dataset in scoring for m in metrics_of[dataset]))

    averages: dict[str, dict[str, float | None]] = {}
    for model in sorted(per_dataset):
        row: dict[str, float | None] = {}
        for metric in all_metrics:
            weighted: list[float] = []
            total = 0.0
            for dataset in scoring:
                if metric not in metrics_of[dataset]:
                    continue
                value = per_dataset[model].get(dataset, {}).get(metric)
                if value is None:
                    weighted = []
                    total = 0.0
                    break
                number = _finite_number(
                    value, BAD_VALUE, f"model {model!r}, dataset {dataset!r}, metric {metric!r}"
                )
                weighted.append(weights[dataset] * number)
                total += weights[dataset]
            row[metric] = math.fsum(weighted) / total if total else None
        averages[model] = row
    return averages


# -- the array fast path ---------------------------------------------------------------------
# The same maths on numpy arrays, for leaderboards of thousands of models. NaN stands for a
# missing value (None above). Element-wise operations are done in the same order as above,
# so they round alike; every sum that the reference takes with ``math.fsum`` is taken with
# ``math.fsum`` here too (or, for one or two terms, with one IEEE addition, which rounds the
# exact sum just as ``fsum`` does), and the reference's sequential sums (``_mean``) are made
# one addition at a time in the same order, so both paths give the same floats, bit for bit.


def weighted_row_means(values: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    """Return ``fsum(w_j * x_j) / sum(w_j)`` for each row of ``values`` (n x k), NaN if any NaN.

    The weights are positive and summed in order, as in ``average_over_datasets``.
    """
    values = np.asarray(values, dtype=float)
    count, width = values.shape
    if width == 0:
        return np.full(count, np.nan)
    products = values * np.asarray(weights, dtype=float)
    if width <= 2:
        # One correctly rounded addition is the exactly rounded sum, as fsum returns;
        # zeros (the sign of zero) and overflows are left to fsum below.
        sums = products.sum(axis=1) if width == 2 else products[:, 0].copy()
        redo = np.flatnonzero(~(np.isfinite(sums) & (sums != 0)) & ~np.isnan(products).any(axis=1))
    else:
        sums = np.full(count, np.nan)
        redo = np.flatnonzero(~np.isnan(products).any(axis=1))
    for index, row in zip(redo.tolist(), products[redo].tolist(), strict=True):
        sums[index] = math.fsum(row)
    total = 0.0
    for weight in weights:
        total += weight
    return sums / total


def average_over_datasets_array(
    values: np.ndarray, datasets: Sequence[str], dataset_weights: Mapping[str, float]
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``average_over_datasets`` of a models x datasets x metrics array (NaN = missing).

    ``datasets`` names the second axis; ``dataset_weights`` selects and weighs the scoring
    datasets as in ``average_over_datasets`` (same checks, same errors). Return the models x
    metrics averages (NaN where the reference gives None) and, per metric, whether some
    scoring dataset has it (the metrics the reference lists in each row).
    """
    weights = _checked_dataset_weights(dataset_weights)
    count, _, metric_count = values.shape
    averages = np.full((count, metric_count), np.nan)
    listed = np.zeros(metric_count, dtype=bool)
    position = {name: index for index, name in enumerate(datasets)}
    scoring = [
        (position[name], weight)
        for name, weight in weights.items()
        if weight > 0 and name in position
    ]
    if not scoring or count == 0:
        return averages, listed
    selected = values[:, [index for index, _ in scoring], :]
    if np.isinf(selected).any():
        raise DynascoreError(BAD_VALUE, "dataset values must be finite numbers (NaN: missing)")
    has_metric = ~np.isnan(selected).all(axis=0)  # scoring dataset x metric
    for metric in range(metric_count):
        columns = np.flatnonzero(has_metric[:, metric])
        if columns.size:
            listed[metric] = True
            averages[:, metric] = weighted_row_means(
                selected[:, columns, metric], [scoring[column][1] for column in columns.tolist()]
            )
    return averages, listed


@dataclass(frozen=True, eq=False)
class DynascoreArrays:
    """``compute_dynascores`` as arrays over the models in the order they were given.

    ``dynascores`` is NaN and ``ranks`` 0 for incomplete models; ``order`` lists the model
    positions in ranking order (complete models by Dynascore, then incomplete ones by name).
    ``model_score`` and ``as_result`` give the reference's objects.
    """

    models: tuple[str, ...]
    metrics: tuple[str, ...]
    dynascores: np.ndarray
    ranks: np.ndarray
    order: np.ndarray
    converted: np.ndarray
    contributions: np.ndarray
    missing: Mapping[int, tuple[str, ...]]
    amrs: Mapping[str, float]
    normalized_weights: Mapping[str, float]
    non_contributing_metrics: tuple[str, ...]

    @property
    def complete_count(self) -> int:
        return len(self.models) - len(self.missing)

    def model_score(self, index: int) -> ModelScore:
        """Return the ``ModelScore`` of the model at ``index``, as ``compute_dynascores`` does."""
        model = self.models[index]
        if index in self.missing:
            return ModelScore(model, None, None, missing_metrics=self.missing[index])
        converted = {
            name: value
            for name, value in zip(self.metrics, self.converted[index].tolist(), strict=True)
            if value == value  # not NaN
        }
        contributions = {
            name: value
            for name, value in zip(self.metrics, self.contributions[index].tolist(), strict=True)
            if value == value
        }
        return ModelScore(
            model=model,
            dynascore=float(self.dynascores[index]),
            rank=int(self.ranks[index]),
            converted=MappingProxyType(converted),
            contributions=MappingProxyType(contributions),
        )

    def as_result(self) -> DynascoreResult:
        """Return the same ``DynascoreResult`` as ``compute_dynascores``."""
        ranking = tuple(self.model_score(index) for index in self.order.tolist())
        return DynascoreResult(
            dynascores=MappingProxyType({score.model: score.dynascore for score in ranking}),
            amrs=self.amrs,
            normalized_weights=self.normalized_weights,
            ranking=ranking,
            incomplete=MappingProxyType(
                {
                    self.models[index]: names
                    for index, names in sorted(
                        self.missing.items(), key=lambda item: self.models[item[0]]
                    )
                }
            ),
            non_contributing_metrics=self.non_contributing_metrics,
        )


def compute_dynascore_arrays(
    models: Sequence[str],
    values: np.ndarray,
    metrics: Sequence[MetricInput],
    *,
    main_metric: str,
    epsilon: float = DEFAULT_EPSILON,
) -> DynascoreArrays:
    """Return ``compute_dynascores`` of a models x metrics array (columns in ``metrics`` order).

    NaN means "no value" (None in the reference); an infinite value raises ``BAD_VALUE``
    as in the reference. Model names must be distinct. Same checks, errors and numbers as the
    reference, in O(models x metrics) numpy work plus one ``fsum`` per model, and one ratio
    per cross pair of two consecutive tied levels (docs/leaderboard.md).
    """
    by_name = _checked_metrics(metrics, main_metric)
    epsilon = _checked_epsilon(epsilon)
    names = tuple(by_name)
    models = tuple(models)
    values = np.asarray(values, dtype=float).reshape(len(models), len(names))
    by_name_order = sorted(range(len(models)), key=models.__getitem__)
    _refuse_infinite(models, names, values, by_name_order)
    name_rank = np.empty(len(models), dtype=np.int64)
    name_rank[by_name_order] = np.arange(len(models))
    normalized_weights = _normalized_weights(by_name)
    main = names.index(main_metric)
    required = [
        column
        for column, (name, metric) in enumerate(by_name.items())
        if name == main_metric or metric.weight > 0
    ]
    converted = _converted_array(values, by_name)
    absent = np.isnan(converted)
    incomplete_rows = absent[:, required].any(axis=1)
    missing = {
        index: tuple(names[column] for column in required if absent[index, column])
        for index in np.flatnonzero(incomplete_rows).tolist()
    }
    complete = np.flatnonzero(~incomplete_rows)
    amrs = _amrs_of_columns(converted, absent, complete, name_rank, names, main, epsilon)
    contributions, dynascores = _contributions_array(
        converted, complete, names, normalized_weights, amrs
    )
    # Ranking: complete models by Dynascore (desc, ties by name), then incomplete ones by name.
    ranked = complete[np.lexsort((name_rank[complete], -dynascores[complete]))]
    incomplete_order = np.array(
        [index for index in by_name_order if index in missing], dtype=np.int64
    )
    return DynascoreArrays(
        models=models,
        metrics=names,
        dynascores=dynascores,
        ranks=_shared_ranks(ranked, dynascores),
        order=np.concatenate([ranked, incomplete_order]).astype(np.int64),
        converted=converted,
        contributions=contributions,
        missing=MappingProxyType(missing),
        amrs=MappingProxyType(amrs),
        normalized_weights=MappingProxyType(normalized_weights),
        non_contributing_metrics=tuple(name for name, value in amrs.items() if value == 0),
    )


def _refuse_infinite(
    models: Sequence[str], names: Sequence[str], values: np.ndarray, by_name_order: Sequence[int]
) -> None:
    """Raise ``BAD_VALUE`` for the first infinite value, models by name, as the reference."""
    if not np.isinf(values).any():
        return
    for index in by_name_order:
        for column, name in enumerate(names):
            value = values[index, column]
            if math.isinf(value):
                _finite_number(float(value), BAD_VALUE, f"model {models[index]!r}, metric {name!r}")


def _converted_array(values: np.ndarray, by_name: Mapping[str, MetricInput]) -> np.ndarray:
    """Return ``_convert`` of every value: quantized, and ``offset - value`` if lower is better."""
    converted = values.copy()
    for column, metric in enumerate(by_name.values()):
        if metric.resolution and metric.relative_resolution:
            # One scalar call per value, as in the reference (its logarithms): the same floats.
            converted[:, column] = [
                _quantize(metric, value) for value in values[:, column].tolist()
            ]
        elif metric.resolution:
            # ``round`` halves to even like Python's, and int * step rounds as float * step;
            # + 0.0 turns numpy's -0.0 into the 0.0 that Python's int 0 gives.
            step = float(metric.resolution)
            converted[:, column] = np.round(values[:, column] / step) * step + 0.0
        if str(metric.direction) != HIGHER:
            converted[:, column] = float(metric.offset) - converted[:, column]
    return converted


def _amrs_of_columns(
    converted: np.ndarray,
    absent: np.ndarray,
    complete: np.ndarray,
    name_rank: np.ndarray,
    names: Sequence[str],
    main: int,
    epsilon: float,
) -> dict[str, float]:
    """Return the AMRS of every metric over the complete models (1.0 for the main one)."""
    # Complete models by the converted main metric; ties form levels (``tie_levels``).
    ordered = complete[np.lexsort((name_rank[complete], converted[complete, main]))]
    perf = converted[ordered, main]
    amrs: dict[str, float] = {}
    for column, name in enumerate(names):
        if column == main:
            amrs[name] = 1.0
            continue
        usable = ~absent[ordered, column]
        amrs[name] = _amrs_of_sorted(perf[usable], converted[ordered, column][usable], epsilon)
    return amrs


def _contributions_array(
    converted: np.ndarray,
    complete: np.ndarray,
    names: Sequence[str],
    normalized_weights: Mapping[str, float],
    amrs: Mapping[str, float],
) -> tuple[np.ndarray, np.ndarray]:
    """Return every metric's contribution and the Dynascore of the complete models (else NaN)."""
    contributing = np.array([amrs[name] > 0 for name in names], dtype=bool)
    weight_row = np.array([normalized_weights[name] for name in names], dtype=float)
    amrs_row = np.array([amrs[name] if amrs[name] > 0 else 1.0 for name in names], dtype=float)
    contributions = np.full(converted.shape, np.nan)
    dynascores = np.full(converted.shape[0], np.nan)
    if complete.size:
        parts = weight_row * converted[complete] / amrs_row
        parts[:, ~contributing] = np.nan
        contributions[complete] = parts
        # -0.0 is the neutral element of addition: absent parts leave every fsum as it was.
        terms = np.where(np.isnan(parts), -0.0, parts).tolist()
        dynascores[complete] = [math.fsum(row) for row in terms]
    return contributions, dynascores


def _shared_ranks(ranked: np.ndarray, dynascores: np.ndarray) -> np.ndarray:
    """Return each model's rank (0: not ranked); equal scores in a row share the first's rank."""
    ranks = np.zeros(dynascores.size, dtype=np.int64)
    if ranked.size:
        scores = dynascores[ranked]
        new_score = np.ones(ranked.size, dtype=bool)
        new_score[1:] = scores[1:] != scores[:-1]
        positions = np.arange(1, ranked.size + 1)
        ranks[ranked] = np.maximum.accumulate(np.where(new_score, positions, 0))
    return ranks


def _amrs_of_sorted(perf: np.ndarray, values: np.ndarray, epsilon: float) -> float:
    """``average_metric_ratio_scaling`` of ``values`` sorted by ``perf`` (arrays), same floats.

    Pairs of single-model levels (the usual case) are one vectorised ratio each; the pairs
    with a tied level take their cross ratios together (``_tied_pair_rates``).
    """
    if perf.size < 2:
        return 0.0
    steps = perf[1:] - perf[:-1]
    starts = np.flatnonzero(np.concatenate(([True], (steps >= epsilon) & (steps != 0))))
    if starts.size < 2:
        return 0.0
    ends = np.append(starts[1:], perf.size)
    rates = np.abs(values[starts[1:]] - values[starts[:-1]]) / np.abs(
        perf[starts[1:]] - perf[starts[:-1]]
    )
    single = ends - starts == 1
    tied = np.flatnonzero(~(single[1:] & single[:-1]))
    if tied.size:
        # In (perf, value) order, as the reference sorts its pairs: the same additions.
        order = np.lexsort((values, perf))
        rates[tied] = _tied_pair_rates(perf[order], values[order], starts, ends, tied)
    return math.fsum(rates.tolist()) / rates.size


# Cross ratios held at once by ``_tied_pair_rates`` (8 bytes each: its arrays stay at 1 MB).
CROSS_RATIO_BLOCK = 1 << 17


def _tied_pair_rates(
    perf: np.ndarray, values: np.ndarray, starts: np.ndarray, ends: np.ndarray, pairs: np.ndarray
) -> np.ndarray:
    """Return ``level_pair_rate`` of the level pairs ``pairs`` (lower level's index), same floats.

    One column per model of a lower level, holding its ratios to the upper level's models
    in order, padded at the end with zeros (the ratios are at least 0, and adding 0.0 last
    changes no sum): column means as ``_mean`` takes them, then each pair's mean of its
    columns. Columns, so that the sums run along the first axis, vectorised across models.
    """
    lower_sizes = ends[pairs] - starts[pairs]
    upper_sizes = ends[pairs + 1] - starts[pairs + 1]
    # Each pair's upper level as a column; padding cells sit at infinity, so their ratio
    # |0 - x| / |inf - perf| is exactly 0.0.
    upper_valid = np.arange(int(upper_sizes.max()))[:, None] < upper_sizes
    members = _ranges(starts[pairs + 1], upper_sizes)
    upper_values = np.zeros(upper_valid.shape)
    upper_values.T[upper_valid.T] = values[members]
    upper_perf = np.full(upper_valid.shape, np.inf)
    upper_perf.T[upper_valid.T] = perf[members]
    # Column c: the model ``lowers[c]`` against the upper level of pair ``owner[c]``.
    owner = np.repeat(np.arange(pairs.size), lower_sizes)
    lowers = _ranges(starts[pairs], lower_sizes)
    model_means = np.empty(owner.size)
    block = max(1, CROSS_RATIO_BLOCK // upper_valid.shape[0])
    for first in range(0, owner.size, block):
        columns = slice(first, first + block)
        lower = lowers[columns]
        # ``take`` keeps the rows contiguous (``[:, index]`` would not), for the sums below.
        ratios = np.abs(np.take(upper_values, owner[columns], axis=1) - values[lower]) / np.abs(
            np.take(upper_perf, owner[columns], axis=1) - perf[lower]
        )
        model_means[columns] = _padded_means(ratios, upper_sizes[owner[columns]])
    means = np.zeros((int(lower_sizes.max()), pairs.size))
    means.T[np.arange(means.shape[0]) < lower_sizes[:, None]] = model_means
    return _padded_means(means, lower_sizes)


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Return the positions ``start, start + 1, ...`` of each run, runs one after the other."""
    offsets = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
    return np.arange(int(sizes.sum())) + offsets


def _padded_means(matrix: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Return ``_mean`` of the first ``counts`` entries of each column (at least 0; then 0.0)."""
    lows = matrix.min(axis=0)
    padded = np.flatnonzero(counts < matrix.shape[0])
    if padded.size:
        valid = np.arange(matrix.shape[0])[:, None] < counts[padded]
        lows[padded] = np.where(valid, matrix[:, padded], np.inf).min(axis=0)
    same = lows == matrix.max(axis=0)
    # Top to bottom, one addition per row, as ``_sequential_sum`` adds (numpy's ``sum`` and
    # ``cumsum`` along this axis promise no order, or cost more).
    sums = matrix[0].copy()
    for row in matrix[1:]:
        sums += row
    means = np.where(same, lows, sums / counts)
    for column in np.flatnonzero(np.isinf(sums) & ~same).tolist():
        means[column] = _mean(matrix[: counts[column], column].tolist())
    return means
