"""The board page's HTML, cached with the board, and refreshed by a job after each change.

``board_fragment`` returns the board's HTML (counts, table, matrices) for the task's board
now, as a viewer who may not see the ``hidden`` models gets it, from the cache (keyed by that
set too) when it is there: a visit between two votes renders nothing that grows
with the number of models. ``board_changed`` (after a vote, an exclusion, synthetic votes)
makes the cached board stale (``selectors.board_generation_bump``) and queues
``arena_board_refresh_job`` on the live queue (one per task at a time), which refits the board
(1,000 bootstrap refits: about a second at 50 models) and renders visitors' HTML, so that the
visitor after a vote does not pay for the fit. For ``REFRESH_SECONDS`` after a change, while
that job runs, the page shows the last board it rendered; past that, or when there is none, it
computes the board itself. The JSON, CSV and API read ``selectors.arena_board_for``, which is
never stale.
"""

from __future__ import annotations

import hashlib
import logging
import time

import django_rq
from django.core.cache import cache
from django.template.loader import render_to_string
from redis.exceptions import RedisError

from annotation.arena.board import board_view
from annotation.arena.selectors import (
    CACHE_SECONDS,
    arena_board,
    board_cache_key,
    board_generation_bump,
    public_model_ids_hidden,
)

logger = logging.getLogger(__name__)
REFRESH_SECONDS = 30
STYLES = {"": None, "1": True, "0": False}


def _changed_key(task_id: int) -> str:
    return f"arena-board-changed:{task_id}"


def _queued_key(task_id: int) -> str:
    return f"arena-board-refresh-queued:{task_id}"


def visibility_key(hidden: frozenset[int]) -> str:
    """The part of a cached page's key that says which models it leaves out ("all": none)."""
    if not hidden:
        return "all"
    ids = ",".join(str(pk) for pk in sorted(hidden))
    return hashlib.sha256(ids.encode()).hexdigest()[:24]


def _latest_key(task, style_query: str, hidden: frozenset[int]) -> str:
    version = task.current_config_id or 0
    seen = visibility_key(hidden)
    return f"arena-board-html-latest:{task.pk}:{version}:{style_query}:{seen}"


def matrix_rows(board: dict) -> list[dict]:
    """The matrices of a board's JSON, row by row: (win fraction, battles) per column."""
    wins, battles = board.get("win_fraction_matrix", []), board.get("battle_matrix", [])
    return [
        {"name": name, "cells": list(zip(wins[i], battles[i], strict=True))}
        for i, name in enumerate(board.get("models", []))
    ]


def _render(task, style_query: str, hidden: frozenset[int]) -> str:
    board = arena_board(task, style_control=STYLES.get(style_query))
    board = board_view(board, hidden).as_dict()
    context = {
        "task": task,
        "board": board,
        "matrix_rows": matrix_rows(board),
        "style_query": style_query,
    }
    return render_to_string("annotation/arena/_board.html", context)


def board_fragment(
    task,
    style_query: str = "",
    hidden: frozenset[int] = frozenset(),
    *,
    allow_stale: bool = True,
) -> str:
    """The board's HTML (see the module docstring); ``style_query`` is "", "1" or "0";
    ``hidden``, the models the viewer may not see (``model_ids_hidden_from``). The page is
    cached per set of hidden models, so no viewer is served a page rendered for another."""
    seen = visibility_key(hidden)
    key = f"{board_cache_key(task, STYLES.get(style_query))}:html:{style_query}:{seen}"
    fragment = cache.get(key)
    if fragment is not None:
        return fragment
    latest_key = _latest_key(task, style_query, hidden)
    changed = cache.get(_changed_key(task.pk))
    if allow_stale and changed is not None and time.time() - changed < REFRESH_SECONDS:
        latest = cache.get(latest_key)
        if latest is not None:
            return latest
    fragment = _render(task, style_query, hidden)
    cache.set_many({key: fragment, latest_key: fragment}, timeout=CACHE_SECONDS)
    return fragment


def board_changed(task_id: int) -> None:
    """After the commit of a vote or an exclusion: stale board, refresh queued."""
    board_generation_bump(task_id)
    cache.set(_changed_key(task_id), time.time(), timeout=REFRESH_SECONDS * 4)
    if not cache.add(_queued_key(task_id), 1, timeout=REFRESH_SECONDS):
        return  # a refresh is queued and has not started: it will see this change
    try:
        # The default queue: a refit of 1,000 resamples must not hold the live loop's worker.
        django_rq.get_queue("default").enqueue(
            arena_board_refresh_job, task_id, job_timeout=300, result_ttl=60, failure_ttl=3600
        )
    except RedisError:
        cache.delete(_queued_key(task_id))
        logger.warning("could not queue the arena board refresh of task %s", task_id)


def arena_board_refresh_job(task_id: int) -> bool:
    """Refit the task's board and render its HTML into the cache; False without an arena."""
    from tasks.models import Task

    cache.delete(_queued_key(task_id))
    task = Task.objects.select_related("current_config").filter(pk=task_id).first()
    parsed = task.config if task is not None else None
    if parsed is None or parsed.arena is None:
        return False
    # The page visitors get (most visits); owners' and model owners' pages render on demand.
    board_fragment(task, "", public_model_ids_hidden(task), allow_stale=False)
    return True
