"""Delta metrics (fairness, robustness) as prediction consistency.

A model is scored on a perturbed copy of a dataset against **its own** predictions on the
original examples, with the task's perf metric: the original prediction plays the gold.
Each perturbed prediction names its original through ``input_id`` (the original ``uid``);
an original may have several perturbed copies, each counts once. When the model gave no
prediction on the original, the pair counts as inconsistent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tasks.metrics.base import Metric, Options
from tasks.metrics.errors import ORPHAN_PERTURBED_EXAMPLE, MetricInputError
from tasks.metrics.registry import get_metric

if TYPE_CHECKING:
    from tasks.config.types import PerfMetric


def _metric_and_options(perf_metric: PerfMetric | Metric | str) -> tuple[Metric, Options]:
    if isinstance(perf_metric, Metric):
        return perf_metric, {}
    if isinstance(perf_metric, str):
        return get_metric(perf_metric), {}
    return get_metric(perf_metric.type), perf_metric.options


def delta_consistency(
    perf_metric: PerfMetric | Metric | str,
    original_predictions: Mapping[str, Any],
    perturbed_predictions: Mapping[str, Any] | Iterable[tuple[str, Any]],
) -> float:
    """Return the perf metric (0..100) of perturbed predictions against the originals.

    ``original_predictions`` maps each original ``uid`` to the model's prediction (the value
    of the metric's ``reference_name`` output). ``perturbed_predictions`` holds
    ``(input_id, prediction)`` pairs, or a mapping ``input_id -> prediction`` when each
    original has one perturbed copy. A pair whose ``input_id`` has no original prediction
    is an error: the perturbed file does not belong to this dataset.
    """
    metric, options = _metric_and_options(perf_metric)
    pairs = (
        list(perturbed_predictions.items())
        if isinstance(perturbed_predictions, Mapping)
        else list(perturbed_predictions)
    )
    orphans = [input_id for input_id, _ in pairs if input_id not in original_predictions]
    if orphans:
        shown = ", ".join(repr(uid) for uid in orphans[:5])
        raise MetricInputError(
            f"{len(orphans)} perturbed predictions name no original example (input_id {shown})",
            code=ORPHAN_PERTURBED_EXAMPLE,
        )
    golds = [original_predictions[input_id] for input_id, _ in pairs]
    # Without an original prediction there is nothing to be consistent with.
    predictions = [
        None if gold is None else prediction
        for gold, (_, prediction) in zip(golds, pairs, strict=True)
    ]
    return metric.score(predictions, golds, options=options)
