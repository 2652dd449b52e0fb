"""The leaderboard's query string: weights, sort, page and page size (pure: no DB).

``parse_leaderboard_query`` turns a query string into a ``LeaderboardQuery``; a bad value
keeps its default and adds a message, it never raises. ``default_weights`` and
``merge_weights`` give the weights a fork or a snapshot starts from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from leaderboards.tables.records import finite_or_none
from leaderboards.tables.results import (
    DATASET_PARAMETER_PREFIX,
    DATASET_SORT_PREFIX,
    DEFAULT_PAGE_SIZE,
    DEFAULT_SORT,
    METRIC_PARAMETER_PREFIX,
    LeaderboardQuery,
    LeaderboardWeights,
)

MAX_PAGE_SIZE = 1000
MAX_WEIGHT = 100.0


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
    number = finite_or_none(weight)
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
    _read_weights(querydict, metric_weights, METRIC_PARAMETER_PREFIX, "metric", messages)
    _read_weights(querydict, dataset_weights, DATASET_PARAMETER_PREFIX, "dataset", messages)
    allowed = sort_keys(
        (spec.name for spec in metric_specs), [dataset.slug for dataset in datasets]
    )
    sort = _read_sort(querydict, allowed, messages)
    page, page_size = _read_page(querydict, messages)
    return LeaderboardQuery(
        weights=LeaderboardWeights(metrics=metric_weights, datasets=dataset_weights),
        sort=str(sort),
        page=page,
        page_size=page_size,
        messages=tuple(messages),
    )


def _read_weights(
    querydict: Mapping[str, Any],
    weights: dict[str, float],
    prefix: str,
    what: str,
    messages: list[str],
) -> None:
    """Replace each of ``weights`` given as ``<prefix><key>``; a bad one stays, with a message."""
    for key in list(weights):
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
            weights[key] = number


def _read_sort(querydict: Mapping[str, Any], allowed: set[str], messages: list[str]) -> Any:
    """Return the ``sort`` asked for, or the default (with a message when it is unknown)."""
    sort = _get(querydict, "sort")
    if sort is None or sort == "":
        return DEFAULT_SORT
    if str(sort).removeprefix("-") not in allowed:
        messages.append(f"Unknown sort {str(sort)[:40]!r}: sorted by Dynascore instead.")
        return DEFAULT_SORT
    return sort


def _read_page(querydict: Mapping[str, Any], messages: list[str]) -> tuple[int, int]:
    """Return (page, page size) asked for; a bad one is the default, with a message."""
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
    return page, page_size


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
