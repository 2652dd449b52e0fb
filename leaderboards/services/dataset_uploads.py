"""Dataset uploads: imported in their request, or by a job when they are big.

``dataset_upload`` imports a dataset file in its request, or, over
``UPLOAD_INLINE_MAX_BYTES``, stores it and queues ``leaderboards.jobs.dataset_import_job`` by
its dotted path (``tasks.upload_jobs.upload_job_create``: the progress page, the same
all-or-nothing import); the job runs ``dataset_upload_import``.
"""

from __future__ import annotations

from typing import IO, Any

from django.urls import reverse

from core.errors import PermissionDenied
from leaderboards.services.datasets import dataset_import
from tasks.models import Task, UploadJob, UploadKind
from tasks.permissions import can_manage_task
from tasks.upload_jobs import upload_check_size, upload_job_create, upload_runs_as_job

# Enqueued by its dotted path: the job module imports this one, never the reverse.
DATASET_IMPORT_JOB = "leaderboards.jobs.dataset_import_job"


def dataset_upload(task: Task, upload, *, user=None, **arguments: Any):
    """Import an uploaded dataset file now, or queue its import when it is big.

    ``arguments`` are ``dataset_import``'s. Returns the ``Dataset``, or the ``UploadJob``
    of the queued import (its page follows it). Refuses a file over ``UPLOAD_MAX_BYTES``.
    """
    upload_check_size(upload.size)
    if not upload_runs_as_job(upload.size):
        return dataset_import(task, upload.file, filename=upload.name, user=user, **arguments)
    if user is not None and not can_manage_task(user, task):
        raise PermissionDenied("only the task's owners can change its datasets")
    original = arguments.get("perturbation_of")
    if original is not None and not isinstance(original, str):
        arguments["perturbation_of"] = original.slug
    return upload_job_create(
        task,
        upload,
        kind=UploadKind.DATASET,
        user=user,
        options=arguments,
        job_path=DATASET_IMPORT_JOB,
    )


def dataset_upload_import(upload: UploadJob, stream: IO[bytes]) -> tuple[int, str]:
    """The datasets' importer of an upload job: ``dataset_import`` with its options."""
    dataset = dataset_import(
        upload.task, stream, filename=upload.filename, user=upload.user, **upload.options
    )
    url = reverse("leaderboards:dataset_detail", args=[upload.task.code, dataset.slug])
    return dataset.row_count, url
