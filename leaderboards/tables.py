"""The leaderboard table: Dynascore glue, sorting, paging, trends (pure: no DB, no HTTP).

Contract: ``build_leaderboard_table`` takes plain records (the models a viewer may see,
their per-dataset scores as ``ScoreColumns`` or ``ScoreRecord`` objects, the visible
datasets and the task config's metrics) and returns a typed ``LeaderboardTable``;
``leaderboards.selectors.leaderboard_table`` loads those records with a fixed number of
queries and calls it. ``parse_leaderboard_query`` turns a
query string into weights, a sort key and a page; a bad value falls back to its default
and adds a message, it never raises.

Every model is scored and ordered with numpy arrays (models x datasets x metrics; the
array fast path of ``leaderboards.dynascore``, equal to its reference to the last bit);
only the page rows, the trends of the top models and the best model per tag are built
as objects. The results are those of the former dict-based code, which the tests pin.

How the Dynascore is fed (``leaderboards.dynascore`` does the maths, Dynaboard section 5):

* Only *scoring* datasets (original copies, not perturbed ones) enter the score, averaged
  with the dataset weights (default: each dataset's ``weight`` field). Hidden datasets
  never enter it, and non-owners never even receive them.
* Lower-is-better metrics need an offset, so that ``offset - value`` is "higher is
  better": ``latency_p95_ms`` uses the largest (dataset-averaged) value observed among
  the listed models, so the slowest model saves 0 ms; ``memory_utilization`` is memory
  *saved*: ``LEADERBOARD_INSTANCE_MEMORY_GB`` (default 16) minus the memory used. Any
  other lower-is-better metric uses the largest observed value, like latency.
* A metric that no listed model has (e.g. ``fairness`` when no fairness copies exist) is
  hidden from the table and left out of the Dynascore, instead of making every model
  incomplete. A model missing a metric that some other model has is *incomplete*: it is
  listed below the ranked models with the metrics it misses, never dropped.
* All weights 0 gives a clear message and an unranked table, not an error page.
* The CI shown for the main metric is the dataset-weighted average of the per-dataset
  bootstrap bounds (an approximation; each dataset's exact interval is in the breakdown).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from operator import itemgetter, methodcaller
from typing import Any

import numpy as np

from leaderboards.dynascore import (
    LOWER,
    DynascoreArrays,
    DynascoreError,
    MetricInput,
    ModelScore,
    average_over_datasets_array,
    compute_dynascore_arrays,
    weighted_row_means,
)

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
MAX_WEIGHT = 100.0
SLIDER_MAX_WEIGHT = 5.0
DEFAULT_SORT = "-dynascore"
DEFAULT_INSTANCE_MEMORY_GB = 16.0
TREND_MODEL_COUNT = 5
ANONYMOUS_NAME = "Anonymous"
ANONYMOUS_OWNER = "anonymous"
METRIC_PARAMETER_PREFIX = "w_"
DATASET_PARAMETER_PREFIX = "d_"
DATASET_SORT_PREFIX = "dataset:"
MEMORY_METRIC = "memory_utilization"
# Job metrics also have their own Score columns; ``Score.metrics`` wins when it has them.
SCORE_COLUMN_OF_METRIC = {
    "examples_per_second": "examples_per_second",
    "latency_p50_ms": "latency_p50_ms",
    "latency_p95_ms": "latency_p95_ms",
    "memory_utilization": "memory_gb",
}
METRIC_LABELS = {
    "examples_per_second": "Throughput (ex/s)",
    "latency_p95_ms": "Latency p95 (ms)",
    "memory_utilization": "Memory (GB)",
}


# -- typed results ------------------------------------------------------------------------
@dataclass(frozen=True)
class LeaderboardWeights:
    """Metric weights by metric name and dataset weights by dataset slug."""

    metrics: Mapping[str, float]
    datasets: Mapping[str, float]

    def as_dict(self) -> dict[str, dict[str, float]]:
        """Return the ``{"metrics": {...}, "datasets": {...}}`` shape that forks store."""
        return {"metrics": dict(self.metrics), "datasets": dict(self.datasets)}

    def as_query(self) -> dict[str, str]:
        """Return the GET parameters that reproduce these weights."""
        query = {
            f"{METRIC_PARAMETER_PREFIX}{name}": _number_text(w) for name, w in self.metrics.items()
        }
        for slug, weight in self.datasets.items():
            query[f"{DATASET_PARAMETER_PREFIX}{slug}"] = _number_text(weight)
        return query


@dataclass(frozen=True)
class LeaderboardQuery:
    """A parsed leaderboard query; unpacks as ``weights, sort, page``.

    ``messages`` says which parameters were ignored and why.
    """

    weights: LeaderboardWeights
    sort: str
    page: int
    page_size: int = DEFAULT_PAGE_SIZE
    messages: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[Any]:
        return iter((self.weights, self.sort, self.page))


@dataclass(frozen=True)
class MetricColumn:
    name: str
    label: str
    kind: str
    direction: str
    weight: float
    default_weight: float
    is_main: bool
    offset: float
    # Average marginal rate of substitution; None when the Dynascore was not computed.
    amrs: float | None = None
    contributes: bool = True

    @property
    def higher_is_better(self) -> bool:
        return self.direction != LOWER

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "kind": self.kind,
            "direction": self.direction,
            "weight": self.weight,
            "default_weight": self.default_weight,
            "is_main": self.is_main,
            "offset": self.offset,
            "amrs": self.amrs,
            "contributes": self.contributes,
        }


@dataclass(frozen=True)
class DatasetColumn:
    slug: str
    name: str
    access_type: str
    round_number: int | None
    weight: float
    default_weight: float

    @property
    def is_scoring(self) -> bool:
        return self.access_type == "scoring"

    def as_dict(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "name": self.name,
            "access_type": self.access_type,
            "round": self.round_number,
            "weight": self.weight if self.is_scoring else None,
            "default_weight": self.default_weight if self.is_scoring else None,
        }


@dataclass(frozen=True)
class DatasetCell:
    """A model's main-metric value on one dataset, with its bootstrap interval."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high}


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int | None
    model_id: int
    model_name: str
    owner_name: str
    is_anonymous: bool
    dynascore: float | None
    # Metric values as measured (not converted), averaged over the scoring datasets.
    metrics: Mapping[str, float | None]
    ci_low: float | None
    ci_high: float | None
    datasets: Mapping[str, DatasetCell]
    incomplete: bool = False
    missing_metrics: tuple[str, ...] = ()
    contributions: Mapping[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "model_id": None if self.is_anonymous else self.model_id,
            "model": self.model_name,
            "owner": self.owner_name,
            "anonymous": self.is_anonymous,
            "dynascore": self.dynascore,
            "metrics": dict(self.metrics),
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "datasets": {slug: cell.as_dict() for slug, cell in self.datasets.items()},
            "incomplete": self.incomplete,
            "missing_metrics": list(self.missing_metrics),
            "contributions": dict(self.contributions),
        }


@dataclass(frozen=True)
class TagLeader:
    tag: str
    model_name: str
    value: float

    def as_dict(self) -> dict[str, Any]:
        return {"tag": self.tag, "model": self.model_name, "value": self.value}


@dataclass(frozen=True)
class TrendSeries:
    model_name: str
    values: tuple[float | None, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model_name, "values": list(self.values)}


@dataclass(frozen=True)
class LeaderboardTable:
    """One page of a leaderboard, plus what the page around it shows."""

    task_code: str
    main_metric: str
    weights: LeaderboardWeights
    sort: str
    page: int
    page_size: int
    page_count: int
    total_rows: int
    metrics: tuple[MetricColumn, ...]
    datasets: tuple[DatasetColumn, ...]
    rows: tuple[LeaderboardRow, ...]
    hidden_metrics: tuple[str, ...] = ()
    error: str | None = None
    error_code: str | None = None
    messages: tuple[str, ...] = ()
    best_per_tag: tuple[TagLeader, ...] = ()
    trend_rounds: tuple[int, ...] = ()
    trends: tuple[TrendSeries, ...] = ()

    @property
    def scoring_datasets(self) -> tuple[DatasetColumn, ...]:
        return tuple(dataset for dataset in self.datasets if dataset.is_scoring)

    @property
    def trends_data(self) -> dict[str, Any]:
        """Return the trends chart's data: the rounds and one series per top model."""
        return {
            "rounds": list(self.trend_rounds),
            "series": [series.as_dict() for series in self.trends],
        }

    def as_dict(self) -> dict[str, Any]:
        """Return the table as plain JSON types (the JSON export and the API body)."""
        return {
            "task": self.task_code,
            "main_metric": self.main_metric,
            "weights": self.weights.as_dict(),
            "sort": self.sort,
            "page": self.page,
            "page_size": self.page_size,
            "page_count": self.page_count,
            "total_rows": self.total_rows,
            "metrics": [metric.as_dict() for metric in self.metrics],
            "hidden_metrics": list(self.hidden_metrics),
            "datasets": [dataset.as_dict() for dataset in self.datasets],
            "rows": [row.as_dict() for row in self.rows],
            "error": {"code": self.error_code, "message": self.error} if self.error else None,
            "messages": list(self.messages),
            "best_per_tag": [leader.as_dict() for leader in self.best_per_tag],
            "trends": self.trends_data,
        }

    def csv_header(self) -> list[str]:
        """Return the CSV header; ``csv_rows`` follows the same order."""
        header = ["rank", "model", "owner", "dynascore"]
        header += [metric.name for metric in self.metrics]
        header += [f"{self.main_metric}_ci_low", f"{self.main_metric}_ci_high"]
        header += [f"{DATASET_SORT_PREFIX}{dataset.slug}" for dataset in self.datasets]
        header += ["incomplete", "missing_metrics"]
        return header

    def csv_rows(self) -> list[list[Any]]:
        """Return the page rows as CSV cells (empty string for a missing value)."""
        rows = []
        for row in self.rows:
            cells: list[Any] = [row.rank, row.model_name, row.owner_name, row.dynascore]
            cells += [row.metrics.get(metric.name) for metric in self.metrics]
            cells += [row.ci_low, row.ci_high]
            cells += [row.datasets[dataset.slug].value for dataset in self.datasets]
            cells += [row.incomplete, " ".join(row.missing_metrics)]
            rows.append(["" if cell is None else cell for cell in cells])
        return rows


# -- input records (what the selector loads) ----------------------------------------------
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
        return _finite_or_none(value)


@dataclass(frozen=True)
class ScoreColumns:
    """Every Score of a board as parallel columns: position ``i`` of each is one Score.

    What the selector loads: a 1,000-model board becomes a few lists, not thousands of
    objects. ``metrics`` and ``per_tag`` hold the decoded JSON fields, ``columns`` the job
    metric columns by column name (the values of ``SCORE_COLUMN_OF_METRIC``).
    ``main_per_tag`` (optional) holds each score's ``{tag: main metric value}``
    (``Score.main_per_tag``), or None where it must be taken from ``per_tag``; when it is
    given, ``per_tag`` is needed only at those positions.
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
        return _finite_array(values)

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


def _finite_array(values: Sequence[Any]) -> np.ndarray:
    """Return ``_finite_or_none`` of each value as a float array, NaN for None."""
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


# -- query parsing --------------------------------------------------------------------------
def default_weights(metric_specs: Sequence[Any], datasets: Iterable[Any]) -> LeaderboardWeights:
    """Return the config's default metric weights and the scoring datasets' own weights."""
    return LeaderboardWeights(
        metrics={spec.name: float(spec.default_weight) for spec in metric_specs},
        datasets={
            dataset.slug: float(_dataset_default_weight(dataset))
            for dataset in datasets
            if str(dataset.access_type) == "scoring"
        },
    )


def _dataset_default_weight(dataset: Any) -> float:
    weight = getattr(dataset, "default_weight", None)
    if weight is None:
        weight = getattr(dataset, "weight", 1.0)
    number = _finite_or_none(weight)
    return number if number is not None and number >= 0 else 1.0


def sort_keys(metric_names: Iterable[str], dataset_slugs: Iterable[str]) -> set[str]:
    """Return every sort key (ascending; prefix "-" for descending)."""
    keys = {"dynascore", "name", "ci"}
    keys.update(metric_names)
    keys.update(f"{DATASET_SORT_PREFIX}{slug}" for slug in dataset_slugs)
    return keys


def parse_leaderboard_query(
    querydict: Mapping[str, Any],
    task_config: Any,
    datasets: Iterable[Any],
    *,
    base_weights: LeaderboardWeights | None = None,
) -> LeaderboardQuery:
    """Parse weights (``w_<metric>``, ``d_<dataset slug>``), ``sort``, ``page``, ``page_size``.

    ``datasets`` are the datasets the viewer may see (objects with ``slug``, ``weight``
    and ``access_type``). Defaults come from ``base_weights`` (a fork) or else the config
    and the datasets. Each bad value keeps its default and adds a message. Unpacks as
    ``weights, sort, page``; the result also has ``page_size`` and ``messages``.
    """
    datasets = list(datasets)
    metric_specs = task_config.metrics() if task_config is not None else ()
    defaults = default_weights(metric_specs, datasets)
    if base_weights is not None:
        defaults = merge_weights(defaults, base_weights)
    messages: list[str] = []
    metric_weights = dict(defaults.metrics)
    dataset_weights = dict(defaults.datasets)
    for mapping, prefix, what in (
        (metric_weights, METRIC_PARAMETER_PREFIX, "metric"),
        (dataset_weights, DATASET_PARAMETER_PREFIX, "dataset"),
    ):
        for key in list(mapping):
            raw = _get(querydict, f"{prefix}{key}")
            if raw is None:
                continue
            number = parse_weight(raw)
            if number is None:
                messages.append(
                    f"Ignored the weight of {what} {key!r}: {str(raw)[:40]!r} is not a number "
                    f"from 0 to {MAX_WEIGHT:g}."
                )
            else:
                mapping[key] = number

    dataset_slugs = [dataset.slug for dataset in datasets]
    sort = _get(querydict, "sort")
    allowed = sort_keys((spec.name for spec in metric_specs), dataset_slugs)
    if sort is None or sort == "":
        sort = DEFAULT_SORT
    elif str(sort).removeprefix("-") not in allowed:
        messages.append(f"Unknown sort {str(sort)[:40]!r}: sorted by Dynascore instead.")
        sort = DEFAULT_SORT

    page = _positive_int(_get(querydict, "page"), default=1, maximum=10**6)
    if page is None:
        messages.append("Ignored the page number: it must be a positive whole number.")
        page = 1
    page_size = _positive_int(
        _get(querydict, "page_size"), default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE
    )
    if page_size is None:
        messages.append(
            f"Ignored the page size: it must be a whole number from 1 to {MAX_PAGE_SIZE}."
        )
        page_size = DEFAULT_PAGE_SIZE
    return LeaderboardQuery(
        weights=LeaderboardWeights(metrics=metric_weights, datasets=dataset_weights),
        sort=str(sort),
        page=page,
        page_size=page_size,
        messages=tuple(messages),
    )


def merge_weights(defaults: LeaderboardWeights, saved: Any) -> LeaderboardWeights:
    """Return ``defaults`` overridden by the valid entries of ``saved`` (a fork's weights).

    Saved weights of metrics or datasets that no longer exist, or bad values, are ignored.
    """
    if isinstance(saved, LeaderboardWeights):
        saved = saved.as_dict()
    saved = saved if isinstance(saved, Mapping) else {}
    merged = []
    for current, key in ((defaults.metrics, "metrics"), (defaults.datasets, "datasets")):
        values = dict(current)
        stored = saved.get(key)
        if isinstance(stored, Mapping):
            for name, raw in stored.items():
                number = parse_weight(raw)
                if name in values and number is not None:
                    values[name] = number
        merged.append(values)
    return LeaderboardWeights(metrics=merged[0], datasets=merged[1])


def parse_weight(raw: Any) -> float | None:
    """Return ``raw`` as a weight in 0..MAX_WEIGHT, or None if it is not one."""
    if isinstance(raw, bool):
        return None
    try:
        number = float(str(raw).strip()[:40]) if not isinstance(raw, int | float) else float(raw)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number) or number < 0 or number > MAX_WEIGHT:
        return None
    return number


def _get(querydict: Mapping[str, Any], key: str) -> Any:
    # A QueryDict's ``get`` gives the last value of a repeated parameter; a dict's is plain.
    try:
        return querydict.get(key)
    except (AttributeError, TypeError):
        return None


def _positive_int(raw: Any, *, default: int, maximum: int) -> int | None:
    if raw is None or raw == "":
        return default
    text = str(raw).strip()
    # isascii: str.isdigit accepts "²", which int() refuses.
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        return None
    number = int(text)
    return number if 1 <= number <= maximum else None


def _finite_or_none(value: Any) -> float | None:
    # ``type(...) is`` rather than isinstance: this runs for every metric of every score,
    # and JSON numbers are exactly int or float (bool is excluded on purpose).
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is int:
        return float(value)
    return None


def _number_text(value: float) -> str:
    return f"{value:g}"


# -- the table ------------------------------------------------------------------------------
def _weighted_mean(pairs: Sequence[tuple[float, float | None]]) -> float | None:
    """Return the weighted mean of ``(weight, value)``; None if a value is missing."""
    total = 0.0
    weighted = []
    for weight, value in pairs:
        if value is None:
            return None
        weighted.append(weight * value)
        total += weight
    return math.fsum(weighted) / total if total > 0 else None


def build_leaderboard_table(
    *,
    task_code: str,
    metric_specs: Sequence[Any],
    datasets: Sequence[DatasetRecord],
    models: Sequence[ModelRecord] = (),
    scores: ScoreColumns | Iterable[ScoreRecord] = (),
    weights: LeaderboardWeights,
    board: Board | None = None,
    sort: str = DEFAULT_SORT,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
    instance_memory_gb: float = DEFAULT_INSTANCE_MEMORY_GB,
    messages: Sequence[str] = (),
) -> LeaderboardTable:
    """Return one page of the leaderboard of ``models`` (see the module docstring).

    The Dynascore of every model is computed in one pass on numpy arrays (the fast path of
    ``leaderboards.dynascore``, equal to the reference to the last bit); every model is
    ordered, but only the page rows are built into ``LeaderboardRow`` objects, so the
    Python work per model is a few list and array operations. ``board`` (a ``Board`` of
    the listed models and of ``datasets``, by slug, e.g. from ``leaderboards.cubes``)
    replaces ``models`` and ``scores``.
    """
    notes = list(messages)
    main_spec = next((spec for spec in metric_specs if spec.is_main), None)
    main_metric = main_spec.name if main_spec is not None else ""
    scoring = [dataset for dataset in datasets if dataset.access_type == "scoring"]
    dataset_weights = {
        dataset.slug: float(weights.datasets.get(dataset.slug, dataset.default_weight))
        for dataset in scoring
    }
    metric_names = [spec.name for spec in metric_specs]
    if board is None:
        if not isinstance(scores, ScoreColumns):
            scores = ScoreColumns.from_records(scores)
        board = Board.load(models, datasets, scores, metric_names, main_metric)
    keys = board.keys

    error: str | None = None
    error_code: str | None = None
    try:
        # Datasets missing from ``dataset_weights`` (standard, hidden) are ignored by
        # the averaging, so every dataset of the board is passed.
        averages, _ = average_over_datasets_array(board.values, board.slugs, dataset_weights)
    except DynascoreError as problem:
        error, error_code = problem.message, problem.code
        averages = np.full((len(keys), len(board.metric_names)), np.nan)
    has_value = ~np.isnan(averages).all(axis=0)
    available = {
        name for name, has in zip(board.metric_names, has_value.tolist(), strict=True) if has
    }

    shown_specs = [spec for spec in metric_specs if spec.name in available or spec.is_main]
    hidden_metrics = tuple(spec.name for spec in metric_specs if spec not in shown_specs)
    offsets = {
        spec.name: _offset(spec, board.average_column(averages, spec.name), instance_memory_gb)
        for spec in shown_specs
        if str(spec.direction) == LOWER
    }
    metric_inputs = [
        MetricInput(
            name=spec.name,
            direction=str(spec.direction),
            weight=float(weights.metrics.get(spec.name, spec.default_weight)),
            offset=offsets.get(spec.name, 0.0),
        )
        for spec in shown_specs
        if spec.name in available
    ]

    result: DynascoreArrays | None = None
    if error is None and main_metric in available:
        try:
            result = compute_dynascore_arrays(
                keys,
                averages[:, [board.metric_position[item.name] for item in metric_inputs]],
                metric_inputs,
                main_metric=main_metric,
            )
        except DynascoreError as problem:
            error, error_code = problem.message, problem.code
    elif error is None and board.keys:
        notes.append("No model has a score on the scoring datasets yet.")

    columns = tuple(
        MetricColumn(
            name=spec.name,
            label=METRIC_LABELS.get(spec.name, spec.name.replace("_", " ").capitalize()),
            kind=spec.kind,
            direction=str(spec.direction),
            weight=float(weights.metrics.get(spec.name, spec.default_weight)),
            default_weight=float(spec.default_weight),
            is_main=spec.is_main,
            offset=offsets.get(spec.name, 0.0),
            amrs=result.amrs.get(spec.name) if result is not None else None,
            contributes=result is not None and result.amrs.get(spec.name, 0.0) > 0,
        )
        for spec in shown_specs
    )
    dataset_columns = tuple(
        DatasetColumn(
            slug=dataset.slug,
            name=dataset.name,
            access_type=dataset.access_type,
            round_number=dataset.round_number,
            weight=dataset_weights.get(dataset.slug, dataset.default_weight),
            default_weight=dataset.default_weight,
        )
        for dataset in datasets
    )

    # The main metric's CI per model: dataset-weighted bounds (for the rows and "ci" sort).
    weighted = [
        (board.slug_position[dataset.slug], dataset_weights.get(dataset.slug, 0.0))
        for dataset in scoring
        if dataset_weights.get(dataset.slug, 0.0) > 0
    ]
    ci_columns = [position for position, _ in weighted]
    ci_weights = [weight for _, weight in weighted]
    ci_lows = weighted_row_means(board.ci_lows[:, ci_columns], ci_weights)
    ci_highs = weighted_row_means(board.ci_highs[:, ci_columns], ci_weights)

    # Order every model (arrays), then build rows for the page only.
    required = {item.name for item in metric_inputs if item.weight > 0} | {main_metric}

    def missing_of(index: int) -> tuple[str, ...]:
        if result is not None:
            return result.missing.get(index, ())
        if error is not None:
            return ()
        values = board.average_row(averages, index)
        return tuple(name for name in metric_names if name in required and values.get(name) is None)

    if result is None:
        groups = np.zeros(len(keys), dtype=np.int64)
    else:
        # Ranked (complete) models first, incomplete ones below.
        groups = np.ones(len(keys), dtype=np.int64)
        groups[result.order[: result.complete_count]] = 0
    field_name = sort.removeprefix("-")
    descending = sort.startswith("-")
    if field_name == "name":
        order = _order_by_name(board, groups, descending)
    else:
        if field_name == "dynascore":
            values = result.dynascores if result is not None else np.full(len(keys), np.nan)
        elif field_name == "ci":
            values = ci_lows
        elif field_name.startswith(DATASET_SORT_PREFIX):
            values = board.main_on(field_name.removeprefix(DATASET_SORT_PREFIX))
        else:
            values = board.average_column(averages, field_name)
        # Inside each group missing values go last whichever the direction, and the model
        # key breaks ties (stable pages); ``keys`` are sorted, so a key's rank is its index.
        missing = np.isnan(values)
        signed = np.where(missing, 0.0, -values if descending else values)
        order = np.lexsort((np.arange(len(keys)), signed, missing, groups)).tolist()

    total_rows = len(order)
    page_count = max(1, math.ceil(total_rows / page_size))
    if page > page_count:
        notes.append(f"There are only {page_count} page(s): showing the last one.")
        page = page_count
    start = (page - 1) * page_size
    shown_names = [spec.name for spec in shown_specs]
    rows = tuple(
        _row(
            board,
            index,
            result.model_score(index) if result is not None else None,
            averages,
            shown_names,
            datasets,
            main_metric,
            ci_lows,
            ci_highs,
            missing_of(index),
        )
        for index in order[start : start + page_size]
    )

    trend_rounds, trends = _trends(result, scoring, board)
    return LeaderboardTable(
        task_code=task_code,
        main_metric=main_metric,
        weights=LeaderboardWeights(
            metrics={
                spec.name: float(weights.metrics.get(spec.name, spec.default_weight))
                for spec in metric_specs
            },
            datasets=dataset_weights,
        ),
        sort=sort,
        page=page,
        page_size=page_size,
        page_count=page_count,
        total_rows=total_rows,
        metrics=columns,
        datasets=dataset_columns,
        rows=rows,
        hidden_metrics=hidden_metrics,
        error=error,
        error_code=error_code,
        messages=tuple(notes),
        best_per_tag=_best_per_tag(board, dataset_weights),
        trend_rounds=trend_rounds,
        trends=trends,
    )


@dataclass(frozen=True, eq=False)
class Board:
    """The scores of the listed models as arrays: models (sorted keys) x datasets x metrics.

    ``keys`` are the models' zero-padded ids, sorted; ``slugs`` the datasets (the listed
    ones, then any other slug the scores name). NaN stands for a missing value; ``present``
    says which (model, dataset) pairs have a Score (the last Score wins if a pair has
    two). ``tag_values`` holds each score's main metric on each of ``tag_names``
    (models x datasets x tags; NaN: the score has no value for that tag).
    """

    keys: list[str]
    models: Sequence[ModelRecord]
    slugs: list[str]
    slug_position: dict[str, int]
    metric_names: list[str]
    metric_position: dict[str, int]
    values: np.ndarray
    main: np.ndarray
    present: np.ndarray
    ci_lows: np.ndarray
    ci_highs: np.ndarray
    tag_names: list[str]
    tag_values: np.ndarray

    @classmethod
    def load(
        cls,
        models: Sequence[ModelRecord],
        datasets: Sequence[DatasetRecord],
        scores: ScoreColumns,
        metric_names: Sequence[str],
        main_metric: str,
    ) -> Board:
        model_by_key = {f"{model.model_id:012d}": model for model in models}
        keys = sorted(model_by_key)
        listed = [model_by_key[key] for key in keys]
        model_position = {model.model_id: index for index, model in enumerate(listed)}
        slugs = list(dict.fromkeys([dataset.slug for dataset in datasets]))
        slug_position = {slug: index for index, slug in enumerate(slugs)}
        for slug in dict.fromkeys(scores.dataset_slugs):
            if slug not in slug_position:
                slug_position[slug] = len(slugs)
                slugs.append(slug)
        names = list(dict.fromkeys(metric_names))
        metric_position = {name: index for index, name in enumerate(names)}

        model_index = np.array(
            [model_position.get(model_id, -1) for model_id in scores.model_ids], dtype=np.int64
        )
        dataset_index = np.array(
            list(map(slug_position.__getitem__, scores.dataset_slugs)), dtype=np.int64
        )
        kept = np.flatnonzero(model_index >= 0)
        pairs = model_index[kept] * max(len(slugs), 1) + dataset_index[kept]
        # The last Score of a (model, dataset) pair wins, listed where the pair first came.
        _, last_reversed = np.unique(pairs[::-1], return_index=True)
        if last_reversed.size != kept.size:
            _, first = np.unique(pairs, return_index=True)
            winners = len(pairs) - 1 - last_reversed
            kept = kept[winners[np.argsort(first, kind="stable")]]
        model_index = model_index[kept]
        dataset_index = dataset_index[kept]

        shape = (len(keys), len(slugs))
        values = np.full((*shape, len(names)), np.nan)
        if kept.size:
            values[model_index, dataset_index, :] = scores.metric_matrix(names, main_metric)[kept]
        if main_metric in metric_position:
            main = values[:, :, metric_position[main_metric]]
        else:
            main = np.full(shape, np.nan)
            main[model_index, dataset_index] = scores.metric(main_metric, main_metric)[kept]
        present = np.zeros(shape, dtype=bool)
        present[model_index, dataset_index] = True
        ci_lows = np.full(shape, np.nan)
        ci_lows[model_index, dataset_index] = _finite_array(scores.ci_lows)[kept]
        ci_highs = np.full(shape, np.nan)
        ci_highs[model_index, dataset_index] = _finite_array(scores.ci_highs)[kept]
        tag_names, tag_values = _tag_array(
            shape,
            model_index,
            dataset_index,
            _main_tag_maps(scores, kept.tolist(), main_metric),
        )
        return cls(
            keys=keys,
            models=listed,
            slugs=slugs,
            slug_position=slug_position,
            metric_names=names,
            metric_position=metric_position,
            values=values,
            main=main,
            present=present,
            ci_lows=ci_lows,
            ci_highs=ci_highs,
            tag_names=tag_names,
            tag_values=tag_values,
        )

    def average_column(self, averages: np.ndarray, name: str) -> np.ndarray:
        """Return every model's average of metric ``name`` (NaN when it has none)."""
        if name not in self.metric_position:
            return np.full(len(self.keys), np.nan)
        return averages[:, self.metric_position[name]]

    def average_row(self, averages: np.ndarray, index: int) -> dict[str, float | None]:
        """Return the averages of the model at ``index`` by metric name (None when missing)."""
        return {
            name: _none_if_nan(value)
            for name, value in zip(self.metric_names, averages[index].tolist(), strict=True)
        }

    def main_on(self, slug: str) -> np.ndarray:
        """Return every model's main metric on dataset ``slug`` (NaN when it has none)."""
        if slug not in self.slug_position:
            return np.full(len(self.keys), np.nan)
        return self.main[:, self.slug_position[slug]]

    def display_name(self, index: int) -> str:
        model = self.models[index]
        return model.name if model.show_identity else ANONYMOUS_NAME


def _none_if_nan(value: float) -> float | None:
    return None if value != value else value


def _order_by_name(board: Board, groups: np.ndarray, descending: bool) -> list[int]:
    """Return the model positions by display name (case-folded) inside each group."""
    keyed = [
        (group, board.display_name(index).lower(), board.keys[index])
        for index, group in enumerate(groups.tolist())
    ]
    if descending:
        keyed.sort(key=lambda item: (item[0], item[1] is None, item[2]))
        keyed = _reverse_within_groups(keyed)
    else:
        keyed.sort(key=lambda item: (item[0], 0, item[1], item[2]))
    position = {key: index for index, key in enumerate(board.keys)}
    return [position[key] for _, _, key in keyed]


def _reverse_within_groups(keyed: list[tuple[int, Any, str]]) -> list[tuple[int, Any, str]]:
    # Descending by name: reverse the named part of each group, keep missing names last.
    result: list[tuple[int, Any, str]] = []
    for group in sorted({item[0] for item in keyed}):
        members = [item for item in keyed if item[0] == group]
        named = [item for item in members if item[1] is not None]
        named.sort(key=lambda item: (item[1], item[2]), reverse=True)
        result += named + [item for item in members if item[1] is None]
    return result


def _offset(spec: Any, averages: np.ndarray, memory: float) -> float:
    if spec.name == MEMORY_METRIC:
        return float(memory)
    values = [value for value in averages.tolist() if value == value]
    return max(values) if values else 0.0


def _row(
    board: Board,
    index: int,
    ranked: ModelScore | None,
    averages: np.ndarray,
    shown_metrics: Sequence[str],
    datasets: Sequence[DatasetRecord],
    main_metric: str,
    ci_lows: np.ndarray,
    ci_highs: np.ndarray,
    missing: tuple[str, ...],
) -> LeaderboardRow:
    model = board.models[index]
    cells = {}
    for dataset in datasets:
        position = board.slug_position[dataset.slug]
        cells[dataset.slug] = (
            DatasetCell(
                _none_if_nan(float(board.main[index, position])),
                _none_if_nan(float(board.ci_lows[index, position])),
                _none_if_nan(float(board.ci_highs[index, position])),
            )
            if board.present[index, position]
            else DatasetCell(None)
        )
    values = board.average_row(averages, index)
    return LeaderboardRow(
        rank=ranked.rank if ranked is not None else None,
        model_id=model.model_id,
        model_name=model.name if model.show_identity else ANONYMOUS_NAME,
        owner_name=model.owner_name if model.show_identity else ANONYMOUS_OWNER,
        is_anonymous=not model.show_identity,
        dynascore=ranked.dynascore if ranked is not None else None,
        metrics={name: values.get(name) for name in shown_metrics},
        ci_low=_none_if_nan(float(ci_lows[index])),
        ci_high=_none_if_nan(float(ci_highs[index])),
        datasets=cells,
        incomplete=bool(missing),
        missing_metrics=missing,
        contributions=dict(ranked.contributions) if ranked is not None else {},
    )


def _best_per_tag(board: Board, dataset_weights: Mapping[str, float]) -> tuple[TagLeader, ...]:
    """Return, per example tag, the model with the best weighted main metric on it.

    A model's value on a tag is the dataset-weighted mean of its per-tag main metric over
    the datasets of positive weight that have a value for the tag (summed in the board's
    dataset order); the best value wins, the smaller model key on a tie.
    """
    count = len(board.keys)
    if not board.tag_names or not count:
        return ()
    totals = np.zeros((count, len(board.tag_names)))
    weights = np.zeros_like(totals)
    for slug, position in board.slug_position.items():
        weight = dataset_weights.get(slug, 0.0)
        if not weight > 0:
            continue
        values = board.tag_values[:, position, :]
        has = ~np.isnan(values)
        totals += weight * np.where(has, values, 0.0)
        weights += np.where(has, weight, 0.0)
    scored = weights > 0
    means = np.full_like(totals, -np.inf)
    np.divide(totals, weights, out=means, where=scored)
    tags = np.flatnonzero(scored.any(axis=0))
    # ``argmax`` takes the first best: the smaller model position, that is the smaller key.
    best = means[:, tags].argmax(axis=0)
    return tuple(
        TagLeader(board.tag_names[tag], board.display_name(index), float(means[index, tag]))
        for tag, index in zip(tags.tolist(), best.tolist(), strict=True)
    )


def _main_tag_maps(scores: ScoreColumns, positions: Sequence[int], main_metric: str) -> list[Any]:
    """Return the ``{tag: main metric value}`` of the scores at ``positions``.

    That is ``main_per_tag``, else taken from ``per_tag``. A ``per_tag`` that is not a
    mapping gives itself (``_tag_array`` skips it); its tags whose value is not a mapping
    are left out, as they have no main metric.
    """
    main_per_tag = scores.main_per_tag
    per_tag = scores.per_tag
    if main_per_tag:
        maps: list[Any] = [main_per_tag[position] for position in positions]
        if None not in maps:  # every score has its ``main_per_tag``: the common case
            return maps
    maps = []
    for position in positions:
        known = main_per_tag[position] if main_per_tag else None
        if known is None:
            tags = per_tag[position]
            if isinstance(tags, Mapping):
                known = {
                    tag: values.get(main_metric)
                    for tag, values in tags.items()
                    if isinstance(values, Mapping)
                }
            else:
                known = tags
        maps.append(known)
    return maps


def _tag_array(
    shape: tuple[int, int],
    model_index: np.ndarray,
    dataset_index: np.ndarray,
    tag_maps: Sequence[Any],
) -> tuple[list[str], np.ndarray]:
    """Return the tag names (sorted) and the models x datasets x tags array of ``tag_maps``.

    ``tag_maps[i]`` is the ``{tag: main metric value}`` of the score at (``model_index[i]``,
    ``dataset_index[i]``); one that is not a mapping, and values that are not finite
    numbers, give nothing (NaN). The pairs are flattened with C-level iteration.
    """
    maps = [tags if isinstance(tags, Mapping) else {} for tags in tag_maps]
    tags = list(chain.from_iterable(maps))
    if not set(map(type, tags)) <= {str}:
        tags = [str(tag) for tag in tags]
    names = sorted(set(tags))
    array = np.full((*shape, len(names)), np.nan)
    if not tags:
        return names, array
    values = _finite_array(list(chain.from_iterable(map(methodcaller("values"), maps))))
    counts = np.fromiter(map(len, maps), dtype=np.int64, count=len(maps))
    position = {name: index for index, name in enumerate(names)}
    array[
        np.repeat(model_index, counts),
        np.repeat(dataset_index, counts),
        np.array(list(map(position.__getitem__, tags)), dtype=np.int64),
    ] = values
    return names, array


def _trends(
    result: DynascoreArrays | None, scoring: Sequence[DatasetRecord], board: Board
) -> tuple[tuple[int, ...], tuple[TrendSeries, ...]]:
    """Return the rounds and, for the top models, the main metric on each round's datasets."""
    rounds = sorted({d.round_number for d in scoring if d.round_number is not None})
    if result is None or not rounds:
        return tuple(rounds), ()
    top = result.order[: min(TREND_MODEL_COUNT, result.complete_count)].tolist()
    series = []
    for index in top:
        values = []
        for number in rounds:
            pairs = []
            for dataset in scoring:
                if dataset.round_number != number:
                    continue
                position = board.slug_position[dataset.slug]
                if not board.present[index, position]:
                    continue
                # Every dataset of the round counts equally: trends compare rounds, not weights.
                pairs.append((1.0, _none_if_nan(float(board.main[index, position]))))
            values.append(_weighted_mean([pair for pair in pairs if pair[1] is not None]))
        series.append(TrendSeries(board.display_name(index), tuple(values)))
    return tuple(rounds), tuple(series)
