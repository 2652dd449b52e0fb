"""The arena's pages: start a battle, the battle (chat's page with a vote instead of a finish),
the board with its CSV/JSON and snapshots, the owners' page (rater flags, exclusions), and the
battles' JSON Lines export.

The battle page reuses chat's page state, partials, streams and URLs: a battle's conversation
is an ordinary conversation to them. The board follows the leaderboard pages' conventions
(task link, help panels, CSV and JSON of the same table, snapshots listed beside it) and links
to the task's Dynascore board by URL name.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.arena import services
from annotation.arena.board_page import board_fragment, matrix_rows
from annotation.arena.export import battle_lines
from annotation.arena.models import Vote
from annotation.arena.ratings import RESAMPLES
from annotation.arena.selectors import (
    arena_board_for,
    arena_config,
    battle_counts,
    battle_for_actor,
    exclusions,
    open_battle,
    rater_flags,
    skipped_models,
    snapshot_board_for,
    snapshot_get,
    snapshots,
    votes_today,
)
from annotation.arena.serializers import UNLISTED_NAME, shown_void_reason
from annotation.campaigns.services import campaign_quota_reached
from annotation.chat.views import page_state
from annotation.models import Campaign
from annotation.selectors.tasks import bundle_for_actor, round_for_actor
from annotation.views.access import (
    annotation_view,
    campaign_done_url,
    error_page,
    require_campaign_kind,
)
from core.csv_export import csv_write
from core.errors import NotFound, PermissionDenied, ServiceError
from models_hub.selectors import model_ids_hidden_from
from tasks.permissions import can_manage_task
from tasks.selectors import task_get_visible


def _visible_arena_task(code: str, user):
    try:
        task = task_get_visible(code, user)
        arena_config(task)
    except NotFound as error:
        raise Http404(error.message) from None
    return task


@require_http_methods(["GET", "POST"])
@annotation_view
def arena_home(request, code: str):
    """The arena's start page; POST starts a battle (or resumes the worker's open one)."""
    actor = request.actor
    bundle = bundle_for_actor(code, actor)
    require_campaign_kind(actor, Campaign.Kind.CREATE)
    if campaign_quota_reached(actor):  # as on chat's start page: no new work past the quota
        return redirect(campaign_done_url(bundle.task))
    config, chat = arena_config(bundle.task)
    round_ = round_for_actor(bundle, actor)
    if round_ is None:
        return render(request, "annotation/error.html", {"message": "No round is open."})
    current = open_battle(bundle.task, actor)
    if request.method == "POST":
        if current is None:
            current = services.battle_start(task=bundle.task, round_=round_, actor=actor)
        return redirect("annotation:arena_battle", code, current.pk)
    page = {
        "task": bundle.task,
        "arena": config,
        "chat": chat,
        "config": bundle.config,
        "current": current,
        "votes_today": votes_today(bundle.task, actor),
    }
    return render(request, "annotation/arena/start.html", page)


def _battle_page(request, battle, *, error: str = "", status: int = 200):
    state = page_state(battle.conversation)
    config, _ = arena_config(battle.task)
    unlisted = state["transcript"].unlisted
    names = (battle.model_a_name, battle.model_b_name)
    context = {
        **state,
        # A model whose card is a 404 to the worker is not named, even after the vote.
        "revealed_names": [
            UNLISTED_NAME if position in unlisted else name for position, name in enumerate(names)
        ],
        "void_reason": shown_void_reason(battle.void_reason, unlisted),
        "battle": battle,
        "revealed": bool(battle.revealed_at) or not state["active"],
        "arena": config,
        "can_finish": False,
        "votes": Vote.choices,
        "vote_error": error,
        "votes_today": votes_today(battle.task, request.actor),
    }
    return render(request, "annotation/arena/battle.html", context, status=status)


@require_GET
@annotation_view
def arena_battle(request, code: str, pk: int):
    return _battle_page(request, battle_for_actor(pk, request.actor, code=code))


@require_POST
@annotation_view
def arena_vote(request, code: str, pk: int):
    battle = battle_for_actor(pk, request.actor, code=code)
    try:
        services.battle_vote(battle, request.actor, request.POST.get("vote", ""))
    except ServiceError as error:
        battle = battle_for_actor(pk, request.actor, code=code)
        status = error.status if error.status >= 400 else 400
        return _battle_page(request, battle, error=error.message, status=status)
    return redirect("annotation:arena_battle", code, pk)


# -- the board ---------------------------------------------------------------------------------
def _style_param(request) -> bool | None:
    value = request.GET.get("style")
    return {"1": True, "0": False}.get(value) if value else None


@require_GET
def arena_board_page(request, code: str):
    task = _visible_arena_task(code, request.user)
    config, _ = arena_config(task)
    style_query = request.GET.get("style", "")
    style_query = style_query if style_query in ("0", "1") else ""
    context = {
        "task": task,
        "arena": config,
        # Our own template's output, escaped when it was rendered.
        "board_html": mark_safe(
            board_fragment(task, style_query, model_ids_hidden_from(task, request.user))
        ),
        "resamples": RESAMPLES,
        "snapshots": snapshots(task),
        "can_snapshot": can_manage_task(request.user, task),
    }
    return render(request, "annotation/arena/board.html", context)


@require_GET
def arena_board_json(request, code: str):
    task = _visible_arena_task(code, request.user)
    board = arena_board_for(task, request.user, style_control=_style_param(request))
    return JsonResponse({"task": task.code, **board.as_dict()})


@require_GET
def arena_board_csv(request, code: str):
    task = _visible_arena_task(code, request.user)
    board = arena_board_for(task, request.user, style_control=_style_param(request))
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{task.code}-arena.csv"'
    csv_write(response, [list(board.CSV_HEADER), *board.csv_rows()])
    return response


@require_POST
def arena_snapshot_create(request, code: str):
    task = _visible_arena_task(code, request.user)
    try:
        snapshot = services.snapshot_create(task, by=request.user, name=request.POST.get("name"))
    except ServiceError as error:
        messages.error(request, error.message)
        return redirect("annotation:arena_board", code)
    messages.success(request, "Snapshot taken.")
    return redirect("annotation:arena_snapshot", code, snapshot.pk)


@require_GET
def arena_snapshot(request, code: str, snapshot_id: int):
    task = _visible_arena_task(code, request.user)
    try:
        snapshot = snapshot_get(task, snapshot_id)
    except NotFound as error:
        raise Http404(error.message) from None
    board = snapshot_board_for(task, snapshot, request.user)
    context = {
        "task": task,
        "snapshot": snapshot,
        "board": board,
        "matrix_rows": matrix_rows(board),
    }
    return render(request, "annotation/arena/snapshot.html", context)


# -- owners ------------------------------------------------------------------------------------
def _managed_arena_task(request, code: str):
    task = _visible_arena_task(code, request.user)
    if not can_manage_task(request.user, task):
        raise PermissionDenied("only the task's owners manage the arena")
    return task


@require_http_methods(["GET", "POST"])
def arena_manage(request, code: str):
    """The owners' page: counts, raters' agreement and flags, exclusions, the data export."""
    try:
        task = _managed_arena_task(request, code)
        if request.method == "POST":
            services.exclusion_create(
                task,
                by=request.user,
                rater=request.POST.get("rater", ""),
                reason=request.POST.get("reason", ""),
            )
            messages.success(request, "The rater's votes are left out of the board.")
            return redirect("annotation:arena_manage", code)
    except ServiceError as error:
        if request.method != "POST" or isinstance(error, PermissionDenied):
            return error_page(request, error)
        messages.error(request, error.message)
        return redirect("annotation:arena_manage", code)
    config, _ = arena_config(task)
    context = {
        "task": task,
        "arena": config,
        "counts": battle_counts(task),
        "flags": rater_flags(task),
        "exclusions": exclusions(task),
        "skipped": skipped_models(task),
    }
    return render(request, "annotation/arena/manage.html", context)


@require_GET
def arena_battles_export(request, code: str):
    """The battles and their conversations as JSON Lines (owners only when sealed)."""
    task = _visible_arena_task(code, request.user)
    config, _ = arena_config(task)
    if config.sealed and not can_manage_task(request.user, task):
        return error_page(request, PermissionDenied("this arena's battles are sealed"))
    hidden = model_ids_hidden_from(task, request.user)
    response = StreamingHttpResponse(
        battle_lines(task, hidden), content_type="application/x-ndjson; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{task.code}-arena-battles.jsonl"'
    response["Cache-Control"] = "no-store"
    return response
