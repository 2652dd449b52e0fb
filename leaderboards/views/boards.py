"""The leaderboard pages: the task board, its JSON and CSV, forks and snapshots.

Bad query strings never fail: ``parse_leaderboard_query`` keeps defaults and explains.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View
from django.views.decorators.http import require_POST

from core.csv_export import csv_write
from core.errors import NotFound, ServiceError
from leaderboards.selectors.boards import (
    leaderboard_page,
    leaderboard_query,
    leaderboard_snapshot_get,
    leaderboard_table_for_query,
)
from leaderboards.services.boards import fork_create, snapshot_create
from leaderboards.views.common import is_htmx_partial, task_or_404


class LeaderboardView(View):
    """The task leaderboard (also a fork's page); htmx requests get the table only."""

    def get(self, request, code: str, slug: str | None = None):
        task = task_or_404(code, request.user)
        partial = is_htmx_partial(request)
        try:
            page = leaderboard_page(
                task, request.GET, request.user, fork_slug=slug, with_saved=not partial
            )
        except NotFound as error:
            raise Http404(error.message) from None
        context = {
            "task": task,
            "fork": page.fork,
            "table": page.table,
            "board_url": reverse("leaderboards:fork", args=[task.code, slug])
            if slug is not None
            else reverse("leaderboards:task", args=[task.code]),
            "can_fork": page.can_fork,
            "can_snapshot": page.can_snapshot,
            "forks": page.forks,
            "snapshots": page.snapshots,
        }
        template = "_table.html" if partial else "task_leaderboard.html"
        return render(request, f"leaderboards/{template}", context)


class LeaderboardJsonView(View):
    """The same table as the page, as JSON."""

    def get(self, request, code: str):
        task = task_or_404(code, request.user)
        table = leaderboard_table_for_query(task, request.GET, request.user)
        # Strict JSON: the table holds no NaN or infinity (a figure no metric can have is
        # missing), and a regression fails loudly instead of writing what JSON has not.
        return JsonResponse(table.as_dict(), json_dumps_params={"allow_nan": False})


class LeaderboardCsvView(View):
    """The same table as the page (same weights, sort and page), as CSV."""

    def get(self, request, code: str):
        task = task_or_404(code, request.user)
        table = leaderboard_table_for_query(task, request.GET, request.user)
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="{task.code}-leaderboard-page{table.page}.csv"'
        )
        csv_write(response, [table.csv_header(), *table.csv_rows()])
        return response


@require_POST
def fork_create_view(request, code: str):
    """Save the posted weighting as a fork and go to its page."""
    task = task_or_404(code, request.user)
    query, _ = leaderboard_query(task, request.POST, request.user)
    try:
        fork = fork_create(
            task,
            user=request.user,
            name=request.POST.get("name", ""),
            description=request.POST.get("description", ""),
            weights=query.weights,
        )
    except ServiceError as error:
        messages.error(request, error.message)
        return redirect("leaderboards:task", code=task.code)
    messages.success(request, f"Saved the weighting {fork.name!r}: share this page's URL.")
    return redirect("leaderboards:fork", code=task.code, slug=fork.slug)


@require_POST
def snapshot_create_view(request, code: str):
    """Freeze the posted weighting's public table and go to the snapshot."""
    task = task_or_404(code, request.user)
    query, _ = leaderboard_query(task, request.POST, request.user)
    try:
        snapshot = snapshot_create(
            task,
            user=request.user,
            weights=query.weights,
            sort=query.sort,
            name=request.POST.get("name", ""),
        )
    except ServiceError as error:
        messages.error(request, error.message)
        return redirect("leaderboards:task", code=task.code)
    messages.success(request, "Snapshot taken.")
    return redirect("leaderboards:snapshot", code=task.code, snapshot_id=snapshot.pk)


class SnapshotView(View):
    """A frozen table, with its creator and time."""

    def get(self, request, code: str, snapshot_id: int):
        task = task_or_404(code, request.user)
        try:
            snapshot = leaderboard_snapshot_get(task, snapshot_id)
        except NotFound as error:
            raise Http404(error.message) from None
        context = {"task": task, "snapshot": snapshot, "table": snapshot.table}
        return render(request, "leaderboards/snapshot.html", context)
