"""Uploaded files (datasets and predictions): CSV cells and the problems of a line.

The dataset uploads too big for their request are ``leaderboards.services.dataset_uploads``.
"""

from __future__ import annotations

import json
from typing import Any

from core.bounded_json import json_loads_bounded
from core.errors import InvalidUpload, ServiceError
from core.uploads import UploadLineError, UploadProblems, parse_json_cell
from tasks.config.types import FieldType, TaskConfig
from tasks.models import Task


def config_or_raise(task: Task) -> TaskConfig:
    """Return the task's parsed config, or raise ``task.no_config``."""
    config = task.config
    if config is None:
        raise ServiceError("the task has no config yet", code="task.no_config")
    return config


def _csv_cell(spec_type: FieldType | None, value: Any) -> Any:
    """Decode one CSV cell: blank is missing; non-string fields and gold lists hold JSON."""
    if not isinstance(value, str):
        return value
    if value == "":
        return None
    if spec_type in (FieldType.STRING, FieldType.IMAGE, FieldType.MULTICLASS):
        # A list of acceptable answers is written as a JSON list.
        return parse_json_cell(value) if value[:1] == "[" else value
    if spec_type is None:
        return value
    try:
        return json_loads_bounded(value)
    except json.JSONDecodeError:  # JSONTooDeep too: the cell stays text
        return value


def _csv_tags(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if not value.strip():
        return []
    decoded = parse_json_cell(value)
    if isinstance(decoded, list):
        return decoded
    return [tag.strip() for tag in value.split(",") if tag.strip()]


def normalise_csv_row(config: TaskConfig, record: dict) -> dict:
    """Return a CSV record with its cells decoded as the config's fields say (blank: absent)."""
    row: dict[str, Any] = {}
    for key, value in record.items():
        if key == "tags":
            row[key] = _csv_tags(value)
        elif key in ("uid", "input_id"):
            row[key] = value
        else:
            spec = config.field(key)
            decoded = _csv_cell(spec.type if spec else None, value)
            if decoded is not None:
                row[key] = decoded
    return row


def upload_error(errors: UploadProblems, what: str) -> InvalidUpload:
    """Return the error that reports the problems of an upload (nothing was imported)."""
    return InvalidUpload(errors.summary(what), details=errors.details())


def row_problems(line: int, row: dict, known: set[str], what: str, issues) -> list:
    """Return the line's problems: keys the config does not know, then the value checks."""
    problems = [
        UploadLineError(line, "upload.E010", f"{str(key)[:60]!r} is not {what}", key)
        for key in row
        if key not in known
    ]
    problems += [UploadLineError(line, i.code, i.message, i.path) for i in issues]
    return problems
