"""Reads of the tasks app."""

from __future__ import annotations

from django.db.models import Q, QuerySet

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


def with_owner_ids(task: Task) -> Task:
    """Set ``task.owner_ids``, the ids of its owners, which ``is_task_owner`` reads (one
    query); return the task."""
    task.owner_ids = frozenset(task.owners.values_list("pk", flat=True))
    return task


def task_get_visible(code: str, user) -> Task:
    """Task ``code`` with its config and ``owner_ids``, if ``user`` may see it."""
    task = Task.objects.select_related("current_config").filter(code=code).first()
    if task is None:
        raise NotFound(f"no task {code!r}")
    with_owner_ids(task)
    if not can_view_task(user, task):
        raise NotFound(f"no task {code!r}")
    return task


def round_current(task: Task) -> Round | None:
    """The latest open round (None when every round is closed), with ``task`` as its task."""
    round_ = Round.objects.filter(task=task, is_open=True).order_by("-number").first()
    if round_ is not None:
        round_.task = task
    return round_
