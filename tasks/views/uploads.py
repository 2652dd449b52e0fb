"""The page of a big upload imported by a job: its htmx-polled progress, then its outcome."""

from __future__ import annotations

from django.http import Http404
from django.template.response import TemplateResponse
from django.views import View

from core.errors import NotFound
from tasks import selectors


def _context(pk: int, user) -> dict:
    try:
        upload = selectors.upload_job_get_visible(pk, user)
    except NotFound as error:
        raise Http404(error.message) from None
    return {"upload": upload, "task": upload.task, "progress": selectors.upload_progress(upload)}


class UploadJobView(View):
    """The upload's page: what is imported where, the progress, the outcome."""

    def get(self, request, pk: int):
        return TemplateResponse(request, "tasks/upload_job.html", _context(pk, request.user))


class UploadJobProgressView(View):
    """The polled partial: bytes read of the file, rate, ETA, state; then the outcome."""

    def get(self, request, pk: int):
        return TemplateResponse(request, "tasks/upload_progress.html", _context(pk, request.user))
