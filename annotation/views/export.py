"""The owners' JSON Lines export of a task or a round (streamed)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseBadRequest, StreamingHttpResponse
from django.views import View

from annotation.export import batched_lines, example_export_lines
from annotation.stats.summaries import round_by_number
from core.errors import NotFound, ServiceError
from tasks.permissions import can_export_examples
from tasks.selectors import task_get_visible


class TaskExportView(View):
    """``GET /tasks/<code>/export.jsonl[?round=N]``: owners only (403 otherwise)."""

    def get(self, request, code):
        try:
            task = task_get_visible(code, request.user)
            if not can_export_examples(request.user, task):
                raise PermissionDenied("only the task's owners export its examples")
            round_ = round_by_number(task, request.GET.get("round"))
        except NotFound as error:
            raise Http404(error.message) from None
        except ServiceError as error:
            return HttpResponseBadRequest(error.message)
        name = f"{task.code}-round-{round_.number}" if round_ else f"{task.code}-all-rounds"
        response = StreamingHttpResponse(
            batched_lines(example_export_lines(task, round_)),
            content_type="application/x-ndjson; charset=utf-8",
        )
        response["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
        response["Cache-Control"] = "no-store"
        return response
