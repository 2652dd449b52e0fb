"""The platform's big uploads: a file imported by an RQ job rather than in its request.

A file over ``UPLOAD_INLINE_MAX_BYTES`` is not imported in its request: it is stored (the
default storage) with an ``UploadJob`` row, and an RQ job imports it (``upload_job_run``, with
the same all-or-nothing importer as a small file), reporting the bytes read to Redis for the
progress page. Every upload is refused over ``UPLOAD_MAX_BYTES`` (``upload.too_large``, 413)
and over ``UPLOAD_MAX_ROWS`` rows (``upload.E030``, the line named).

Each app gives its own importer and job: the contexts' are ``tasks.services`` and
``tasks.jobs``, the datasets' ``leaderboards.services.dataset_uploads`` and ``leaderboards.jobs``. A
service queues its job by its dotted path (``upload_job_create(..., job_path=...)``), so the
job modules import the services and never the reverse.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import PurePath
from typing import IO, Any

import django_rq
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone
from redis.exceptions import RedisError

from core.errors import ServiceError, UploadTooLarge
from core.upload_streams import ProgressReader
from tasks.models import Task, UploadJob, UploadStatus

logger = logging.getLogger(__name__)

UPLOAD_QUEUE = "default"
# A million rows took minutes in a request: a job has hours.
UPLOAD_JOB_TIMEOUT = 4 * 3600
UPLOAD_RESULT_TTL = 86_400
UPLOAD_FAILURE_TTL = 7 * 86_400
UPLOAD_PROGRESS_KEY = "dynatask:upload:{}"
UPLOAD_PROGRESS_TTL = 86_400


def upload_max_rows() -> int:
    """Return the most rows an upload may have (``UPLOAD_MAX_ROWS``; 0: no cap)."""
    return int(getattr(settings, "UPLOAD_MAX_ROWS", 0) or 0)


def upload_check_size(size: int) -> None:
    """Refuse a file over ``UPLOAD_MAX_BYTES`` (``upload.too_large``, 413)."""
    limit = int(getattr(settings, "UPLOAD_MAX_BYTES", 0) or 0)
    if limit and size > limit:
        raise UploadTooLarge(
            f"the file has {size:,} bytes; an upload may have {limit:,} at most (UPLOAD_MAX_BYTES)",
            details={"size": size, "max_bytes": limit},
        )


def upload_runs_as_job(size: int) -> bool:
    """Return True when a file of ``size`` bytes is imported by a job, not in its request
    (over ``UPLOAD_INLINE_MAX_BYTES``)."""
    return size > int(getattr(settings, "UPLOAD_INLINE_MAX_BYTES", 0) or 0)


def upload_job_create(
    task: Task,
    upload,
    *,
    kind: str,
    user=None,
    options: dict[str, Any],
    job_path: str,
) -> UploadJob:
    """Store ``upload`` (an uploaded file) and queue the job ``job_path`` (the dotted path of a
    function taking the upload job's id) after the commit; return the ``UploadJob``.
    ``options`` (JSON) go to the importer."""
    upload_check_size(upload.size)
    name = PurePath(upload.name or "upload").name[-100:]
    stored = default_storage.save(f"uploads/{uuid.uuid4().hex}/{name}", upload)
    job = UploadJob.objects.create(
        task=task,
        kind=kind,
        user=user if user is not None and user.is_authenticated else None,
        filename=name,
        stored_name=stored,
        size=upload.size,
        options=options,
    )
    job_id = job.pk
    transaction.on_commit(lambda: enqueue_upload(job_path, job_id))
    return job


def upload_progress_record(upload_id: int, bytes_read: int, connection=None) -> None:
    """Note in Redis that upload ``upload_id`` has read ``bytes_read`` bytes (best effort)."""
    key = UPLOAD_PROGRESS_KEY.format(upload_id)
    with contextlib.suppress(RedisError):
        connection = connection or django_rq.get_connection("default")
        connection.hset(key, mapping={"bytes": bytes_read, "at": time.time()})
        connection.expire(key, UPLOAD_PROGRESS_TTL)


def upload_job_run(
    upload_id: int, importer: Callable[[UploadJob, IO[bytes]], tuple[int, str]]
) -> dict[str, Any]:
    """Import stored upload ``upload_id`` with ``importer(upload, stream) -> (rows, url)``.

    Idempotent: an upload that is done or failed is skipped. A ``ServiceError`` of the
    importer (a bad line, a bad option) fails the upload with its code, message and line
    errors; anything else fails it as ``upload.job_failed`` and is raised again (RQ keeps
    it). The stored file is deleted once the import is over.
    """
    upload = (
        UploadJob.objects.select_related("task__current_config", "user")
        .filter(pk=upload_id)
        .first()
    )
    if upload is None or upload.status in (UploadStatus.DONE, UploadStatus.FAILED):
        return {"status": "skipped"}
    UploadJob.objects.filter(pk=upload.pk).update(
        status=UploadStatus.RUNNING, started_at=timezone.now()
    )
    connection = django_rq.get_connection("default")
    outcome: dict[str, Any]
    try:
        with default_storage.open(upload.stored_name, "rb") as handle:
            stream = ProgressReader(
                handle, lambda done: upload_progress_record(upload.pk, done, connection)
            )
            rows, url = importer(upload, stream)
    except ServiceError as error:
        errors = error.details.get("errors", []) if isinstance(error.details, dict) else []
        _upload_finish(upload, UploadStatus.FAILED, code=error.code, message=error.message)
        UploadJob.objects.filter(pk=upload.pk).update(errors=errors)
        outcome = {"status": "failed", "error_code": error.code}
    except Exception:
        _upload_finish(
            upload,
            UploadStatus.FAILED,
            code="upload.job_failed",
            message="the import stopped on an unexpected error; nothing was imported",
        )
        raise
    else:
        _upload_finish(upload, UploadStatus.DONE, rows=rows, url=url)
        outcome = {"status": "done", "rows": rows}
    logger.info("upload %s (%s) of task %s: %s", upload.pk, upload.kind, upload.task_id, outcome)
    return outcome


def _upload_finish(upload: UploadJob, status: str, *, code="", message="", rows=0, url=""):
    """Record the end of ``upload`` and delete its stored file."""
    UploadJob.objects.filter(pk=upload.pk).update(
        status=status,
        error_code=code[:64],
        error_message=message[:2000],
        rows=rows,
        result_url=url,
        finished_at=timezone.now(),
        stored_name="",
    )
    with contextlib.suppress(OSError):
        default_storage.delete(upload.stored_name)


def enqueue_upload(job_path: str, upload_id: int) -> str | None:
    """Queue the job ``job_path`` (a dotted path) with ``upload_id``; return the job id (None
    when Redis is down: the upload then stays queued, and the page says so)."""
    try:
        job = django_rq.get_queue(UPLOAD_QUEUE).enqueue_call(
            job_path,
            args=(upload_id,),
            timeout=UPLOAD_JOB_TIMEOUT,
            result_ttl=UPLOAD_RESULT_TTL,
            failure_ttl=UPLOAD_FAILURE_TTL,
        )
    except RedisError as error:
        logger.warning("cannot enqueue the import of upload %s: %s", upload_id, error)
        return None
    return job.id
