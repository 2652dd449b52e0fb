"""The task-config schema: the one parser of task configs (pure: no DB, no HTTP).

``parse_task_config`` (``parser``) is the entry point: ``located_yaml`` reads the YAML with
the line of every value, ``document`` checks it section by section through ``fields``,
``field_relations``, ``model_wrong_metric`` and ``leaderboard_metrics`` (all reporting on one
``checker.DocumentChecker``) and builds the ``TaskConfig`` of ``types``. Dynabench's v2 format
is read by ``components`` (its form; a chat context through ``chat.read_v2_chat``),
``model_maps`` and ``page_settings``; ``slips`` warns about upstream slips; ``json_schema``
publishes the JSON Schema of both formats built from these modules' tables. ``values`` checks
data against a parsed config; ``codes`` and ``errors`` hold the stable error codes and types.
"""

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
