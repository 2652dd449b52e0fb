"""Uploaded files (datasets and predictions): CSV cells, the problems of a line, and the
dataset uploads too big for their request.

``dataset_upload`` imports a dataset file in its request, or, over
``UPLOAD_INLINE_MAX_BYTES``, stores it and queues ``leaderboards.jobs.dataset_import_job``
(``tasks.services.upload_job_create``: the progress page, the same all-or-nothing import).
"""

from __future__ import annotations

import json
from typing import IO, Any

from django.urls import reverse

from tasks.bounded_json import json_loads_bounded
from tasks.config.types import FieldType, TaskConfig
from tasks.errors import InvalidUpload, PermissionDenied, ServiceError
from tasks.models import Task, UploadJob, UploadKind
from tasks.permissions import can_manage_task
from tasks.services import upload_check_size, upload_job_create, upload_runs_as_job
from tasks.uploads import UploadLineError, UploadProblems, parse_json_cell


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


def dataset_upload(task: Task, upload, *, user=None, **arguments: Any):
    """Import an uploaded dataset file now, or queue its import when it is big.

    ``arguments`` are ``dataset_import``'s. Returns the ``Dataset``, or the ``UploadJob``
    of the queued import (its page follows it). Refuses a file over ``UPLOAD_MAX_BYTES``.
    """
    from leaderboards.services.datasets import dataset_import

    upload_check_size(upload.size)
    if not upload_runs_as_job(upload.size):
        return dataset_import(task, upload.file, filename=upload.name, user=user, **arguments)
    if user is not None and not can_manage_task(user, task):
        raise PermissionDenied("only the task's owners can change its datasets")
    original = arguments.get("perturbation_of")
    if original is not None and not isinstance(original, str):
        arguments["perturbation_of"] = original.slug
    from leaderboards import jobs  # the jobs call services: imported at use

    return upload_job_create(
        task,
        upload,
        kind=UploadKind.DATASET,
        user=user,
        options=arguments,
        job_function=jobs.dataset_import_job,
    )


def dataset_upload_import(upload: UploadJob, stream: IO[bytes]) -> tuple[int, str]:
    """The datasets' importer of an upload job: ``dataset_import`` with its options."""
    from leaderboards.services.datasets import dataset_import

    dataset = dataset_import(
        upload.task, stream, filename=upload.filename, user=upload.user, **upload.options
    )
    url = reverse("leaderboards:dataset_detail", args=[upload.task.code, dataset.slug])
    return dataset.row_count, url
