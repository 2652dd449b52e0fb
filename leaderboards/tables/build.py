"""Build one page of the leaderboard: Dynascore glue, sorting, paging (pure: no DB, no HTTP).

Contract: ``build_leaderboard_table`` takes a ``LeaderboardRequest`` of plain records (the
models a viewer may see, their per-dataset scores as ``ScoreColumns`` or ``ScoreRecord``
objects, or a ``Board`` of them, the visible datasets and the task config's metrics, with
the weights, the sort and the page) and returns a typed
``LeaderboardTable``; ``leaderboards.selectors.boards.leaderboard_table`` loads those
records with a fixed number of queries and calls it.

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
* Models whose main metrics differ by less than ``MAIN_METRIC_RESOLUTION`` (0.1 point)
  are one level of the AMRS (the Dynascore's ``epsilon``), whatever their ids.
* Each metric is compared at the resolution the metric registry declares for it
  (``tasks.metrics.jobs``: throughput 10 %, latency 5 ms, memory 0.1 GB; perf and delta
  metrics exactly): ``MetricInput.resolution``. The latency offset is the largest value
  at that resolution.
* A model scored from predictions files has no job metric at all (a main metric, and
  no throughput, latency or memory on the scoring datasets). It is ranked, not
  incomplete: while one such model is listed, the job metrics are left out of every
  model's Dynascore (``left_out_metrics``), so that all ranked models are compared on
  the metrics they all have, and its job metric cells say "n/a (predictions file)".
* Each row carries each metric's share of its Dynascore (``score_shares``) and the
  metric other than the main one that makes up more than half of it, if any.
* All weights 0 gives a clear message and an unranked table, not an error page.
* The CI shown for the main metric is the 95% percentile interval of its weighted
  aggregate over 1,000 bootstrap resamples, and the Dynascore has its own, with the share
  of resamples in which each ranked model is ahead of the next one
  (``leaderboards.intervals``; each dataset's own interval is in the breakdown).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
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
)
from leaderboards.intervals import (
    PairConfidence,
    aggregate_resamples,
    interval_bounds,
    pair_confidence_both,
    shifted_bounds,
)
from leaderboards.scoring import BOOTSTRAP_RESAMPLES
from leaderboards.tables.board import ANONYMOUS_NAME, Board, none_if_nan
from leaderboards.tables.records import DatasetRecord, ModelRecord, ScoreColumns, ScoreRecord
from leaderboards.tables.results import (
    DATASET_SORT_PREFIX,
    DEFAULT_PAGE_SIZE,
    DEFAULT_SORT,
    DOMINANT_SHARE,
    DatasetCell,
    DatasetColumn,
    LeaderboardRow,
    LeaderboardTable,
    LeaderboardWeights,
    MetricColumn,
    NextComparison,
)
from leaderboards.tables.summaries import (
    best_per_tag,
    dataset_bars_of_top_models,
    trends_of_top_models,
)
from tasks.metrics.jobs import quantize_to_resolution

DEFAULT_INSTANCE_MEMORY_GB = 16.0
# The main metric's resolution: perf metrics score 0..100, and models whose main metrics
# differ by less than a tenth of a point (one example in a thousand) are one level of the
# AMRS (``leaderboards.dynascore``, step 3), so that a near-duplicate cannot make a rate
# of exchange out of a difference of 0.01 point. Each model's own score keeps its exact value.
MAIN_METRIC_RESOLUTION = 0.1
# Decimals of the interval bounds shown, as ``leaderboards.services.scores`` keeps a Score's
# point values and per-dataset intervals.
FIGURE_DIGITS = 4
ANONYMOUS_OWNER = "anonymous"
MEMORY_METRIC = "memory_utilization"
JOB_KIND = "job"
METRIC_LABELS = {
    "examples_per_second": "Throughput (ex/s)",
    "latency_p95_ms": "Latency p95 (ms)",
    "memory_utilization": "Memory (GB)",
}


def _compute_now(compute: Callable[[], BoardIntervals]) -> BoardIntervals:
    return compute()


@dataclass(frozen=True)
class LeaderboardRequest:
    """What one page of a leaderboard is built from (``build_leaderboard_table``).

    ``models`` and ``scores`` (``ScoreColumns`` or ``ScoreRecord`` objects), or a
    ``board`` of them (by dataset slug, e.g. from ``leaderboards.cubes``), are the models
    a viewer may see; ``datasets`` the visible datasets; ``metric_specs`` the task
    config's metrics. ``messages`` start the page's notes. ``remember(compute)`` returns
    ``compute()`` or the intervals it kept for the same board and weights.
    """

    task_code: str
    metric_specs: Sequence[Any]
    datasets: Sequence[DatasetRecord]
    weights: LeaderboardWeights
    models: Sequence[ModelRecord] = ()
    scores: ScoreColumns | Iterable[ScoreRecord] = ()
    board: Board | None = None
    sort: str = DEFAULT_SORT
    page: int = 1
    page_size: int = DEFAULT_PAGE_SIZE
    instance_memory_gb: float = DEFAULT_INSTANCE_MEMORY_GB
    messages: Sequence[str] = ()
    remember: Callable[[Callable[[], BoardIntervals]], BoardIntervals] = _compute_now


def build_leaderboard_table(request: LeaderboardRequest) -> LeaderboardTable:
    """Return one page of the leaderboard of the requested models (see the module docstring).

    The Dynascore of every model is computed in one pass on numpy arrays (the fast path of
    ``leaderboards.dynascore``, equal to the reference to the last bit); every model is
    ordered, but only the page rows are built into ``LeaderboardRow`` objects, so the
    Python work per model is a few list and array operations. The bootstrap intervals (a
    thousand Dynascores per model) do not depend on the sort or the page, so that
    ``request.remember`` may keep them.
    """
    notes = list(request.messages)
    metric_specs, datasets, weights = request.metric_specs, request.datasets, request.weights
    main_metric = _main_metric_name(metric_specs)
    scoring = [dataset for dataset in datasets if dataset.access_type == "scoring"]
    dataset_weights = _dataset_weights(scoring, weights)
    board = request.board
    if board is None:
        board = _load_board(request.models, datasets, request.scores, metric_specs, main_metric)
    scored = _score_board(
        board,
        metric_specs,
        weights,
        dataset_weights,
        main_metric,
        request.instance_memory_gb,
        notes,
    )
    paged = _paginate(request, board, scored, scoring, dataset_weights, main_metric, notes)
    rows = _page_rows(
        board, scored, paged.rows, metric_specs, datasets, main_metric, paged.intervals
    )
    trend_rounds, trends = trends_of_top_models(scored.result, scoring, board)
    bar_datasets, bars = (), ()
    if len(trend_rounds) < 2:
        bar_datasets, bars = dataset_bars_of_top_models(scored.result, scoring, board)
    return LeaderboardTable(
        task_code=request.task_code,
        main_metric=main_metric,
        weights=LeaderboardWeights(
            metrics={spec.name: _metric_weight(weights, spec) for spec in metric_specs},
            datasets=dataset_weights,
        ),
        sort=request.sort,
        page=paged.page,
        page_size=request.page_size,
        page_count=paged.page_count,
        total_rows=paged.total_rows,
        metrics=_metric_columns(scored, weights),
        datasets=_dataset_columns(datasets, dataset_weights),
        rows=rows,
        hidden_metrics=scored.hidden_metrics,
        error=scored.error,
        error_code=scored.error_code,
        messages=tuple(notes),
        best_per_tag=best_per_tag(board, dataset_weights),
        trend_rounds=trend_rounds,
        trends=trends,
        bar_datasets=bar_datasets,
        dataset_bars=bars,
        predictions_file_models=int(scored.file_rows.sum()),
        left_out_metrics=scored.left_out,
    )


@dataclass(frozen=True)
class ScoredBoard:
    """Every model of a board scored: its metric averages, its Dynascore and what is shown.

    ``averages`` is models x metrics (the board's metric order, NaN: no value);
    ``shown_specs`` the metric specs the table shows (the main one and every metric some
    model has), ``hidden_metrics`` the others; ``offsets`` the lower-is-better offsets;
    ``file_rows`` which models were scored from predictions files; ``left_out`` the job
    metrics left out of every Dynascore because of them; ``metric_inputs`` what the
    Dynascore was fed; ``result`` the Dynascore (None: not computed, ``error`` says why
    when it is an error).
    """

    averages: np.ndarray
    shown_specs: tuple[Any, ...]
    hidden_metrics: tuple[str, ...]
    offsets: dict[str, float]
    file_rows: np.ndarray
    left_out: tuple[str, ...]
    metric_inputs: tuple[MetricInput, ...]
    result: DynascoreArrays | None
    error: str | None
    error_code: str | None


def _main_metric_name(metric_specs: Sequence[Any]) -> str:
    main_spec = next((spec for spec in metric_specs if spec.is_main), None)
    return main_spec.name if main_spec is not None else ""


def _metric_weight(weights: LeaderboardWeights, spec: Any) -> float:
    return float(weights.metrics.get(spec.name, spec.default_weight))


def _dataset_weights(
    scoring: Sequence[DatasetRecord], weights: LeaderboardWeights
) -> dict[str, float]:
    """Return the weight of each scoring dataset: the chosen one, else its default."""
    return {
        dataset.slug: float(weights.datasets.get(dataset.slug, dataset.default_weight))
        for dataset in scoring
    }


def _load_board(
    models: Sequence[ModelRecord],
    datasets: Sequence[DatasetRecord],
    scores: ScoreColumns | Iterable[ScoreRecord],
    metric_specs: Sequence[Any],
    main_metric: str,
) -> Board:
    if not isinstance(scores, ScoreColumns):
        scores = ScoreColumns.from_records(scores)
    metric_names = [spec.name for spec in metric_specs]
    return Board.load(models, datasets, scores, metric_names, main_metric)


def _score_board(
    board: Board,
    metric_specs: Sequence[Any],
    weights: LeaderboardWeights,
    dataset_weights: Mapping[str, float],
    main_metric: str,
    instance_memory_gb: float,
    notes: list[str],
) -> ScoredBoard:
    """Average every model's metrics over the scoring datasets and compute its Dynascore.

    A note is appended to ``notes`` when no model has a score on the scoring datasets.
    """
    averages, error, error_code = _average_metrics(board, dataset_weights)
    available = _available_metrics(board, averages)
    shown_specs = tuple(spec for spec in metric_specs if spec.name in available or spec.is_main)
    offsets = {
        spec.name: _offset(spec, board.average_column(averages, spec.name), instance_memory_gb)
        for spec in shown_specs
        if str(spec.direction) == LOWER
    }
    file_rows = _predictions_file_rows(board, averages, shown_specs, main_metric, available)
    left_out = (
        tuple(spec.name for spec in shown_specs if spec.kind == JOB_KIND and spec.name in available)
        if file_rows.any()
        else ()
    )
    metric_inputs = tuple(
        MetricInput(
            name=spec.name,
            direction=str(spec.direction),
            weight=_metric_weight(weights, spec),
            offset=offsets.get(spec.name, 0.0),
            resolution=_resolution(spec)[0],
            relative_resolution=_resolution(spec)[1],
        )
        for spec in shown_specs
        if spec.name in available and spec.name not in left_out
    )
    result: DynascoreArrays | None = None
    if error is None and main_metric in available:
        try:
            result = compute_dynascore_arrays(
                board.keys,
                averages[:, [board.metric_position[item.name] for item in metric_inputs]],
                metric_inputs,
                main_metric=main_metric,
                epsilon=MAIN_METRIC_RESOLUTION,
            )
        except DynascoreError as problem:
            error, error_code = problem.message, problem.code
    elif error is None and board.keys:
        notes.append("No model has a score on the scoring datasets yet.")
    hidden_metrics = tuple(spec.name for spec in metric_specs if spec not in shown_specs)
    return ScoredBoard(
        averages, shown_specs, hidden_metrics, offsets, file_rows, left_out, metric_inputs,
        result, error, error_code,
    )  # fmt: skip


def _average_metrics(
    board: Board, dataset_weights: Mapping[str, float]
) -> tuple[np.ndarray, str | None, str | None]:
    """Return every model's metrics averaged over the weighted datasets, or NaN and the error."""
    try:
        # Datasets missing from ``dataset_weights`` (standard, hidden) are ignored by
        # the averaging, so every dataset of the board is passed.
        averages, _ = average_over_datasets_array(board.values, board.slugs, dataset_weights)
    except DynascoreError as problem:
        nothing = np.full((len(board.keys), len(board.metric_names)), np.nan)
        return nothing, problem.message, problem.code
    return averages, None, None


def _available_metrics(board: Board, averages: np.ndarray) -> set[str]:
    """Return the metrics that at least one model has an average of."""
    has_value = ~np.isnan(averages).all(axis=0)
    return {name for name, has in zip(board.metric_names, has_value.tolist(), strict=True) if has}


def _metric_columns(scored: ScoredBoard, weights: LeaderboardWeights) -> tuple[MetricColumn, ...]:
    result = scored.result
    return tuple(
        MetricColumn(
            name=spec.name,
            label=METRIC_LABELS.get(spec.name, spec.name.replace("_", " ").capitalize()),
            kind=spec.kind,
            direction=str(spec.direction),
            weight=_metric_weight(weights, spec),
            default_weight=float(spec.default_weight),
            is_main=spec.is_main,
            offset=scored.offsets.get(spec.name, 0.0),
            amrs=result.amrs.get(spec.name) if result is not None else None,
            contributes=result is not None and result.amrs.get(spec.name, 0.0) > 0,
            resolution=_resolution(spec)[0],
            relative_resolution=_resolution(spec)[1],
            self_reported=bool(getattr(spec, "self_reported", False)),
            left_out=spec.name in scored.left_out,
        )
        for spec in scored.shown_specs
    )


def _dataset_columns(
    datasets: Sequence[DatasetRecord], dataset_weights: Mapping[str, float]
) -> tuple[DatasetColumn, ...]:
    return tuple(
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


def _weighted_main_datasets(
    board: Board, scoring: Sequence[DatasetRecord], dataset_weights: Mapping[str, float]
) -> list[tuple[int, float]]:
    """Return (board position, weight) of the weighted scoring datasets with a main metric."""
    return [
        (board.slug_position[dataset.slug], dataset_weights.get(dataset.slug, 0.0))
        for dataset in scoring
        if dataset_weights.get(dataset.slug, 0.0) > 0
        and not np.isnan(board.main[:, board.slug_position[dataset.slug]]).all()
    ]


@dataclass(frozen=True)
class _Page:
    """The page shown: its number, the page count, its models' board positions, intervals."""

    page: int
    page_count: int
    total_rows: int
    rows: list[int]
    intervals: BoardIntervals


def _paginate(
    request: LeaderboardRequest,
    board: Board,
    scored: ScoredBoard,
    scoring: Sequence[DatasetRecord],
    dataset_weights: Mapping[str, float],
    main_metric: str,
    notes: list[str],
) -> _Page:
    """Order every model (arrays) and cut the page, with the intervals it shows.

    Intervals come from the bootstrap resamples (``leaderboards.intervals``): every model's
    when the page is sorted by them (``remember`` may keep those for other pages of this
    weighting), else only the page's models and their ranked neighbours, once the order
    is known.
    """
    weighted = _weighted_main_datasets(board, scoring, dataset_weights)

    def intervals_of(rows: Sequence[int] | None) -> BoardIntervals:
        return _board_intervals(
            board, weighted, scored.averages, scored.metric_inputs, main_metric, scored.result, rows
        )

    sort, page_size = request.sort, request.page_size
    intervals: BoardIntervals | None = None
    ci_lows = np.full(len(board.keys), np.nan)
    if sort.removeprefix("-") == "ci":
        intervals = request.remember(lambda: intervals_of(None))
        ci_lows = intervals.lows
    order = _order_models(board, scored, sort, ci_lows)
    page, page_count = _clamp_page(len(order), request.page, page_size, notes)
    page_rows = order[(page - 1) * page_size : page * page_size]
    if intervals is None:
        intervals = intervals_of(page_rows)
    return _Page(page, page_count, len(order), page_rows, intervals)


def _order_models(board: Board, scored: ScoredBoard, sort: str, ci_lows: np.ndarray) -> list[int]:
    """Return every model's position on the board in the order of ``sort``.

    Ranked (complete) models come first, incomplete ones below; inside each group missing
    values go last whichever the direction, and the model key breaks ties (stable pages).
    """
    result = scored.result
    count = len(board.keys)
    if result is None:
        groups = np.zeros(count, dtype=np.int64)
    else:
        groups = np.ones(count, dtype=np.int64)
        groups[result.order[: result.complete_count]] = 0
    field_name = sort.removeprefix("-")
    descending = sort.startswith("-")
    if field_name == "name":
        return _order_by_name(board, groups, descending)
    if field_name == "dynascore":
        values = result.dynascores if result is not None else np.full(count, np.nan)
    elif field_name == "ci":
        values = ci_lows
    elif field_name.startswith(DATASET_SORT_PREFIX):
        values = board.main_on(field_name.removeprefix(DATASET_SORT_PREFIX))
    else:
        values = board.average_column(scored.averages, field_name)
    # ``keys`` are sorted, so a key's rank is its index.
    missing = np.isnan(values)
    signed = np.where(missing, 0.0, -values if descending else values)
    return np.lexsort((np.arange(count), signed, missing, groups)).tolist()


def _clamp_page(total_rows: int, page: int, page_size: int, notes: list[str]) -> tuple[int, int]:
    """Return (page, page count), the page moved to the last one (with a note) if beyond it."""
    page_count = max(1, math.ceil(total_rows / page_size))
    if page > page_count:
        notes.append(f"There are only {page_count} page(s): showing the last one.")
        page = page_count
    return page, page_count


def _page_rows(
    board: Board,
    scored: ScoredBoard,
    page_rows: Sequence[int],
    metric_specs: Sequence[Any],
    datasets: Sequence[DatasetRecord],
    main_metric: str,
    intervals: BoardIntervals,
) -> tuple[LeaderboardRow, ...]:
    """Build the ``LeaderboardRow`` of each model at ``page_rows`` of the board."""
    result = scored.result
    shown_names = [spec.name for spec in scored.shown_specs]
    metric_names = [spec.name for spec in metric_specs]
    required = {item.name for item in scored.metric_inputs if item.weight > 0} | {main_metric}
    return tuple(
        _row(
            board,
            index,
            result.model_score(index) if result is not None else None,
            scored.averages,
            shown_names,
            datasets,
            main_metric,
            intervals,
            _missing_metrics(board, scored, index, metric_names, required),
            _comparison(board, index, intervals),
            bool(scored.file_rows[index]),
        )
        for index in page_rows
    )


def _missing_metrics(
    board: Board,
    scored: ScoredBoard,
    index: int,
    metric_names: Sequence[str],
    required: set[str],
) -> tuple[str, ...]:
    """Return the required metrics the model at ``index`` lacks (empty: it is complete)."""
    if scored.result is not None:
        return scored.result.missing.get(index, ())
    if scored.error is not None:
        return ()
    values = board.average_row(scored.averages, index)
    return tuple(name for name in metric_names if name in required and values.get(name) is None)


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


@dataclass(frozen=True)
class BoardIntervals:
    """Every model's intervals and, for each ranked model, its confidence over the next.

    ``lows``/``highs`` bound the main metric's weighted aggregate, ``dynascore_lows``/
    ``dynascore_highs`` the Dynascore (NaN: none); ``next_of`` maps a ranked model's
    position to the next ranked one's, ``confidence`` to (on the main metric, on the
    Dynascore).
    """

    lows: np.ndarray
    highs: np.ndarray
    dynascore_lows: np.ndarray
    dynascore_highs: np.ndarray
    next_of: dict[int, int]
    confidence: dict[int, tuple[PairConfidence, PairConfidence]]


def _board_intervals(
    board: Board,
    weighted: Sequence[tuple[int, float]],
    averages: np.ndarray,
    metric_inputs: Sequence[MetricInput],
    main_metric: str,
    result: DynascoreArrays | None,
    rows: Sequence[int] | None = None,
) -> BoardIntervals:
    """Return the intervals of the models at ``rows`` of ``board`` (None: every model).

    The main metric's aggregate per resample over the ``weighted`` (position, weight)
    datasets, as in the average, and its interval; the Dynascore's interval; for each of
    those models that is ranked, the share of resamples in which it is ahead of the next
    ranked model (``leaderboards.intervals``). Other models' entries are NaN / absent.
    """
    count = len(board.keys)
    ranked = result.order[: result.complete_count] if result is not None else np.array([], int)
    next_of = dict(zip(ranked.tolist(), ranked[1:].tolist(), strict=False))
    wanted = np.arange(count) if rows is None else np.asarray(list(rows), dtype=np.int64)
    # The pairs to compare: each wanted ranked model with the next one down.
    pairs = [(upper, next_of[upper]) for upper in wanted.tolist() if upper in next_of]
    needed = np.union1d(wanted, [lower for _, lower in pairs]).astype(np.int64)
    main_resamples = np.full((count, BOOTSTRAP_RESAMPLES), np.nan)
    main_resamples[needed] = aggregate_resamples(
        board.resamples_of(needed, [position for position, _ in weighted]),
        [weight for _, weight in weighted],
    )
    lows = np.full(count, np.nan)
    highs = np.full(count, np.nan)
    lows[needed], highs[needed] = interval_bounds(main_resamples[needed])
    dynascore_lows = dynascore_highs = np.full(count, np.nan)
    confidence: dict[int, tuple[PairConfidence, PairConfidence]] = {}
    if result is not None and result.complete_count:
        main_input = next(item for item in metric_inputs if item.name == main_metric)
        dynascore_lows, dynascore_highs = shifted_bounds(result, main_input, lows, highs)
        confidence = pair_confidence_both(pairs, main_resamples, result, main_input)
    return BoardIntervals(lows, highs, dynascore_lows, dynascore_highs, next_of, confidence)


def _comparison(board: Board, index: int, intervals: BoardIntervals) -> NextComparison | None:
    if index not in intervals.confidence:
        return None
    on_main, on_dynascore = intervals.confidence[index]
    return NextComparison(
        model_name=board.display_name(intervals.next_of[index]),
        main_share=on_main.share,
        main_tie=on_main.is_tie,
        dynascore_share=on_dynascore.share,
        dynascore_tie=on_dynascore.is_tie,
        main_next_ahead=on_main.next_ahead,
        dynascore_next_ahead=on_dynascore.next_ahead,
    )


def _figure(value: float) -> float | None:
    """Return an interval bound as the point values are kept: ``FIGURE_DIGITS`` decimals.

    The bounds come from float32 resamples, so their further digits are noise of the storage.
    """
    number = float(value)
    return None if number != number else round(number, FIGURE_DIGITS)


def _resolution(spec: Any) -> tuple[float, bool]:
    """Return the resolution of a metric spec and whether it is relative (0: exact)."""
    return (
        float(getattr(spec, "resolution", 0.0) or 0.0),
        bool(getattr(spec, "relative_resolution", False)),
    )


def _offset(spec: Any, averages: np.ndarray, memory: float) -> float:
    if spec.name == MEMORY_METRIC:
        return float(memory)
    resolution, relative = _resolution(spec)
    # The largest value at the metric's resolution: the slowest model saves exactly 0.
    # Rounding to the resolution keeps the order, so the largest value is rounded alone.
    if np.isnan(averages).all():
        return 0.0
    return quantize_to_resolution(float(np.nanmax(averages)), resolution, relative=relative)


def _predictions_file_rows(
    board: Board,
    averages: np.ndarray,
    specs: Sequence[Any],
    main_metric: str,
    available: set[str],
) -> np.ndarray:
    """Return which models were scored from predictions files: a main metric, no job metric.

    An evaluated endpoint always has a throughput; a model whose scoring datasets were
    scored (even in part) from uploaded files has no job metric averaged over them.
    """
    job_names = [spec.name for spec in specs if spec.kind == JOB_KIND and spec.name in available]
    if not job_names or main_metric not in available:
        return np.zeros(len(board.keys), dtype=bool)
    jobs = averages[:, [board.metric_position[name] for name in job_names]]
    has_main = ~np.isnan(board.average_column(averages, main_metric))
    return has_main & np.isnan(jobs).all(axis=1)


def score_shares(
    contributions: Mapping[str, float], main_metric: str
) -> tuple[dict[str, float], str | None]:
    """Return each metric's share of a Dynascore and the non-main metric that dominates it.

    A share is the metric's contribution over the sum of the positive contributions (a
    negative one, e.g. a model that uses more memory than the instance has, shows as 0).
    The dominant metric is one other than ``main_metric`` whose share is above half of the
    score; None when there is none (or nothing positive to share).
    """
    positive = {name: max(value, 0.0) for name, value in contributions.items()}
    total = math.fsum(positive.values())
    if not total > 0:
        return {}, None
    shares = {name: value / total for name, value in positive.items()}
    dominant = next(
        (name for name, share in shares.items() if name != main_metric and share > DOMINANT_SHARE),
        None,
    )
    return shares, dominant


def _row(
    board: Board,
    index: int,
    ranked: ModelScore | None,
    averages: np.ndarray,
    shown_metrics: Sequence[str],
    datasets: Sequence[DatasetRecord],
    main_metric: str,
    intervals: BoardIntervals,
    missing: tuple[str, ...],
    next_comparison: NextComparison | None,
    predictions_file: bool = False,
) -> LeaderboardRow:
    model = board.models[index]
    cells = {}
    for dataset in datasets:
        position = board.slug_position[dataset.slug]
        cells[dataset.slug] = (
            DatasetCell(
                none_if_nan(float(board.main[index, position])),
                none_if_nan(float(board.ci_lows[index, position])),
                none_if_nan(float(board.ci_highs[index, position])),
                *board.coverage(index, position),
            )
            if board.present[index, position]
            else DatasetCell(None)
        )
    values = board.average_row(averages, index)
    contributions = dict(ranked.contributions) if ranked is not None else {}
    shares, dominant = score_shares(contributions, main_metric)
    return LeaderboardRow(
        rank=ranked.rank if ranked is not None else None,
        model_id=model.model_id,
        model_name=model.name if model.show_identity else ANONYMOUS_NAME,
        owner_name=model.owner_name if model.show_identity else ANONYMOUS_OWNER,
        is_anonymous=not model.show_identity,
        dynascore=ranked.dynascore if ranked is not None else None,
        metrics={name: values.get(name) for name in shown_metrics},
        ci_low=_figure(intervals.lows[index]),
        ci_high=_figure(intervals.highs[index]),
        dynascore_ci_low=_figure(intervals.dynascore_lows[index]),
        dynascore_ci_high=_figure(intervals.dynascore_highs[index]),
        next_comparison=next_comparison,
        datasets=cells,
        incomplete=bool(missing),
        missing_metrics=missing,
        contributions=contributions,
        predictions_file=predictions_file,
        shares=shares,
        dominant_metric=dominant,
    )
