"""The evaluation run pages: the run, its htmx-polled progress, and its retry."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views import View

from core.errors import ServiceError
from leaderboards.services.runs import evaluation_run_retry
from leaderboards.views.common import run_detail_or_404

# Sent (``HX-Trigger``) when a polled run ends or a run is queued again: the model page
# reloads its scores and run history on it.
RUNS_CHANGED_EVENT = "runs-changed"


def _progress_part(request, detail, *, changed: bool):
    response = TemplateResponse(request, "leaderboards/run_progress.html", _context(detail))
    if changed:
        response["HX-Trigger"] = RUNS_CHANGED_EVENT
    return response


def _context(detail) -> dict:
    return {
        "run": detail.run,
        "progress": detail.progress,
        "can_manage": detail.can_manage,
        "score": detail.score,
    }


class RunDetailView(View):
    def get(self, request, run_id):
        detail = run_detail_or_404(run_id, request.user)
        return TemplateResponse(request, "leaderboards/run_detail.html", _context(detail))


class RunProgressView(View):
    """The htmx-polled partial: progress bar, done/total, rate, ETA, state, Retry."""

    def get(self, request, run_id):
        detail = run_detail_or_404(run_id, request.user)
        # Only a polled run (one not finished when it was shown) is asked for: it ended now.
        return _progress_part(request, detail, changed=detail.progress.finished)


class RunRetryView(LoginRequiredMixin, View):
    """Queue a failed run's unfinished shards again; htmx gets the progress partial back."""

    def post(self, request, run_id):
        detail = run_detail_or_404(run_id, request.user)
        try:
            evaluation_run_retry(detail.run, user=request.user)
        except ServiceError as error:
            if error.status == 403:
                raise PermissionDenied(error.message) from None
            messages.error(request, error.message)
        else:
            messages.success(request, "The run was queued again; stored predictions are kept.")
        if request.headers.get("HX-Request"):
            detail = run_detail_or_404(run_id, request.user)
            return _progress_part(request, detail, changed=True)
        return redirect("leaderboards:run_detail", run_id=run_id)
