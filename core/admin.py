"""The base admin of every app: owner-scoped admin pages and pages under a task.

- ``OwnerScopedAdmin``: staff owners get full access to the rows of their own tasks, nothing
  else; superusers see all. Every app's admin of task-owned rows derives from it, naming the
  ORM path from its rows to the task in ``task_lookup``.
- ``register_task_admin_page``: apps above ``tasks`` add pages under a task
  (``/admin/tasks/task/<id>/<route>``): ``tasks`` imports no other app, so the annotation app
  registers its form preview here when its admin module is loaded.

``core`` imports no app, so ownership is read through the ORM by name: a row is its user's when
the row reached through ``task_lookup`` has the user among its ``owners`` (the relation that
``tasks.permissions.is_task_owner`` reads). Django's admin autodiscovery imports this module
too (``core`` is an installed app); it registers nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import admin
from django.db import models
from django.http import HttpResponse

from core.forms import BoundedJSONField


@dataclass(frozen=True)
class TaskAdminPage:
    """A page under a task in the admin, added by an app that ``tasks`` may not import.

    ``view(model_admin, request, task)`` gets a task that the user owns (checked before),
    ``route`` is the URL under ``/admin/tasks/task/<id>/`` and names the URL
    ``admin:tasks_task_<name>``; a ``label`` links the page from the task's change page.
    """

    route: str
    name: str
    view: Callable[..., HttpResponse]
    label: str = ""


TASK_ADMIN_PAGES: dict[str, TaskAdminPage] = {}


def register_task_admin_page(page: TaskAdminPage) -> None:
    """Add ``page`` under every task of the admin (once per name; call before URLs load)."""
    TASK_ADMIN_PAGES[page.name] = page


# JSON typed into an admin form is nested at most MAX_JSON_DEPTH levels (deeper: a form error).
BOUNDED_JSON_FORMFIELDS = {models.JSONField: {"form_class": BoundedJSONField}}


class OwnerScopedAdmin(admin.ModelAdmin):
    """Staff owners get full access to rows of their own tasks, nothing else."""

    task_lookup = "task"
    formfield_overrides = BOUNDED_JSON_FORMFIELDS

    def owner_filter(self, request):
        """The filter that keeps the rows of the tasks ``request.user`` owns."""
        return (
            {f"{self.task_lookup}__owners": request.user}
            if self.task_lookup
            else {"owners": request.user}
        )

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(**self.owner_filter(request)).distinct()

    def _owns(self, request, obj) -> bool:
        """Whether ``request.user`` owns the task of ``obj`` (superusers own every task)."""
        if request.user.is_superuser:
            return True
        rows = self.model._default_manager.filter(pk=obj.pk, **self.owner_filter(request))
        return rows.exists()

    def _owns_any(self, request) -> bool:
        return (
            request.user.is_active
            and request.user.is_staff
            and (request.user.is_superuser or request.user.owned_tasks.exists())
        )

    def has_module_permission(self, request):
        return self._owns_any(request)

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return self._owns_any(request)
        return self._owns(request, obj)

    def has_change_permission(self, request, obj=None):
        return self.has_view_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_add_permission(self, request):
        return request.user.is_superuser
