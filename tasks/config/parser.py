"""Parse a task-config YAML document into a validated, immutable ``TaskConfig``.

Contract: ``parse_task_config(text)`` returns a ``TaskConfig`` or raises ``TaskConfigError``
carrying **every** problem found, each with a stable code (``tasks.config.codes``), a path
such as ``input[1].labels``, and the 1-based line (and column) in the YAML source, sorted by
line then column (problems without a line first). For any ``str`` it raises nothing else.
Pure: no Django, no DB, no HTTP.

The work is shared out by concern: ``tasks.config.located_yaml`` reads the YAML with the line
of every value, and ``tasks.config.document`` checks the document section by section (through
``fields``, ``field_relations``, ``model_wrong_metric`` and ``leaderboard_metrics``) and builds
the ``TaskConfig``. This module only joins the two and collects their problems.
"""

from __future__ import annotations

from tasks.config import codes
from tasks.config.document import validate_document
from tasks.config.errors import ConfigIssue, TaskConfigError
from tasks.config.located_yaml import read_located_yaml
from tasks.config.types import TaskConfig


def parse_task_config(text: str) -> TaskConfig:
    """Parse and validate a task-config YAML document.

    Return the immutable ``TaskConfig``; raise ``TaskConfigError`` listing every problem.
    Nothing else is ever raised, whatever the text.
    """
    if not isinstance(text, str):
        raise TaskConfigError(
            [ConfigIssue(codes.WRONG_TYPE, "", f"expected YAML text, got {type(text).__name__}")]
        )
    issues: list[ConfigIssue] = []
    root = read_located_yaml(text, issues)
    if root is None:
        raise TaskConfigError(_in_source_order(issues))
    config = validate_document(root, issues)
    if issues or config is None:
        raise TaskConfigError(_in_source_order(issues))
    return config


def _in_source_order(issues: list[ConfigIssue]) -> list[ConfigIssue]:
    """Sort issues by line then column (stable), issues without a line first."""
    return sorted(issues, key=lambda issue: (issue.line or 0, issue.column or 0))
