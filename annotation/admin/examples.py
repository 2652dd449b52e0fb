"""Admin for examples and the task builder's form preview.

The preview (``admin:tasks_task_form_preview``, ``/admin/tasks/task/<id>/preview/``) shows
the create and validate forms that a task's current config generates, for the task's owners.
The forms render in a frame (``.../preview/frame/``) with the site's own styles, which would
break the admin's layout if loaded into its pages. The code lives here, registered on the
task's admin through ``register_task_admin_page``, so that ``tasks`` never imports
``annotation``; the preview's first address, under examples, redirects to it.
"""

from __future__ import annotations

import random

from django.contrib import admin
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.clickjacking import xframe_options_sameorigin

from annotation.display import context_items, goal_text, output_items, preview_context
from annotation.forms import CreateForm, MetadataForm, ValidateForm
from annotation.models import Example
from core.admin import BOUNDED_JSON_FORMFIELDS, TaskAdminPage, register_task_admin_page
from tasks.config.types import FieldType, TaskConfig
from tasks.models import Task
from tasks.permissions import is_task_owner


def preview_output(config: TaskConfig) -> dict:
    """Return a plausible model answer for the preview (prob outputs as even bars)."""
    output: dict = {}
    for spec in config.output:
        if spec.type == FieldType.PROB:
            if spec.single_prob:
                output[spec.name] = 0.7
            else:
                referenced = config.field(spec.reference_name) if spec.reference_name else None
                labels = referenced.labels if referenced else ()
                output[spec.name] = {label: 1 / len(labels) for label in labels}
        elif spec.type in (FieldType.MULTICLASS, FieldType.MULTILABEL) and spec.labels:
            output[spec.name] = spec.labels[0]
        else:
            output[spec.name] = "an example answer"
    return output


def form_preview_context(task: Task) -> dict:
    """Everything the preview template needs, built from the task's current config."""
    config = task.config
    context = task.contexts.order_by("id").first()
    context_data = context.data if context is not None else preview_context(config)
    goal = config.goal_field
    goal_label = random.choice(goal.labels) if goal else ""  # noqa: S311
    groups = [
        ("when the model was fooled", True),
        ("when the model was not fooled", False),
        ("without a verdict", None),
    ]
    return {
        "task": task,
        "config": config,
        "context_items": context_items(config, context_data),
        "create_form": CreateForm(config=config, goal_label=goal_label),
        "goal_text": goal_text(config, goal_label),
        "outputs": output_items(config, preview_output(config)),
        "metadata_groups": [
            {
                "title": title,
                "form": MetadataForm(
                    specs=config.create_metadata_fields(model_wrong), prefix=f"m{index}"
                ),
            }
            for index, (title, model_wrong) in enumerate(groups)
        ],
        "validate_form": ValidateForm(config=config, initial={"example_id": 0}),
        "needs_context": False,
    }


@admin.register(Example)
class ExampleAdmin(admin.ModelAdmin):
    """Read-mostly list of examples; owners see their tasks' examples only."""

    formfield_overrides = BOUNDED_JSON_FORMFIELDS

    list_display = (
        "id",
        "task",
        "round",
        "status",
        "model_wrong",
        "validation_state",
        "flag_count",
        "retracted",
        "created_at",
    )
    list_filter = ("status", "validation_state", "retracted", "model_wrong")
    search_fields = ("id",)
    list_select_related = ("task", "round")
    raw_id_fields = ("context", "user", "campaign_worker", "model", "config_version", "round")
    readonly_fields = (
        "correct_count",
        "incorrect_count",
        "flagged_count",
        "validation_count",
        "flag_count",
        "validation_state",
        "settled_by_owner",
        "settled_at",
    )

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(task__owners=request.user).distinct()

    def _owns_any(self, request) -> bool:
        user = request.user
        return user.is_active and user.is_staff and (user.is_superuser or user.owned_tasks.exists())

    def has_module_permission(self, request):
        return self._owns_any(request)

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return self._owns_any(request)
        return is_task_owner(request.user, obj.task)

    def has_change_permission(self, request, obj=None):
        # Counters and states move through the services only.
        return False

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return bool(request.user.is_superuser)

    def get_urls(self):
        # The preview's first address: it now lives under the task.
        moved = path(
            "<int:task_id>/preview/",
            self.admin_site.admin_view(self.form_preview_moved_view),
            name="annotation_form_preview",
        )
        return [moved, *super().get_urls()]

    def form_preview_moved_view(self, request, task_id: int):
        return redirect(reverse("admin:tasks_task_form_preview", args=[task_id]), permanent=True)


def form_preview_view(model_admin, request, task: Task):
    """The admin page of the preview: the admin's chrome around the frame of the forms."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Form preview: {task.name}",
        "task": task,
        "opts": model_admin.model._meta,
        "original": task,
        "frame_url": reverse("admin:tasks_task_form_preview_frame", args=[task.pk]),
    }
    return TemplateResponse(request, "annotation/admin/form_preview.html", context)


@xframe_options_sameorigin
def form_preview_frame_view(model_admin, request, task: Task):
    """The forms themselves, a page of their own with the site's styles (framed above)."""
    if task.current_config_id is None:
        raise Http404("the task has no config yet")
    return TemplateResponse(
        request, "annotation/admin/form_preview_frame.html", form_preview_context(task)
    )


register_task_admin_page(
    TaskAdminPage(
        route="preview/", name="form_preview", view=form_preview_view, label="Preview forms"
    )
)
register_task_admin_page(
    TaskAdminPage(route="preview/frame/", name="form_preview_frame", view=form_preview_frame_view)
)
