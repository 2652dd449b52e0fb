"""RQ jobs of the tasks app (``default`` queue) and the helper that enqueues upload imports.

- ``contexts_import_job(upload_id)``: import a big contexts upload
  (``tasks.services.upload_job_run`` with the contexts' importer); idempotent.

``enqueue_upload`` queues any app's upload job (a function taking the ``UploadJob`` id):
the datasets' job is ``leaderboards.jobs.dataset_import_job``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import django_rq
from redis.exceptions import RedisError

from tasks import services

logger = logging.getLogger(__name__)

UPLOAD_QUEUE = "default"
# A million rows took minutes in a request: a job has hours.
UPLOAD_JOB_TIMEOUT = 4 * 3600
UPLOAD_RESULT_TTL = 86_400
UPLOAD_FAILURE_TTL = 7 * 86_400


def contexts_import_job(upload_id: int) -> dict[str, Any]:
    """Import the contexts of upload job ``upload_id``."""
    return services.upload_job_run(upload_id, services.contexts_upload_import)


def enqueue_upload(job_function: Callable[[int], Any], upload_id: int) -> str | None:
    """Queue ``job_function(upload_id)``; return the job id (None when Redis is down: the
    upload then stays queued, and the page says so)."""
    try:
        job = django_rq.get_queue(UPLOAD_QUEUE).enqueue_call(
            job_function,
            args=(upload_id,),
            timeout=UPLOAD_JOB_TIMEOUT,
            result_ttl=UPLOAD_RESULT_TTL,
            failure_ttl=UPLOAD_FAILURE_TTL,
        )
    except RedisError as error:
        logger.warning("cannot enqueue the import of upload %s: %s", upload_id, error)
        return None
    return job.id
