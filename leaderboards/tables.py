"""The leaderboard table: Dynascore glue, sorting, paging, trends (pure: no DB, no HTTP).

Contract: ``build_leaderboard_table`` takes plain records (the models a viewer may see,
their per-dataset scores, the visible datasets and the task config's metrics) and returns
a typed ``LeaderboardTable``; ``leaderboards.selectors.leaderboard_table`` loads those
records with a fixed number of queries and calls it. ``parse_leaderboard_query`` turns a
query string into weights, a sort key and a page; a bad value falls back to its default
and adds a message, it never raises.

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
from typing import Any

from leaderboards.dynascore import (
    LOWER,
    DynascoreError,
    MetricInput,
    average_over_datasets,
    compute_dynascores,
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


# Slots and no freezing: a 1000-model board builds thousands of these per request.
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


def _metric_values(
    score: ScoreRecord, names: Sequence[str], main_metric: str
) -> dict[str, float | None]:
    """Return every metric of ``score`` at once (``ScoreRecord.metric``, inlined for speed)."""
    metrics = score.metrics if type(score.metrics) is dict else {}
    values: dict[str, float | None] = {}
    for name in names:
        value = metrics.get(name)
        if value is None:
            column = SCORE_COLUMN_OF_METRIC.get(name)
            if column is not None:
                value = score.columns.get(column)
            if value is None and name == main_metric:
                value = score.main_value
        kind = type(value)
        if kind is float:
            values[name] = value if math.isfinite(value) else None
        elif kind is int:
            values[name] = float(value)
        else:
            values[name] = None
    return values


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
    models: Sequence[ModelRecord],
    scores: Iterable[ScoreRecord],
    weights: LeaderboardWeights,
    sort: str = DEFAULT_SORT,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
    instance_memory_gb: float = DEFAULT_INSTANCE_MEMORY_GB,
    messages: Sequence[str] = (),
) -> LeaderboardTable:
    """Return one page of the leaderboard of ``models`` (see the module docstring).

    The Dynascore is computed over every model in one pass; only the page rows are built
    into ``LeaderboardRow`` objects, so the cost of rendering does not grow with the
    number of models.
    """
    notes = list(messages)
    main_spec = next((spec for spec in metric_specs if spec.is_main), None)
    main_metric = main_spec.name if main_spec is not None else ""
    scoring = [dataset for dataset in datasets if dataset.access_type == "scoring"]
    dataset_weights = {
        dataset.slug: float(weights.datasets.get(dataset.slug, dataset.default_weight))
        for dataset in scoring
    }
    model_by_id = {model.model_id: model for model in models}

    # model key -> dataset slug -> metric -> value; one pass over the score records.
    per_dataset: dict[str, dict[str, dict[str, float | None]]] = {}
    score_of: dict[tuple[str, str], ScoreRecord] = {}
    key_of = {model.model_id: f"{model.model_id:012d}" for model in models}
    for key in key_of.values():
        per_dataset[key] = {}
    metric_names = [spec.name for spec in metric_specs]
    for score in scores:
        key = key_of.get(score.model_id)
        if key is None:
            continue
        score_of[(key, score.dataset_slug)] = score
        per_dataset[key][score.dataset_slug] = _metric_values(score, metric_names, main_metric)

    error: str | None = None
    error_code: str | None = None
    averages: dict[str, dict[str, float | None]] = {}
    try:
        # Datasets missing from ``dataset_weights`` (standard, hidden) are ignored by
        # ``average_over_datasets``, so the per-dataset table is passed as it is.
        averages = average_over_datasets(per_dataset, dataset_weights)
    except DynascoreError as problem:
        error, error_code = problem.message, problem.code

    available = {
        name for row in averages.values() for name, value in row.items() if value is not None
    }
    shown_specs = [spec for spec in metric_specs if spec.name in available or spec.is_main]
    hidden_metrics = tuple(spec.name for spec in metric_specs if spec not in shown_specs)
    offsets = {
        spec.name: _offset(spec, averages, instance_memory_gb)
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

    result = None
    if error is None and main_metric in available:
        try:
            result = compute_dynascores(
                {key: averages.get(key, {}) for key in per_dataset},
                metric_inputs,
                main_metric=main_metric,
            )
        except DynascoreError as problem:
            error, error_code = problem.message, problem.code
    elif error is None and models:
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

    # Order every model (cheap tuples), then build rows for the page only.
    ranking = {score.model: score for score in result.ranking} if result is not None else {}
    required = {item.name for item in metric_inputs if item.weight > 0} | {main_metric}

    def missing_of(key: str) -> tuple[str, ...]:
        if key in ranking:
            return tuple(ranking[key].missing_metrics)
        if result is not None or error is not None:
            return ()
        values = averages.get(key, {})
        return tuple(name for name in metric_names if name in required and values.get(name) is None)

    def sort_value(key: str) -> float | str | None:
        field_name = sort.removeprefix("-")
        if field_name == "dynascore":
            return ranking[key].dynascore if key in ranking else None
        if field_name == "name":
            model = model_by_id[int(key)]
            return (model.name if model.show_identity else ANONYMOUS_NAME).lower()
        if field_name == "ci":
            return _main_ci(key, scoring, dataset_weights, score_of)[0]
        if field_name.startswith(DATASET_SORT_PREFIX):
            slug = field_name.removeprefix(DATASET_SORT_PREFIX)
            record = score_of.get((key, slug))
            return record.metric(main_metric, main_metric) if record else None
        return averages.get(key, {}).get(field_name)

    descending = sort.startswith("-")
    keys = list(per_dataset)
    # Ranked (complete) models first, incomplete ones below; inside each group missing
    # values go last whichever the direction, and the model id breaks ties (stable pages).
    keyed = []
    for key in keys:
        value = sort_value(key)
        is_ranked = key in ranking and ranking[key].dynascore is not None
        group = 0 if (is_ranked or result is None) else 1
        keyed.append((group, value, key))

    def order(item: tuple[int, Any, str]) -> tuple:
        group, value, key = item
        if value is None:
            return (group, 1, 0, key)
        if isinstance(value, str):
            return (group, 0, value, key)
        return (group, 0, -value if descending else value, key)

    if sort.removeprefix("-") == "name" and descending:
        keyed.sort(key=lambda item: (item[0], item[1] is None, item[2]))
        keyed = _reverse_within_groups(keyed)
    else:
        keyed.sort(key=order)

    total_rows = len(keyed)
    page_count = max(1, math.ceil(total_rows / page_size))
    if page > page_count:
        notes.append(f"There are only {page_count} page(s): showing the last one.")
        page = page_count
    start = (page - 1) * page_size
    page_keys = [key for _, _, key in keyed[start : start + page_size]]
    rows = tuple(
        _row(
            key,
            model_by_id[int(key)],
            ranking.get(key),
            averages.get(key, {}),
            [spec.name for spec in shown_specs],
            datasets,
            scoring,
            dataset_weights,
            score_of,
            main_metric,
            missing_of(key),
        )
        for key in page_keys
    )

    trend_rounds, trends = _trends(result, scoring, score_of, main_metric, model_by_id)
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
        best_per_tag=_best_per_tag(scoring, dataset_weights, score_of, main_metric, model_by_id),
        trend_rounds=trend_rounds,
        trends=trends,
    )


def _reverse_within_groups(keyed: list[tuple[int, Any, str]]) -> list[tuple[int, Any, str]]:
    # Descending by name: reverse the named part of each group, keep missing names last.
    result: list[tuple[int, Any, str]] = []
    for group in sorted({item[0] for item in keyed}):
        members = [item for item in keyed if item[0] == group]
        named = [item for item in members if item[1] is not None]
        named.sort(key=lambda item: (item[1], item[2]), reverse=True)
        result += named + [item for item in members if item[1] is None]
    return result


def _offset(spec: Any, averages: Mapping[str, Mapping[str, float | None]], memory: float) -> float:
    if spec.name == MEMORY_METRIC:
        return float(memory)
    observed = [row.get(spec.name) for row in averages.values()]
    values = [value for value in observed if value is not None]
    return max(values) if values else 0.0


def _main_ci(
    key: str,
    scoring: Sequence[DatasetRecord],
    dataset_weights: Mapping[str, float],
    score_of: Mapping[tuple[str, str], ScoreRecord],
) -> tuple[float | None, float | None]:
    lows: list[tuple[float, float | None]] = []
    highs: list[tuple[float, float | None]] = []
    for dataset in scoring:
        weight = dataset_weights.get(dataset.slug, 0.0)
        if weight <= 0:
            continue
        record = score_of.get((key, dataset.slug))
        lows.append((weight, _finite_or_none(record.ci_low) if record else None))
        highs.append((weight, _finite_or_none(record.ci_high) if record else None))
    if not lows:
        return None, None
    return _weighted_mean(lows), _weighted_mean(highs)


def _row(
    key: str,
    model: ModelRecord,
    ranked: Any,
    averages: Mapping[str, float | None],
    shown_metrics: Sequence[str],
    datasets: Sequence[DatasetRecord],
    scoring: Sequence[DatasetRecord],
    dataset_weights: Mapping[str, float],
    score_of: Mapping[tuple[str, str], ScoreRecord],
    main_metric: str,
    missing: tuple[str, ...],
) -> LeaderboardRow:
    ci_low, ci_high = _main_ci(key, scoring, dataset_weights, score_of)
    cells = {}
    for dataset in datasets:
        record = score_of.get((key, dataset.slug))
        cells[dataset.slug] = (
            DatasetCell(
                record.metric(main_metric, main_metric),
                _finite_or_none(record.ci_low),
                _finite_or_none(record.ci_high),
            )
            if record is not None
            else DatasetCell(None)
        )
    return LeaderboardRow(
        rank=ranked.rank if ranked is not None else None,
        model_id=model.model_id,
        model_name=model.name if model.show_identity else ANONYMOUS_NAME,
        owner_name=model.owner_name if model.show_identity else ANONYMOUS_OWNER,
        is_anonymous=not model.show_identity,
        dynascore=ranked.dynascore if ranked is not None else None,
        metrics={name: averages.get(name) for name in shown_metrics},
        ci_low=ci_low,
        ci_high=ci_high,
        datasets=cells,
        incomplete=bool(missing),
        missing_metrics=missing,
        contributions=dict(ranked.contributions) if ranked is not None else {},
    )


def _best_per_tag(
    scoring: Sequence[DatasetRecord],
    dataset_weights: Mapping[str, float],
    score_of: Mapping[tuple[str, str], ScoreRecord],
    main_metric: str,
    model_by_id: Mapping[int, ModelRecord],
) -> tuple[TagLeader, ...]:
    """Return, per example tag, the model with the best weighted main metric on it."""
    weighted: dict[tuple[str, str], list[float]] = {}
    for (key, slug), record in score_of.items():
        weight = dataset_weights.get(slug, 0.0)
        if weight <= 0 or not isinstance(record.per_tag, Mapping):
            continue
        for tag, values in record.per_tag.items():
            value = (
                _finite_or_none(values.get(main_metric)) if isinstance(values, Mapping) else None
            )
            if value is None:
                continue
            sums = weighted.setdefault((str(tag), key), [0.0, 0.0])
            sums[0] += weight * value
            sums[1] += weight
    best: dict[str, tuple[float, str]] = {}
    for (tag, key), (total, weight) in weighted.items():
        value = total / weight
        current = best.get(tag)
        if current is None or value > current[0] or (value == current[0] and key < current[1]):
            best[tag] = (value, key)
    leaders = []
    for tag in sorted(best):
        value, key = best[tag]
        model = model_by_id[int(key)]
        leaders.append(TagLeader(tag, model.name if model.show_identity else ANONYMOUS_NAME, value))
    return tuple(leaders)


def _trends(
    result: Any,
    scoring: Sequence[DatasetRecord],
    score_of: Mapping[tuple[str, str], ScoreRecord],
    main_metric: str,
    model_by_id: Mapping[int, ModelRecord],
) -> tuple[tuple[int, ...], tuple[TrendSeries, ...]]:
    """Return the rounds and, for the top models, the main metric on each round's datasets."""
    rounds = sorted({d.round_number for d in scoring if d.round_number is not None})
    if result is None or not rounds:
        return tuple(rounds), ()
    top = [score.model for score in result.ranking if score.rank is not None][:TREND_MODEL_COUNT]
    series = []
    for key in top:
        values = []
        for number in rounds:
            pairs = []
            for dataset in scoring:
                if dataset.round_number != number:
                    continue
                record = score_of.get((key, dataset.slug))
                if record is None:
                    continue
                # Every dataset of the round counts equally: trends compare rounds, not weights.
                pairs.append((1.0, record.metric(main_metric, main_metric)))
            values.append(_weighted_mean([pair for pair in pairs if pair[1] is not None]))
        model = model_by_id[int(key)]
        series.append(
            TrendSeries(model.name if model.show_identity else ANONYMOUS_NAME, tuple(values))
        )
    return tuple(rounds), tuple(series)
