"""The metric registry: perf metrics (``METRICS`` by type name, ``get_metric``) and job
metrics (``JOB_METRICS`` by name, with their resolution: ``tasks.metrics.jobs``)."""

from __future__ import annotations

from types import MappingProxyType

from tasks.metrics.base import Metric
from tasks.metrics.classification import ACCURACY, MACRO_F1, MICRO_F1
from tasks.metrics.errors import UnknownMetric
from tasks.metrics.jobs import JOB_METRICS, JobMetric
from tasks.metrics.qa import EXACT_MATCH, SQUAD_F1, VQA_ACCURACY
from tasks.metrics.translation import BLEU_METRIC, CHRF_METRIC, SP_BLEU_METRIC

METRICS: MappingProxyType[str, Metric] = MappingProxyType(
    {
        metric.name: metric
        for metric in (
            ACCURACY,
            MACRO_F1,
            MICRO_F1,
            SQUAD_F1,
            EXACT_MATCH,
            BLEU_METRIC,
            CHRF_METRIC,
            SP_BLEU_METRIC,
            VQA_ACCURACY,
        )
    }
)


__all__ = ["JOB_METRICS", "METRICS", "JobMetric", "get_metric"]


def get_metric(type_name: str) -> Metric:
    """Return the metric registered as ``type_name`` or raise ``UnknownMetric``."""
    try:
        return METRICS[type_name]
    except KeyError:
        known = ", ".join(sorted(METRICS))
        raise UnknownMetric(f"unknown perf metric {type_name!r}; known metrics: {known}") from None
