"""What the leaderboard shows around its rows: the best model per tag and the trends (pure)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from leaderboards.dynascore import DynascoreArrays
from leaderboards.tables.board import Board, none_if_nan
from leaderboards.tables.records import DatasetRecord
from leaderboards.tables.results import TagLeader, TrendSeries

TREND_MODEL_COUNT = 5


def weighted_mean(pairs: Sequence[tuple[float, float | None]]) -> float | None:
    """Return the weighted mean of ``(weight, value)``; None if a value is missing."""
    total = 0.0
    weighted = []
    for weight, value in pairs:
        if value is None:
            return None
        weighted.append(weight * value)
        total += weight
    return math.fsum(weighted) / total if total > 0 else None


def best_per_tag(board: Board, dataset_weights: Mapping[str, float]) -> tuple[TagLeader, ...]:
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


def _top_models(result: DynascoreArrays) -> list[int]:
    return result.order[: min(TREND_MODEL_COUNT, result.complete_count)].tolist()


def trends_of_top_models(
    result: DynascoreArrays | None, scoring: Sequence[DatasetRecord], board: Board
) -> tuple[tuple[int, ...], tuple[TrendSeries, ...]]:
    """Return the rounds and, for the top models, the main metric on each round's datasets."""
    rounds = sorted({d.round_number for d in scoring if d.round_number is not None})
    if result is None or not rounds:
        return tuple(rounds), ()
    series = []
    for index in _top_models(result):
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
                pairs.append((1.0, none_if_nan(float(board.main[index, position]))))
            values.append(weighted_mean([pair for pair in pairs if pair[1] is not None]))
        series.append(TrendSeries(board.display_name(index), tuple(values)))
    return tuple(rounds), tuple(series)


def dataset_bars_of_top_models(
    result: DynascoreArrays | None, scoring: Sequence[DatasetRecord], board: Board
) -> tuple[tuple[str, ...], tuple[TrendSeries, ...]]:
    """Return the scoring datasets' names and, for the top models, the main metric on each
    (None where a model has no score): what the trends chart shows while there are fewer
    than two rounds to compare."""
    if result is None or not scoring:
        return (), ()
    series = []
    for index in _top_models(result):
        values = []
        for dataset in scoring:
            position = board.slug_position[dataset.slug]
            present = board.present[index, position]
            values.append(none_if_nan(float(board.main[index, position])) if present else None)
        series.append(TrendSeries(board.display_name(index), tuple(values)))
    if all(value is None for item in series for value in item.values):
        return (), ()
    return tuple(dataset.name for dataset in scoring), tuple(series)
