"""Who may do what: the one definition used by views, the admin and the API."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from tasks.models import Task

User = AbstractBaseUser | AnonymousUser


def is_admin(user: User) -> bool:
    return bool(user and user.is_authenticated and user.is_superuser)


def is_task_owner(user: User, task: Task) -> bool:
    """Return True for the task's owners and for superusers."""
    if not (user and user.is_authenticated):
        return False
    if user.is_superuser:
        return True
    # The owners' ids, when the selector that read the task read them too (``owner_ids``).
    owner_ids = getattr(task, "owner_ids", None)
    if owner_ids is not None:
        return user.pk in owner_ids
    return task.owners.filter(pk=user.pk).exists()


def can_view_task(user: User, task: Task) -> bool:
    """Hidden tasks are visible only to their owners and admins."""
    return not task.hidden or is_task_owner(user, task)


def can_contribute(user: User, task: Task) -> bool:
    """Signed-in users may write and validate examples on active, visible tasks."""
    return bool(user and user.is_authenticated) and task.active and can_view_task(user, task)


def can_manage_task(user: User, task: Task) -> bool:
    """Edit settings, upload contexts and datasets, open rounds, see gold and hidden scores."""
    return is_task_owner(user, task)


def can_register_model(user: User, task: Task) -> bool:
    if not (user and user.is_authenticated):
        return False
    return is_task_owner(user, task) or (task.accepts_models and can_view_task(user, task))


def can_validate(user: User, task: Task) -> bool:
    """Signed-in users may validate examples of the tasks they may contribute to."""
    return can_contribute(user, task)


def can_review_examples(user: User, task: Task) -> bool:
    """Owners review flagged and disputed examples; their verdict is final."""
    return is_task_owner(user, task)


def can_export_examples(user: User, task: Task) -> bool:
    """Owners export a task's or a round's examples (JSON Lines)."""
    return is_task_owner(user, task)


def can_manage_campaigns(user: User, task: Task) -> bool:
    """Owners create crowd campaigns and download their bonus CSVs."""
    return is_task_owner(user, task)


def can_see_worker_stats(user: User, task: Task) -> bool:
    """Per-worker numbers (campaign ids, rejections, time) are for owners; totals are public."""
    return is_task_owner(user, task)


def can_save_leaderboard_fork(user: User, task: Task) -> bool:
    """Signed-in users who can see a task may save a named weighting of its leaderboard."""
    return bool(user and user.is_authenticated) and can_view_task(user, task)


def can_take_leaderboard_snapshot(user: User, task: Task) -> bool:
    """Snapshots are the task's official frozen tables: its owners take them."""
    return can_manage_task(user, task)


def can_browse_predictions(user: User, task: Task) -> bool:
    """The per-example browser shows gold labels, so only those who may see gold use it."""
    return can_manage_task(user, task)
