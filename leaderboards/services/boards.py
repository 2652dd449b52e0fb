"""Writes of the leaderboard pages: forks (saved weightings) and snapshots (frozen tables)."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from core.errors import PermissionDenied, ServiceError
from leaderboards.models import BoardCube, LeaderboardFork, LeaderboardSnapshot
from leaderboards.selectors.boards import leaderboard_datasets, leaderboard_table
from leaderboards.tables.query import MAX_PAGE_SIZE, default_weights, merge_weights
from leaderboards.tables.results import DEFAULT_SORT, LeaderboardWeights
from tasks.models import Task
from tasks.permissions import can_save_leaderboard_fork, can_take_leaderboard_snapshot

MAX_NAME_LENGTH = 200
SLUG_ATTEMPTS = 20


def _clean_name(name: str, *, required: bool) -> str:
    name = (name or "").strip()
    if required and not name:
        raise ServiceError("Give the weighting a name.", code="fork.name_required")
    if len(name) > MAX_NAME_LENGTH:
        raise ServiceError(
            f"The name is too long (at most {MAX_NAME_LENGTH} characters).", code="fork.name_long"
        )
    return name


def _public_weights(task: Task, weights: LeaderboardWeights) -> LeaderboardWeights:
    # Keep only metrics of the config and datasets everyone can see: a fork or snapshot
    # is public, so it must not name a hidden dataset.
    public_datasets = leaderboard_datasets(task, AnonymousUser())
    config = task.config
    defaults = default_weights(config.metrics() if config else (), public_datasets)
    return merge_weights(defaults, weights)


def fork_create(
    task: Task, *, user, name: str, weights: LeaderboardWeights, description: str = ""
) -> LeaderboardFork:
    """Save ``weights`` as a named weighting of ``task``'s leaderboard, at its own URL.

    The slug comes from the name; a taken slug gets a number ("my-weights-2").
    """
    if not can_save_leaderboard_fork(user, task):
        raise PermissionDenied("Sign in to save a weighting of this leaderboard.")
    name = _clean_name(name, required=True)
    stored = _public_weights(task, weights).as_dict()
    base = slugify(name)[:90] or "weighting"
    for attempt in range(1, SLUG_ATTEMPTS + 1):
        slug = base if attempt == 1 else f"{base}-{attempt}"
        if LeaderboardFork.objects.filter(task=task, slug=slug).exists():
            continue
        try:
            # The unique constraint settles a race between two people saving the same name.
            with transaction.atomic():
                return LeaderboardFork.objects.create(
                    task=task,
                    name=name,
                    slug=slug,
                    description=(description or "").strip()[:5000],
                    weights=stored,
                    created_by=user,
                )
        except IntegrityError:
            continue
    raise ServiceError("Too many weightings share this name: choose another.", code="fork.slug")


def snapshot_create(
    task: Task,
    *,
    user,
    weights: LeaderboardWeights,
    sort: str = DEFAULT_SORT,
    name: str = "",
) -> LeaderboardSnapshot:
    """Freeze the whole public leaderboard of ``task`` under ``weights`` and ``sort``.

    The table is computed as an anonymous visitor sees it (published models, no hidden
    datasets), because anyone may open a snapshot; later score changes do not alter it.
    """
    if not can_take_leaderboard_snapshot(user, task):
        raise PermissionDenied("Only the task's owners can take snapshots of its leaderboard.")
    name = _clean_name(name, required=False)
    public = _public_weights(task, weights)
    visitor = AnonymousUser()
    datasets = leaderboard_datasets(task, visitor)
    table = leaderboard_table(
        task,
        weights=public,
        sort=sort,
        page=1,
        page_size=MAX_PAGE_SIZE * 1000,
        user=visitor,
        datasets=datasets,
    )
    return LeaderboardSnapshot.objects.create(
        task=task,
        name=name,
        weights=public.as_dict(),
        table=table.as_dict(),
        created_by=user,
    )


def board_cubes_forget_owner(user_id: int) -> None:
    """Delete the score cubes that hold the name of user ``user_id`` (a model owner).

    A cube's version counts models and scores, not users: after a rename its owner names
    would be stale. The next page rebuilds the cube. One query.
    """
    BoardCube.objects.filter(task__models__owner_id=user_id).delete()
