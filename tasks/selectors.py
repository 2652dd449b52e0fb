"""Reads of the tasks app."""

from __future__ import annotations

from django.db.models import Exists, IntegerField, OuterRef, Q, QuerySet, Value

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


def with_viewer_ownership(tasks: QuerySet[Task], user) -> QuerySet[Task]:
    """Annotate whether ``user`` owns each task, for ``is_task_owner`` (no owners query)."""
    user_id = user.pk if user and user.is_authenticated else None
    owns = Task.owners.through.objects.filter(task_id=OuterRef("pk"), user_id=user_id)
    return tasks.annotate(
        viewer_owns=Exists(owns), viewer_owns_for=Value(user_id, output_field=IntegerField())
    )


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


def round_current(task: Task) -> Round | None:
    """The latest open round (None when every round is closed)."""
    return task.rounds.filter(is_open=True).order_by("-number").first()
