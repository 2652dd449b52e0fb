"""The scores of the listed models as numpy arrays: the ``Board`` (pure: no DB, no HTTP).

``Board.load`` scatters plain records (``leaderboards.tables.records``) into arrays of
models x datasets x metrics, with the CIs and each score's main metric per example tag;
``leaderboards.cubes`` stores the same arrays for every model of a task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import methodcaller
from typing import Any, Protocol

import numpy as np

from leaderboards.scoring import BOOTSTRAP_RESAMPLES, resamples_decode
from leaderboards.tables.records import DatasetRecord, ModelRecord, ScoreColumns, finite_array
from tasks.metrics.jobs import JOB_METRICS

ANONYMOUS_NAME = "Anonymous"
# No score (0..100) or measurement of a board comes near this; beyond it a value is missing.
MAX_MAGNITUDE = 1e12


def drop_implausible(values: np.ndarray, names: Sequence[str]) -> None:
    """Set to NaN (missing), in place, the values no metric can have (models x datasets x
    ``names``): a job metric outside its plausible range (``tasks.metrics.jobs``: a figure
    stored before the health probe checked them) and any value beyond ``MAX_MAGNITUDE``.
    Such a value would overflow an AMRS (``1e308`` GB of memory) and make the Dynascore
    and the JSON of the board infinite; non-finite values are already missing.
    """
    with np.errstate(invalid="ignore"):
        values[np.abs(values) > MAX_MAGNITUDE] = np.nan
        for position, name in enumerate(names):
            metric = JOB_METRICS.get(name)
            if metric is not None:
                column = values[..., position]
                column[(column < 0) | (column > metric.plausible_max)] = np.nan


class ResampleSource(Protocol):
    """Return the resamples of board ``rows`` on dataset ``positions`` (rows x positions x
    ``BOOTSTRAP_RESAMPLES``, NaN where a score has none)."""

    def __call__(self, rows: np.ndarray, positions: Sequence[int]) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class ResampleArray:
    """A ``ResampleSource`` over an array in memory (models x datasets x resamples)."""

    array: np.ndarray

    def __call__(self, rows: np.ndarray, positions: Sequence[int]) -> np.ndarray:
        return self.array[np.asarray(rows, dtype=np.int64)][:, list(positions), :]


@dataclass(frozen=True, eq=False)
class Board:
    """The scores of the listed models as arrays: models (sorted keys) x datasets x metrics.

    ``keys`` are the models' zero-padded ids, sorted; ``slugs`` the datasets (the listed
    ones, then any other slug the scores name). NaN stands for a missing value; ``present``
    says which (model, dataset) pairs have a Score (the last Score wins if a pair has
    two). ``tag_values`` holds each score's main metric on each of ``tag_names``
    (models x datasets x tags; NaN: the score has no value for that tag). ``resamples``
    gives each score's main metric on the dataset's bootstrap resamples for the rows and
    dataset positions asked (rows x positions x ``BOOTSTRAP_RESAMPLES``; NaN where a score
    has none): they are large (4 kB a score), so a page reads only the rows it shows.
    ``covered`` and ``totals`` hold each score's coverage (models x datasets; ``covered``
    is -1 where it is not known or there is no score): a score is partial when
    ``covered < totals``.
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
    resamples_of: ResampleSource
    covered: np.ndarray | None = None
    totals: np.ndarray | None = None

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
        slugs, slug_position = _board_slugs(datasets, scores)
        names = list(dict.fromkeys(metric_names))
        metric_position = {name: index for index, name in enumerate(names)}
        kept, model_index, dataset_index = _last_score_of_pairs(
            scores, model_position, slug_position, len(slugs)
        )
        shape = (len(keys), len(slugs))
        values = np.full((*shape, len(names)), np.nan)
        if kept.size:
            values[model_index, dataset_index, :] = scores.metric_matrix(names, main_metric)[kept]
        drop_implausible(values, names)
        if main_metric in metric_position:
            main = values[:, :, metric_position[main_metric]]
        else:
            main = np.full(shape, np.nan)
            main[model_index, dataset_index] = scores.metric(main_metric, main_metric)[kept]
        present = np.zeros(shape, dtype=bool)
        present[model_index, dataset_index] = True
        ci_lows = np.full(shape, np.nan)
        ci_lows[model_index, dataset_index] = finite_array(scores.ci_lows)[kept]
        ci_highs = np.full(shape, np.nan)
        ci_highs[model_index, dataset_index] = finite_array(scores.ci_highs)[kept]
        resamples = _resample_array(shape, scores, kept, model_index, dataset_index)
        covered, totals = _coverage_arrays(shape, scores, kept, model_index, dataset_index)
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
            resamples_of=ResampleArray(resamples),
            covered=covered,
            totals=totals,
        )

    def coverage(self, index: int, position: int) -> tuple[int | None, int | None]:
        """Return ``(covered, total)`` of the score at (model, dataset); Nones when unknown."""
        if self.covered is None or self.totals is None:
            return None, None
        covered = int(self.covered[index, position])
        if covered < 0:
            return None, None
        return covered, int(self.totals[index, position])

    def average_column(self, averages: np.ndarray, name: str) -> np.ndarray:
        """Return every model's average of metric ``name`` (NaN when it has none)."""
        if name not in self.metric_position:
            return np.full(len(self.keys), np.nan)
        return averages[:, self.metric_position[name]]

    def average_row(self, averages: np.ndarray, index: int) -> dict[str, float | None]:
        """Return the averages of the model at ``index`` by metric name (None when missing)."""
        return {
            name: none_if_nan(value)
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


def none_if_nan(value: float) -> float | None:
    return None if value != value else value


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
    values = finite_array(list(chain.from_iterable(map(methodcaller("values"), maps))))
    counts = np.fromiter(map(len, maps), dtype=np.int64, count=len(maps))
    position = {name: index for index, name in enumerate(names)}
    array[
        np.repeat(model_index, counts),
        np.repeat(dataset_index, counts),
        np.array(list(map(position.__getitem__, tags)), dtype=np.int64),
    ] = values
    return names, array


def _board_slugs(
    datasets: Sequence[DatasetRecord], scores: ScoreColumns
) -> tuple[list[str], dict[str, int]]:
    """Return the board's dataset slugs and their positions: the listed datasets first,
    then those only the scores name, each once in the order it first came."""
    slugs = list(dict.fromkeys([dataset.slug for dataset in datasets]))
    slug_position = {slug: index for index, slug in enumerate(slugs)}
    for slug in dict.fromkeys(scores.dataset_slugs):
        if slug not in slug_position:
            slug_position[slug] = len(slugs)
            slugs.append(slug)
    return slugs, slug_position


def _last_score_of_pairs(
    scores: ScoreColumns,
    model_position: Mapping[int, int],
    slug_position: Mapping[str, int],
    slug_count: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the positions in ``scores`` of the scores kept, with their model and dataset
    positions on the board: the listed models' scores, the last Score of a (model, dataset)
    pair winning, listed where the pair first came."""
    model_index = np.array(
        [model_position.get(model_id, -1) for model_id in scores.model_ids], dtype=np.int64
    )
    dataset_index = np.array(
        list(map(slug_position.__getitem__, scores.dataset_slugs)), dtype=np.int64
    )
    kept = np.flatnonzero(model_index >= 0)
    pairs = model_index[kept] * max(slug_count, 1) + dataset_index[kept]
    _, last_reversed = np.unique(pairs[::-1], return_index=True)
    if last_reversed.size != kept.size:
        _, first = np.unique(pairs, return_index=True)
        winners = len(pairs) - 1 - last_reversed
        kept = kept[winners[np.argsort(first, kind="stable")]]
    return kept, model_index[kept], dataset_index[kept]


def _resample_array(
    shape: tuple[int, int],
    scores: ScoreColumns,
    kept: np.ndarray,
    model_index: np.ndarray,
    dataset_index: np.ndarray,
) -> np.ndarray:
    """Return the kept scores' main-metric bootstrap resamples (models x datasets x resamples,
    float32, NaN where a score has none)."""
    resamples = np.full((*shape, BOOTSTRAP_RESAMPLES), np.nan, dtype=np.float32)
    if scores.main_resamples:
        stored = scores.main_resamples
        for model, dataset, position in zip(
            model_index.tolist(), dataset_index.tolist(), kept.tolist(), strict=True
        ):
            values_of = resamples_decode(stored[position])
            if values_of is not None:
                resamples[model, dataset] = values_of
    return resamples


def _coverage_arrays(
    shape: tuple[int, int],
    scores: ScoreColumns,
    kept: np.ndarray,
    model_index: np.ndarray,
    dataset_index: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Return the examples each kept score covered (-1: unknown) and its dataset's total."""
    covered = np.full(shape, -1, dtype=np.int64)
    totals = np.zeros(shape, dtype=np.int64)
    if len(scores.covered) and kept.size:
        counts = np.array([-1 if value is None else value for value in scores.covered])
        covered[model_index, dataset_index] = counts.astype(np.int64)[kept]
        totals[model_index, dataset_index] = np.asarray(scores.totals, dtype=np.int64)[kept]
    return covered, totals
