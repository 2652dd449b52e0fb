"""Reads of the leaderboard pages: the leaderboard table, forks and snapshots.

``leaderboard_table`` is the one code path behind the leaderboard page, its CSV and JSON
exports, snapshots and the REST API: the same weights, sorting, paging and results. It
runs a fixed number of queries whatever the number of models (datasets, the data version,
the task's score cube: ``leaderboards.selectors.cubes.score_cube``, rebuilt from the models
and scores when they changed), takes the viewer's models and datasets from the cube,
computes the Dynascore over every model in one numpy pass (``leaderboards.tables``) and
builds rows for the requested page only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache

from core.errors import NotFound
from leaderboards.cubes import cube_board
from leaderboards.models import AccessType, Dataset, LeaderboardFork, LeaderboardSnapshot
from leaderboards.selectors.cubes import leaderboard_data_version, score_cube, score_resamples
from leaderboards.tables.build import (
    DEFAULT_INSTANCE_MEMORY_GB,
    LeaderboardRequest,
    build_leaderboard_table,
)
from leaderboards.tables.query import parse_leaderboard_query
from leaderboards.tables.records import DatasetRecord
from leaderboards.tables.results import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_SORT,
    LeaderboardQuery,
    LeaderboardTable,
    LeaderboardWeights,
)
from tasks.models import Task
from tasks.permissions import (
    can_manage_task,
    can_save_leaderboard_fork,
    can_take_leaderboard_snapshot,
)

DEFAULT_CACHE_SECONDS = 300
# Bump when the cached table's shape changes, so old entries are never read back.
CACHE_FORMAT = 3


def instance_memory_gb() -> float:
    """Return the configured instance memory (``LEADERBOARD_INSTANCE_MEMORY_GB``, default 16)."""
    return float(getattr(settings, "LEADERBOARD_INSTANCE_MEMORY_GB", DEFAULT_INSTANCE_MEMORY_GB))


def leaderboard_datasets(task: Task, user) -> list[Dataset]:
    """Return the original (not perturbed) datasets of ``task`` that ``user`` may see.

    Hidden datasets are for the task's owners only. One query.
    """
    datasets = Dataset.objects.filter(task=task, perturbation_of__isnull=True).select_related(
        "round"
    )
    if not can_manage_task(user, task):
        datasets = datasets.exclude(access_type=AccessType.HIDDEN)
    return list(datasets.order_by("round__number", "name", "pk"))


def leaderboard_query(
    task: Task, querydict, user, *, fork: LeaderboardFork | None = None
) -> tuple[LeaderboardQuery, list[Dataset]]:
    """Return the parsed query string (defaults from ``fork`` if given) and the datasets."""
    datasets = leaderboard_datasets(task, user)
    query = parse_leaderboard_query(
        querydict,
        task.config,
        datasets,
        base_weights=fork.weights if fork is not None else None,
    )
    return query, datasets


def leaderboard_table_for_query(task: Task, querydict, user, *, fork=None) -> LeaderboardTable:
    """Return the leaderboard page that a GET query asks for (the page and the API both)."""
    query, datasets = leaderboard_query(task, querydict, user, fork=fork)
    return leaderboard_table(
        task,
        weights=query.weights,
        sort=query.sort,
        page=query.page,
        page_size=query.page_size,
        user=user,
        datasets=datasets,
        messages=query.messages,
    )


def leaderboard_table(
    task: Task,
    *,
    weights: LeaderboardWeights,
    sort: str = DEFAULT_SORT,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
    user=None,
    datasets: Sequence[Dataset] | None = None,
    messages: Iterable[str] = (),
) -> LeaderboardTable:
    """Return one page of the leaderboard of ``task`` as ``user`` may see it.

    Everyone sees published models; a user also sees their own; the task's owners see
    every model and the hidden datasets. Someone else's anonymous model is shown as
    "Anonymous". Pass ``datasets`` (from ``leaderboard_datasets``) to save a query.

    Queries: datasets (unless passed), the data version, then, unless the same page of the
    same data was computed recently (see ``cache_seconds``), the task's score cube (see
    ``score_cube``; rebuilt from the models and scores if they changed since it was built).
    """
    user = user if user is not None else AnonymousUser()
    if datasets is None:
        datasets = leaderboard_datasets(task, user)
    manages = can_manage_task(user, task)
    version = leaderboard_data_version(task)
    seconds = cache_seconds()
    key = None
    if seconds > 0:
        key = _cache_key(task, user, manages, datasets, weights, sort, page, page_size, version)
        cached = cache.get(key)
        if cached is not None:
            return replace(cached, messages=tuple(messages) + cached.messages)
    table = _compute_table(task, user, manages, datasets, weights, sort, page, page_size, version)
    if key is not None:
        cache.set(key, table, seconds)
    return replace(table, messages=tuple(messages) + table.messages)


def cache_seconds() -> int:
    """Return how long a computed page is reused (``LEADERBOARD_CACHE_SECONDS``, default 300).

    A cached page is keyed by the data version (``leaderboard_data_version``), so new or changed
    scores and models show at once (the score cube is kept by the same version: code that
    changes them with a raw ``.update()`` must set ``updated_at``). 0 turns it off.
    """
    return int(getattr(settings, "LEADERBOARD_CACHE_SECONDS", DEFAULT_CACHE_SECONDS))


def _cache_key(task, user, manages, datasets, weights, sort, page, page_size, version) -> str:
    extra = (sort, page, page_size)
    return "leaderboard:" + _signature(task, user, manages, datasets, weights, version, *extra)


def _intervals_key(task, user, manages, datasets, weights, version) -> str:
    # The intervals of a weighting serve every sort and page of it.
    return "leaderboard-intervals:" + _signature(task, user, manages, datasets, weights, version)


def _signature(task, user, manages, datasets, weights, version, *extra) -> str:
    # Who is looking decides which models, datasets and names appear.
    if manages:
        scope = "owners"
    elif user.is_authenticated:
        scope = f"user:{user.pk}"
    else:
        scope = "public"
    signature = repr(
        (
            CACHE_FORMAT,
            task.pk,
            scope,
            [
                (d.pk, d.slug, d.name, str(d.access_type), d.weight, d.round_id, str(d.updated_at))
                for d in datasets
            ],
            sorted(weights.metrics.items()),
            sorted(weights.datasets.items()),
            *extra,
            instance_memory_gb(),
            version,
        )
    )
    return hashlib.sha256(signature.encode()).hexdigest()


def _remembering(key: str, seconds: int):
    """Return a ``remember`` for ``build_leaderboard_table``: the intervals kept under ``key``."""

    def remember(compute):
        if seconds <= 0:
            return compute()
        kept = cache.get(key)
        if kept is None:
            kept = compute()
            cache.set(key, kept, seconds)
        return kept

    return remember


def _compute_table(task, user, manages, datasets, weights, sort, page, page_size, version):
    """Take the viewer's board from the task's score cube and build the page."""
    config = task.config
    metric_specs = config.metrics() if config is not None else ()
    cube = score_cube(task, version)
    board = cube_board(
        cube,
        datasets=[(dataset.pk, dataset.slug) for dataset in datasets],
        manages=manages,
        user_id=user.pk if user.is_authenticated else None,
        resamples_of=score_resamples,
    )
    return build_leaderboard_table(
        LeaderboardRequest(
            task_code=task.code,
            metric_specs=metric_specs,
            datasets=[
                DatasetRecord(
                    slug=dataset.slug,
                    name=dataset.name,
                    access_type=str(dataset.access_type),
                    round_number=dataset.round.number if dataset.round_id else None,
                    default_weight=float(dataset.weight),
                )
                for dataset in datasets
            ],
            board=board,
            weights=weights,
            sort=sort,
            page=page,
            page_size=page_size,
            instance_memory_gb=instance_memory_gb(),
            remember=_remembering(
                _intervals_key(task, user, manages, datasets, weights, version), cache_seconds()
            ),
        )
    )


def leaderboard_forks(task: Task) -> list[LeaderboardFork]:
    """Return the saved weightings of ``task``, newest first (one query)."""
    return list(task.forks.order_by("-created_at")[:50])


def leaderboard_fork_get(task: Task, slug: str) -> LeaderboardFork:
    """Return fork ``slug`` of ``task`` or raise NotFound."""
    fork = LeaderboardFork.objects.filter(task=task, slug=slug).select_related("created_by").first()
    if fork is None:
        raise NotFound(f"no saved weighting {slug!r}")
    return fork


def leaderboard_snapshots(task: Task) -> list[LeaderboardSnapshot]:
    """Return the snapshots of ``task``, newest first, without their tables (one query)."""
    return list(
        task.snapshots.select_related("created_by").defer("table").order_by("-created_at")[:50]
    )


def leaderboard_snapshot_get(task: Task, snapshot_id: int) -> LeaderboardSnapshot:
    """Return snapshot ``snapshot_id`` of ``task`` or raise NotFound."""
    snapshot = (
        LeaderboardSnapshot.objects.filter(task=task, pk=snapshot_id)
        .select_related("created_by")
        .first()
    )
    if snapshot is None:
        raise NotFound(f"no snapshot {snapshot_id}")
    return snapshot


@dataclass(frozen=True)
class LeaderboardPage:
    """What the leaderboard page shows: the table of a weighting and the saved ones."""

    table: LeaderboardTable
    fork: LeaderboardFork | None
    forks: list[LeaderboardFork]
    snapshots: list[LeaderboardSnapshot]
    can_fork: bool
    can_snapshot: bool


def leaderboard_page(
    task: Task, querydict, user, *, fork_slug: str | None = None, with_saved: bool = True
) -> LeaderboardPage:
    """Return the leaderboard page of ``task`` for a GET query, in fork ``fork_slug`` if given.

    Raises NotFound for an unknown fork. ``with_saved`` adds the task's forks and snapshots
    (two queries; the htmx table alone does without them).
    """
    fork = leaderboard_fork_get(task, fork_slug) if fork_slug is not None else None
    return LeaderboardPage(
        table=leaderboard_table_for_query(task, querydict, user, fork=fork),
        fork=fork,
        forks=leaderboard_forks(task) if with_saved else [],
        snapshots=leaderboard_snapshots(task) if with_saved else [],
        can_fork=can_save_leaderboard_fork(user, task),
        can_snapshot=can_take_leaderboard_snapshot(user, task),
    )
