"""RQ jobs of the tasks app (``default`` queue).

- ``contexts_import_job(upload_id)``: import a big contexts upload
  (``tasks.upload_jobs.upload_job_run`` with the contexts' importer); idempotent. Queued by
  its dotted path (``tasks.services.CONTEXTS_IMPORT_JOB``).
"""

from __future__ import annotations

from typing import Any

from tasks import services
from tasks.upload_jobs import upload_job_run


def contexts_import_job(upload_id: int) -> dict[str, Any]:
    """Import the contexts of upload job ``upload_id``."""
    return upload_job_run(upload_id, services.contexts_upload_import)
