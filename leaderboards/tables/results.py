"""The typed leaderboard table and its query (pure: no DB, no HTTP).

``LeaderboardTable`` is one page of a leaderboard with what the page around it shows; it
renders itself as plain JSON types (``as_dict``) and as CSV cells. ``LeaderboardWeights``
and ``LeaderboardQuery`` are a parsed query string (``leaderboards.tables.query``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from leaderboards.dynascore import LOWER

DEFAULT_PAGE_SIZE = 50
DEFAULT_SORT = "-dynascore"
METRIC_PARAMETER_PREFIX = "w_"
DATASET_PARAMETER_PREFIX = "d_"
DATASET_SORT_PREFIX = "dataset:"
# A metric other than the main one is flagged when it makes up more than this share.
DOMINANT_SHARE = 0.5


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
    # The step at which models are compared (0: exact), a fraction when relative.
    resolution: float = 0.0
    relative_resolution: bool = False
    # A figure the model's endpoint states about itself (memory from /health).
    self_reported: bool = False
    # Left out of every model's Dynascore because a listed predictions-file model lacks it.
    left_out: bool = False

    @property
    def resolution_text(self) -> str:
        """Return the resolution for people ("10 %", "0.1"), or "" for an exact metric."""
        if not self.resolution:
            return ""
        if self.relative_resolution:
            return f"{self.resolution * 100:g} %"
        return f"{self.resolution:g}"

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
            "resolution": self.resolution,
            "relative_resolution": self.relative_resolution,
            "self_reported": self.self_reported,
            "left_out": self.left_out,
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
    """A model's main-metric value on one dataset, with its bootstrap interval.

    ``covered`` of ``total`` examples had a prediction (None: not known or no score); the
    cell is *partial* when some had none (they counted as wrong).
    """

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    covered: int | None = None
    total: int | None = None

    @property
    def partial(self) -> bool:
        return self.covered is not None and self.total is not None and self.covered < self.total

    @property
    def coverage(self) -> str:
        """Return e.g. ``"300 of 400"``; empty when not known."""
        if self.covered is None or self.total is None:
            return ""
        return f"{self.covered} of {self.total}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "covered": self.covered,
            "total": self.total,
            "partial": self.partial,
        }


@dataclass(frozen=True)
class NextComparison:
    """How sure the ranking is that a model is ahead of the next ranked one.

    The shares (0..1) of bootstrap resamples in which this model beats the next one on
    the main metric's aggregate and on the Dynascore (a draw counts half). The pair is a
    statistical tie when neither model is ahead in 95% of them; ``*_next_ahead`` when the
    next model is. None where a score has no resamples.
    """

    model_name: str
    main_share: float | None
    main_tie: bool | None
    dynascore_share: float | None
    dynascore_tie: bool | None
    main_next_ahead: bool | None = None
    dynascore_next_ahead: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "main_metric_share": self.main_share,
            "main_metric_tie": self.main_tie,
            "main_metric_next_ahead": self.main_next_ahead,
            "dynascore_share": self.dynascore_share,
            "dynascore_tie": self.dynascore_tie,
            "dynascore_next_ahead": self.dynascore_next_ahead,
        }


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
    # Scored from predictions files: no job metrics ("n/a (predictions file)").
    predictions_file: bool = False
    # Each metric's share of the Dynascore (0..1, summing to 1; see ``score_shares``).
    shares: Mapping[str, float] = field(default_factory=dict)
    # A metric other than the main one that makes up more than half of the score.
    dominant_metric: str | None = None
    dynascore_ci_low: float | None = None
    dynascore_ci_high: float | None = None
    # Against the next model in the ranking (None for the last ranked and unranked ones).
    next_comparison: NextComparison | None = None

    @property
    def partial_datasets(self) -> tuple[str, ...]:
        """Return the slugs of the datasets whose score is partial."""
        return tuple(slug for slug, cell in self.datasets.items() if cell.partial)

    @property
    def partial(self) -> bool:
        return bool(self.partial_datasets)

    @property
    def coverage_note(self) -> str:
        """Return e.g. ``"alpha: 300 of 400"`` for each partial dataset, ``; ``-separated."""
        return "; ".join(
            f"{slug}: {cell.coverage}" for slug, cell in self.datasets.items() if cell.partial
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "model_id": None if self.is_anonymous else self.model_id,
            "model": self.model_name,
            "owner": self.owner_name,
            "anonymous": self.is_anonymous,
            "dynascore": self.dynascore,
            "dynascore_ci_low": self.dynascore_ci_low,
            "dynascore_ci_high": self.dynascore_ci_high,
            "metrics": dict(self.metrics),
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "ahead_of_next": (
                self.next_comparison.as_dict() if self.next_comparison is not None else None
            ),
            "datasets": {slug: cell.as_dict() for slug, cell in self.datasets.items()},
            "incomplete": self.incomplete,
            "missing_metrics": list(self.missing_metrics),
            "contributions": dict(self.contributions),
            "partial": self.partial,
            "partial_datasets": list(self.partial_datasets),
            "predictions_file": self.predictions_file,
            "shares": dict(self.shares),
            "dominant_metric": self.dominant_metric,
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
    # With fewer than two rounds: the top models' main metric per scoring dataset.
    bar_datasets: tuple[str, ...] = ()
    dataset_bars: tuple[TrendSeries, ...] = ()
    # Listed models scored from predictions files (no job metrics), and the job metrics
    # left out of every model's Dynascore because of them.
    predictions_file_models: int = 0
    left_out_metrics: tuple[str, ...] = ()

    @property
    def left_out_labels(self) -> tuple[str, ...]:
        """Return the labels of the metrics left out because of predictions-file models."""
        return tuple(column.label for column in self.metrics if column.left_out)

    @property
    def counts_self_reported_by_default(self) -> bool:
        """Return True when a self-reported metric weighs in the default weighting."""
        return any(column.self_reported and column.default_weight > 0 for column in self.metrics)

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

    @property
    def trends_chart(self) -> dict[str, Any] | None:
        """Return what the page's trends chart draws: a line per top model across the rounds
        when there are two or more, else a bar per scoring dataset; None when neither has
        anything to say (the chart is left out)."""
        if len(self.trend_rounds) >= 2 and self.trends:
            return {
                "kind": "line",
                "title": f"{self.main_metric} per round, top models",
                "labels": [f"Round {number}" for number in self.trend_rounds],
                "series": [series.as_dict() for series in self.trends],
            }
        if self.dataset_bars:
            return {
                "kind": "bar",
                "title": f"{self.main_metric} per dataset, top models",
                "labels": list(self.bar_datasets),
                "series": [series.as_dict() for series in self.dataset_bars],
            }
        return None

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
            "predictions_file_models": self.predictions_file_models,
            "left_out_metrics": list(self.left_out_metrics),
        }

    def csv_header(self) -> list[str]:
        """Return the CSV header; ``csv_rows`` follows the same order."""
        header = ["rank", "model", "owner", "dynascore"]
        header += [metric.name for metric in self.metrics]
        header += [f"{self.main_metric}_ci_low", f"{self.main_metric}_ci_high"]
        header += ["dynascore_ci_low", "dynascore_ci_high"]
        header += [
            f"{self.main_metric}_ahead_of_next_share",
            f"{self.main_metric}_tie_with_next",
            f"{self.main_metric}_next_ahead",
            "dynascore_ahead_of_next_share",
            "dynascore_tie_with_next",
            "dynascore_next_ahead",
        ]
        header += [f"{DATASET_SORT_PREFIX}{dataset.slug}" for dataset in self.datasets]
        header += ["incomplete", "missing_metrics", "partial", "coverage"]
        return header

    def csv_rows(self) -> list[list[Any]]:
        """Return the page rows as CSV cells (empty string for a missing value)."""
        rows = []
        for row in self.rows:
            cells: list[Any] = [row.rank, row.model_name, row.owner_name, row.dynascore]
            cells += [row.metrics.get(metric.name) for metric in self.metrics]
            cells += [row.ci_low, row.ci_high, row.dynascore_ci_low, row.dynascore_ci_high]
            comparison = row.next_comparison
            cells += (
                [
                    comparison.main_share,
                    comparison.main_tie,
                    comparison.main_next_ahead,
                    comparison.dynascore_share,
                    comparison.dynascore_tie,
                    comparison.dynascore_next_ahead,
                ]
                if comparison is not None
                else [None] * 6
            )
            cells += [row.datasets[dataset.slug].value for dataset in self.datasets]
            cells += [row.incomplete, " ".join(row.missing_metrics)]
            cells += [row.partial, row.coverage_note]
            rows.append(["" if cell is None else cell for cell in cells])
        return rows


def _number_text(value: float) -> str:
    return f"{value:g}"
