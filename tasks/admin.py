"""The admin task builder: tasks and their YAML, rounds, contexts and proposals.

Owners (staff users who own a task) see and edit only their own tasks; superusers see all.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from tasks import services
from tasks.accounts import site_settings_get
from tasks.errors import ServiceError
from tasks.forms import (
    ContextUploadForm,
    OpenRoundForm,
    ProposalDecisionForm,
    TaskAdminForm,
)
from tasks.models import (
    Context,
    ProposalStatus,
    Round,
    SiteSettings,
    Task,
    TaskConfigVersion,
    TaskProposal,
)
from tasks.permissions import is_task_owner


class OwnerScopedAdmin(admin.ModelAdmin):
    """Staff owners get full access to rows of their own tasks, nothing else."""

    task_lookup = "task"

    def owner_filter(self, request):
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

    def _task_of(self, obj):
        return obj if isinstance(obj, Task) else getattr(obj, "task", None)

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
        return is_task_owner(request.user, self._task_of(obj))

    def has_change_permission(self, request, obj=None):
        return self.has_view_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_add_permission(self, request):
        return request.user.is_superuser


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

    # --- builder actions ------------------------------------------------------------------
    def get_urls(self):
        own = [
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

    def upload_contexts_view(self, request, task_id):
        task = self._owned_task(request, task_id)
        errors = []
        form = ContextUploadForm(request.POST or None, request.FILES or None, task=task)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            chosen_round = form.cleaned_data["round"]
            try:
                count = services.contexts_import(
                    task,
                    upload.file,
                    filename=upload.name,
                    round_number=chosen_round.number if chosen_round else None,
                    tag=form.cleaned_data["tag"],
                )
            except ServiceError as error:
                errors = error.details.get("errors", [])
                messages.error(request, error.message)
            else:
                messages.success(request, f"Imported {count} contexts into {task.code}.")
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


@admin.register(TaskProposal)
class TaskProposalAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "proposer", "status", "created_at", "decided_by"]
    list_filter = ["status"]
    readonly_fields = [
        "proposer",
        "code",
        "name",
        "description",
        "config_yaml",
        "status",
        "reason",
        "decided_by",
        "decided_at",
        "task",
    ]
    actions = ["accept_selected"]
    change_form_template = "admin/tasks/taskproposal/change_form.html"

    def has_add_permission(self, request):
        return False

    def get_urls(self):
        own = [
            path(
                "<int:proposal_id>/decide/<str:decision>/",
                self.admin_site.admin_view(self.decide_view),
                name="tasks_taskproposal_decide",
            )
        ]
        return own + super().get_urls()

    @admin.action(description="Accept the selected proposals")
    def accept_selected(self, request, queryset):
        accepted = 0
        for proposal in queryset.filter(status=ProposalStatus.PENDING):
            try:
                services.proposal_accept(proposal, decided_by=request.user)
                accepted += 1
            except ServiceError as error:
                messages.error(request, f"{proposal.code}: {error.message}")
        if accepted:
            messages.success(request, f"Accepted {accepted} proposal(s).")

    def decide_view(self, request, proposal_id, decision):
        if not request.user.is_superuser or decision not in {"accept", "reject"}:
            raise PermissionDenied
        proposal = get_object_or_404(TaskProposal, pk=proposal_id)
        form = ProposalDecisionForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            reason = form.cleaned_data["reason"]
            try:
                if decision == "accept":
                    task = services.proposal_accept(
                        proposal, decided_by=request.user, reason=reason
                    )
                    messages.success(request, f"Accepted: task {task.code} created with round 1.")
                else:
                    services.proposal_reject(proposal, decided_by=request.user, reason=reason)
                    messages.success(request, f"Rejected proposal {proposal.code}.")
                return redirect(reverse("admin:tasks_taskproposal_changelist"))
            except ServiceError as error:
                messages.error(request, error.message)
        context = {
            **self.admin_site.each_context(request),
            "title": f"{decision.capitalize()} proposal {proposal.code}",
            "proposal": proposal,
            "decision": decision,
            "form": form,
            "opts": self.model._meta,
            "original": proposal,
        }
        return TemplateResponse(request, "admin/tasks/taskproposal/decide.html", context)


@admin.register(SiteSettings)
class SiteSettingsAdmin(admin.ModelAdmin):
    """The site's switches: one row, which superusers change and nobody adds or deletes."""

    fields = ("signup_open", "updated_at")
    readonly_fields = ("updated_at",)

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        """The list of one row is its change form."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        row = site_settings_get()
        return redirect(reverse("admin:tasks_sitesettings_change", args=[row.pk]))
