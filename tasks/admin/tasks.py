"""The admin task builder: tasks and their YAML, rounds and contexts.

Owners (staff users who own a task) see and edit only their own tasks; superusers see all
(``core.admin.OwnerScopedAdmin``). Pages that apps above ``tasks`` add under a task
(``core.admin.register_task_admin_page``) are routed here.
"""

from __future__ import annotations

import json
from functools import partial

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from core.admin import TASK_ADMIN_PAGES, OwnerScopedAdmin, TaskAdminPage
from core.errors import ServiceError
from tasks import services
from tasks.config import TaskConfigError, parse_task_config
from tasks.config.located_yaml import MAX_TEXT_LENGTH
from tasks.forms import (
    ContextUploadForm,
    OpenRoundForm,
    TaskAdminForm,
    config_check_context,
)
from tasks.models import (
    Context,
    Round,
    Task,
    TaskConfigVersion,
    UploadJob,
)
from tasks.permissions import is_task_owner

# The live check reads the YAML from the request body. The parser refuses texts over 200,000
# characters with a clear code; a body far beyond that (4 bytes a character at most in UTF-8)
# is refused before it is read.
CONFIG_CHECK_MAX_BYTES = 1_000_000


def upload_examples(config) -> dict[str, str]:
    """Return one flat and one nested JSON context line for ``config``, for the upload page."""
    fields = {spec.name: "…" for spec in (config.context if config else ())} or {"field": "…"}
    return {
        "flat_example": json.dumps({**fields, "tag": "news"}, ensure_ascii=False),
        "nested_example": json.dumps({"context": fields, "tag": "news"}, ensure_ascii=False),
    }


def request_body_size(request: HttpRequest) -> int:
    """Return the declared size of the request body (0 when missing or malformed)."""
    try:
        return max(0, int(request.headers.get("Content-Length") or 0))
    except ValueError:
        return 0


class RoundInline(admin.TabularInline):
    model = Round
    extra = 0
    fields = ["number", "description", "is_open", "created_at"]
    readonly_fields = ["number", "created_at"]

    def has_add_permission(self, request, obj=None):
        return False  # Rounds are opened with the "Open a new round" button.

    def has_change_permission(self, request, obj=None):
        return obj is not None and is_task_owner(request.user, obj)

    def has_view_permission(self, request, obj=None):
        return obj is None or is_task_owner(request.user, obj)

    def has_delete_permission(self, request, obj=None):
        return False


class ConfigVersionInline(admin.TabularInline):
    model = TaskConfigVersion
    extra = 0
    fields = ["version", "created_by", "created_at"]
    readonly_fields = fields
    can_delete = False
    verbose_name_plural = "Config history"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        return obj is None or is_task_owner(request.user, obj)


@admin.register(Task)
class TaskAdmin(OwnerScopedAdmin):
    form = TaskAdminForm
    task_lookup = ""
    list_display = ["code", "name", "active", "hidden", "config_version", "round_count"]
    list_filter = ["active", "hidden"]
    search_fields = ["code", "name"]
    filter_horizontal = ["owners"]
    inlines = [RoundInline, ConfigVersionInline]
    change_form_template = "admin/tasks/task/change_form.html"
    fieldsets = [
        (None, {"fields": ["code", "name", "description", "instructions", "owners"]}),
        ("Task config", {"fields": ["config_yaml"]}),
        (
            "Settings",
            {
                "fields": [
                    "active",
                    "hidden",
                    "accepts_models",
                    "num_matching_validations",
                    "validate_non_fooling",
                    "context_sampling",
                    "context_sampling_tag",
                ]
            },
        ),
    ]

    def get_queryset(self, request):
        queryset = super().get_queryset(request).select_related("current_config")
        return queryset.prefetch_related("rounds")

    def has_add_permission(self, request):
        return request.user.is_superuser or request.user.has_perm("tasks.add_task")

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and not request.user.is_superuser:
            return ["code", "owners"]
        return []

    @admin.display(description="config")
    def config_version(self, obj):
        return f"v{obj.current_config.version}" if obj.current_config_id else "—"

    @admin.display(description="rounds")
    def round_count(self, obj):
        return len(obj.rounds.all())

    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            services.task_update_config(obj, form.cleaned_data["config_yaml"], user=request.user)
            if not obj.rounds.exists():
                services.round_open(obj)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if not change and not request.user.is_superuser:
            form.instance.owners.add(request.user)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {
            **(extra_context or {}),
            "task_pages": [
                (page.label, reverse(f"admin:tasks_task_{page.name}", args=[object_id]))
                for page in TASK_ADMIN_PAGES.values()
                if page.label and str(object_id).isdigit()
            ],
        }
        return super().change_view(request, object_id, form_url, extra_context)

    # --- builder actions ------------------------------------------------------------------
    def get_urls(self):
        own = [
            path(
                "config/check/",
                self.admin_site.admin_view(require_POST(self.config_check_view)),
                name="tasks_task_config_check",
            ),
            *(
                path(
                    f"<int:task_id>/{page.route}",
                    self.admin_site.admin_view(partial(self.task_page_view, page=page)),
                    name=f"tasks_task_{page.name}",
                )
                for page in TASK_ADMIN_PAGES.values()
            ),
            path(
                "<int:task_id>/upload-contexts/",
                self.admin_site.admin_view(self.upload_contexts_view),
                name="tasks_task_upload_contexts",
            ),
            path(
                "<int:task_id>/open-round/",
                self.admin_site.admin_view(self.open_round_view),
                name="tasks_task_open_round",
            ),
        ]
        return own + super().get_urls()

    def _owned_task(self, request, task_id):
        task = get_object_or_404(Task.objects.select_related("current_config"), pk=task_id)
        if not is_task_owner(request.user, task):
            raise PermissionDenied
        return task

    def task_page_view(self, request, task_id, *, page: TaskAdminPage):
        return page.view(self, request, self._owned_task(request, task_id))

    def can_edit_configs(self, request) -> bool:
        """Return True for the users who may open a config editor (adders and owners)."""
        return self._owns_any(request) or self.has_add_permission(request)

    def config_check_view(self, request: HttpRequest):
        """Check the YAML of the request body with the one parser; answer a fragment.

        The editor posts the raw text (``Content-Type: application/yaml``) as it is typed.
        A check that finds problems is still a 200: the fragment lists them with their
        codes and lines (``data-error-lines`` feeds the gutter's markers).
        """
        if not self.can_edit_configs(request):
            raise PermissionDenied
        size = request_body_size(request)
        if size > CONFIG_CHECK_MAX_BYTES:
            return self._config_check_response(
                request,
                refused=f"This config is {size:,} bytes: too large to check as you type "
                f"(the limit is {CONFIG_CHECK_MAX_BYTES:,} bytes; a config may have "
                f"{MAX_TEXT_LENGTH:,} characters at most).",
                status=413,
            )
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError:
            return self._config_check_response(
                request, refused="The config must be UTF-8 text.", status=400
            )
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        try:
            config = parse_task_config(text)
        except TaskConfigError as error:
            return self._config_check_response(request, issues=error.issues)
        return self._config_check_response(request, config=config)

    def _config_check_response(self, request, *, issues=(), config=None, refused="", status=200):
        check = {**config_check_context(issues, config), "refused": refused, "live": True}
        return TemplateResponse(
            request, "tasks/widgets/config_check.html", {"check": check}, status=status
        )

    def upload_contexts_view(self, request, task_id):
        task = self._owned_task(request, task_id)
        errors = []
        form = ContextUploadForm(request.POST or None, request.FILES or None, task=task)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            chosen_round = form.cleaned_data["round"]
            try:
                result = services.contexts_upload(
                    task,
                    upload,
                    user=request.user,
                    round_number=chosen_round.number if chosen_round else None,
                    tag=form.cleaned_data["tag"],
                )
            except ServiceError as error:
                errors = error.details.get("errors", []) if isinstance(error.details, dict) else []
                messages.error(request, error.message)
            else:
                if isinstance(result, UploadJob):
                    messages.info(request, "The file is big: a job imports it; follow it here.")
                    return redirect(reverse("tasks:upload", args=[result.pk]))
                messages.success(request, f"Imported {result} contexts into {task.code}.")
                return redirect(reverse("admin:tasks_task_change", args=[task.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Upload contexts: {task.name}",
            "task": task,
            "form": form,
            "upload_errors": errors,
            "opts": self.model._meta,
            "original": task,
            "context_fields": task.config.context if task.config else (),
            **upload_examples(task.config),
        }
        return TemplateResponse(request, "admin/tasks/task/upload_contexts.html", context)

    def open_round_view(self, request, task_id):
        task = self._owned_task(request, task_id)
        form = OpenRoundForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            new_round = services.round_open(
                task,
                description=form.cleaned_data["description"],
                close_previous=form.cleaned_data["close_previous"],
                carry_over=form.cleaned_data["carry_over"],
            )
            messages.success(request, f"Opened round {new_round.number} of {task.code}.")
            return redirect(reverse("admin:tasks_task_change", args=[task.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Open a new round: {task.name}",
            "task": task,
            "form": form,
            "opts": self.model._meta,
            "original": task,
        }
        return TemplateResponse(request, "admin/tasks/task/open_round.html", context)


@admin.register(Context)
class ContextAdmin(OwnerScopedAdmin):
    list_display = ["id", "task", "round", "tag", "times_served", "example_count", "fooled_count"]
    list_filter = ["task", "tag"]
    search_fields = ["tag"]
    readonly_fields = [
        "times_served",
        "example_count",
        "fooled_count",
        "validated_correct_count",
        "validated_incorrect_count",
        "config_version",
    ]
    list_select_related = ["task", "round"]
    raw_id_fields = ["round"]

    def has_add_permission(self, request):
        return False  # Contexts come in through the checked upload.


@admin.register(Round)
class RoundAdmin(OwnerScopedAdmin):
    list_display = ["task", "number", "is_open", "created_at"]
    list_filter = ["is_open", "task"]
    readonly_fields = ["task", "number"]
    list_select_related = ["task"]
