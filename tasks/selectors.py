"""Reads of the tasks app."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from dynatask_site.precompiled import PrecompiledQuery
from tasks.errors import NotFound
from tasks.models import Round, Task
from tasks.permissions import can_view_task


def task_list_visible(user) -> QuerySet[Task]:
    """Tasks a user may see: public ones, plus hidden ones they own (all for admins)."""
    tasks = Task.objects.select_related("current_config")
    if user.is_authenticated and user.is_superuser:
        return tasks
    if user.is_authenticated:
        return tasks.filter(Q(hidden=False) | Q(owners=user)).distinct()
    return tasks.filter(hidden=False)


def with_ownership_of(tasks: QuerySet[Task], user_id: int | None) -> QuerySet[Task]:
    """Annotate ``viewer_owns``: whether the user ``user_id`` owns each task (no owners
    query). Set ``viewer_owns_for = user_id`` on the tasks read, for ``is_task_owner`` to
    trust it (``annotation.selectors.task_for_actor`` does)."""
    owns = Task.owners.through.objects.filter(task_id=OuterRef("pk"), user_id=user_id)
    return tasks.annotate(viewer_owns=Exists(owns))


def task_get_visible(code: str, user) -> Task:
    task = (
        Task.objects.select_related("current_config")
        .prefetch_related("owners")
        .filter(code=code)
        .first()
    )
    if task is None or not can_view_task(user, task):
        raise NotFound(f"no task {code!r}")
    return task


_CURRENT_ROUND = PrecompiledQuery(
    lambda task_id: Round.objects.filter(task_id=task_id, is_open=True).order_by("-number")[:1],
    task_id=int,
)


def round_current(task: Task) -> Round | None:
    """The latest open round (None when every round is closed), with ``task`` as its task."""
    round_ = _CURRENT_ROUND.first(task_id=task.pk)
    if round_ is not None:
        round_.task = task
    return round_
