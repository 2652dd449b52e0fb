"""Leaderboard pages: the task board, its exports, forks, snapshots and the model page.

Views are thin: they parse the request, call one selector or service, and render.
Bad query strings never fail: ``parse_leaderboard_query`` keeps defaults and explains.
"""

from __future__ import annotations

import csv

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views import View
from django.views.decorators.http import require_POST

from leaderboards import selectors
from leaderboards.services_boards import fork_create, snapshot_create
from leaderboards.tables import parse_leaderboard_query
from models_hub.selectors import model_get_visible
from tasks.errors import NotFound, ServiceError
from tasks.permissions import (
    can_browse_predictions,
    can_manage_task,
    can_save_leaderboard_fork,
    can_take_leaderboard_snapshot,
)
from tasks.selectors import task_get_visible


def _task_or_404(code: str, user):
    try:
        return task_get_visible(code, user)
    except NotFound as error:
        raise Http404(error.message) from None


def _is_partial(request) -> bool:
    # htmx asks for the table only; a history restore needs the whole page.
    return request.headers.get("HX-Request") == "true" and not request.headers.get(
        "HX-History-Restore-Request"
    )


def _board(request, code: str, fork_slug: str | None = None):
    """Return ``(task, fork, table)`` for the request's weighting (404 for unknown ones)."""
    task = _task_or_404(code, request.user)
    fork = None
    if fork_slug is not None:
        try:
            fork = selectors.leaderboard_fork_get(task, fork_slug)
        except NotFound as error:
            raise Http404(error.message) from None
    table = selectors.leaderboard_table_for_query(task, request.GET, request.user, fork=fork)
    return task, fork, table


class LeaderboardView(View):
    """The task leaderboard (also a fork's page); htmx requests get the table only."""

    def get(self, request, code: str, slug: str | None = None):
        task, fork, table = _board(request, code, slug)
        user = request.user
        board_url = (
            reverse("leaderboards:fork", args=[task.code, fork.slug])
            if fork
            else reverse("leaderboards:task", args=[task.code])
        )
        context = {
            "task": task,
            "fork": fork,
            "table": table,
            "board_url": board_url,
            "can_fork": can_save_leaderboard_fork(user, task),
            "can_snapshot": can_take_leaderboard_snapshot(user, task),
            "is_owner": can_manage_task(user, task),
        }
        if _is_partial(request):
            return render(request, "leaderboards/_table.html", context)
        context["forks"] = selectors.leaderboard_forks(task)
        context["snapshots"] = selectors.leaderboard_snapshots(task)
        return render(request, "leaderboards/task_leaderboard.html", context)


class LeaderboardJsonView(View):
    """The same table as the page, as JSON."""

    def get(self, request, code: str):
        _, _, table = _board(request, code)
        return JsonResponse(table.as_dict())


class LeaderboardCsvView(View):
    """The same table as the page (same weights, sort and page), as CSV."""

    def get(self, request, code: str):
        task, _, table = _board(request, code)
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="{task.code}-leaderboard-page{table.page}.csv"'
        )
        writer = csv.writer(response)
        writer.writerow(table.csv_header())
        writer.writerows(table.csv_rows())
        return response


def _posted_weighting(request, task):
    datasets = selectors.leaderboard_datasets(task, request.user)
    return parse_leaderboard_query(request.POST, task.config, datasets)


@require_POST
def fork_create_view(request, code: str):
    """Save the posted weighting as a fork and go to its page."""
    task = _task_or_404(code, request.user)
    query = _posted_weighting(request, task)
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
    task = _task_or_404(code, request.user)
    query = _posted_weighting(request, task)
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
        task = _task_or_404(code, request.user)
        try:
            snapshot = selectors.leaderboard_snapshot_get(task, snapshot_id)
        except NotFound as error:
            raise Http404(error.message) from None
        return render(
            request,
            "leaderboards/snapshot.html",
            {"task": task, "snapshot": snapshot, "table": snapshot.table},
        )


RUN_URL_NAMES = ("leaderboards:run", "leaderboards:run_detail")


def _run_url_name() -> str | None:
    # The run page belongs to another part of the app; link to it only when it exists.
    for name in RUN_URL_NAMES:
        try:
            reverse(name, args=[1])
        except NoReverseMatch:
            continue
        return name
    return None


class ModelResultsView(View):
    """The model page: card, scores per dataset, runs; for owners, the example browser."""

    def get(self, request, pk: int):
        try:
            model = model_get_visible(pk, request.user)
        except NotFound as error:
            raise Http404(error.message) from None
        task = model.task
        results = selectors.model_results(model, request.user)
        browser = None
        if can_browse_predictions(request.user, task):
            browser = selectors.model_example_browser(
                model,
                request.user,
                dataset_slug=request.GET.get("dataset"),
                compare_model_id=request.GET.get("compare"),
                wrong_only=request.GET.get("wrong") == "1",
                page=request.GET.get("page", "1"),
            )
        return render(
            request,
            "leaderboards/model_results.html",
            {
                "model": model,
                "task": task,
                "results": results,
                "browser": browser,
                "run_url_name": _run_url_name(),
            },
        )
