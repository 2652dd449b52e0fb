"""Perf metrics of task configs, and the helpers built on them (pure: no DB, no HTTP).

Contract:

* ``get_metric(type_name)`` returns a ``Metric`` from ``METRICS``; ``metric.score(predictions,
  golds, options=...)`` returns 0..100, ``metric.per_example_scores(...)`` one 0..100 score
  per example. Golds may be lists of acceptable answers (references for BLEU/chrF); a
  ``None`` prediction (the model failed) is wrong. Scoring no examples, or a different
  number of predictions and golds, raises ``MetricInputError``.
* ``JOB_METRICS`` (``tasks.metrics.jobs``) lists the job metrics (throughput, latency,
  memory) with their direction, unit, resolution and whether the endpoint reports them
  itself; ``quantize_to_resolution`` rounds a value to a resolution.
* ``string_f1(prediction, gold)`` is the SQuAD token F1 in 0..1 used for live decisions,
  and ``model_fooled`` applies a config's ``model_wrong_metric``.
* ``bootstrap_ci`` / ``metric_bootstrap_ci`` give deterministic (seeded) percentile
  intervals from ``DEFAULT_RESAMPLES`` resamples, ``metric_resamples`` /
  ``resampled_statistics`` the score of every resample (vectorised); ``metric_per_tag``
  groups scores by example tags; ``delta_consistency`` scores perturbed predictions
  against the same model's original predictions.
"""

from tasks.metrics.base import Metric
from tasks.metrics.delta import delta_consistency
from tasks.metrics.errors import MetricError, MetricInputError, MetricUnsupported, UnknownMetric
from tasks.metrics.fooling import model_fooled
from tasks.metrics.jobs import JobMetric, quantize_to_resolution
from tasks.metrics.qa import string_f1, vqa_example_accuracy
from tasks.metrics.registry import JOB_METRICS, METRICS, get_metric
from tasks.metrics.resampling import (
    DEFAULT_RESAMPLES,
    TagScore,
    bootstrap_ci,
    metric_bootstrap_ci,
    metric_per_tag,
    metric_resamples,
    percentile_interval,
    resample_indices,
    resampled_statistics,
)

__all__ = [
    "DEFAULT_RESAMPLES",
    "JOB_METRICS",
    "METRICS",
    "JobMetric",
    "Metric",
    "MetricError",
    "MetricInputError",
    "MetricUnsupported",
    "TagScore",
    "UnknownMetric",
    "bootstrap_ci",
    "delta_consistency",
    "get_metric",
    "metric_bootstrap_ci",
    "metric_per_tag",
    "metric_resamples",
    "model_fooled",
    "percentile_interval",
    "quantize_to_resolution",
    "resample_indices",
    "resampled_statistics",
    "string_f1",
    "vqa_example_accuracy",
]
