"""Signal receivers of the annotation app: they forget cached task bundles, nothing else.

A bundle (``annotation.selectors.tasks``) holds a task, its config, its open rounds and
their loop models; a write to any of those rows forgets the bundle of its task once the
write commits.
"""

from __future__ import annotations

from django.db import transaction

from annotation.selectors.contexts import contexts_forget
from annotation.selectors.tasks import task_bundle_forget
from tasks.models import Task


def _forget_tasks(task_ids) -> None:
    ids = {task_id for task_id in task_ids if task_id is not None}
    if not ids:
        return

    def forget() -> None:
        task_bundle_forget(*Task.objects.filter(pk__in=ids).values_list("code", flat=True))

    transaction.on_commit(forget, robust=True)


def on_task_saved(sender, instance, **kwargs) -> None:
    # The code may have changed: forget the bundle under the code that was read too.
    transaction.on_commit(lambda: task_bundle_forget(instance.code), robust=True)
    _forget_tasks([instance.pk])


def on_row_of_task_saved(sender, instance, **kwargs) -> None:
    """A config version, a round or a model: rows with a ``task_id``."""
    _forget_tasks([instance.task_id])


def on_round_model_saved(sender, instance, **kwargs) -> None:
    _forget_tasks(Task.objects.filter(rounds__pk=instance.round_id).values_list("pk", flat=True))


def on_owners_changed(sender, instance, pk_set=None, reverse=False, **kwargs) -> None:
    if reverse:  # a user's owned tasks changed: ``pk_set`` holds task ids
        _forget_tasks(pk_set or Task.objects.filter(owners=instance).values_list("pk", flat=True))
    else:
        _forget_tasks([instance.pk])


def on_model_rows_changed(sender, task_ids, **kwargs) -> None:
    _forget_tasks(task_ids)


def on_context_saved(sender, instance, **kwargs) -> None:
    transaction.on_commit(lambda: contexts_forget(instance.pk), robust=True)
