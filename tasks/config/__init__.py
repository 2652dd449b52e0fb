"""The task-config schema: the one parser of task configs (pure: no DB, no HTTP)."""

from tasks.config.errors import ConfigIssue, TaskConfigError
from tasks.config.parser import parse_task_config
from tasks.config.types import (
    AggregationMetric,
    Direction,
    FieldSpec,
    FieldType,
    MetricSpec,
    ModelWrongMetric,
    PerfMetric,
    TaskConfig,
    Verdict,
)

__all__ = [
    "AggregationMetric",
    "ConfigIssue",
    "Direction",
    "FieldSpec",
    "FieldType",
    "MetricSpec",
    "ModelWrongMetric",
    "PerfMetric",
    "TaskConfig",
    "TaskConfigError",
    "Verdict",
    "parse_task_config",
]
