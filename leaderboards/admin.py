"""Admin of datasets (upload, perturbations) and evaluation runs (retry).

Owners (staff users who own a task) see only their tasks' rows; superusers see all.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from core.admin import OwnerScopedAdmin
from core.errors import ServiceError
from leaderboards.forms import DatasetUploadForm
from leaderboards.models import Dataset, EvaluationRun, RunStatus
from leaderboards.services.dataset_uploads import dataset_upload
from leaderboards.services.datasets import dataset_copies_follow, dataset_generate_perturbation
from leaderboards.services.runs import evaluation_run_retry, evaluation_runs_for_dataset
from tasks.models import Task, UploadJob
from tasks.permissions import is_task_owner


@admin.register(Dataset)
class DatasetAdmin(OwnerScopedAdmin):
    list_display = [
        "name",
        "task",
        "slug",
        "access_type",
        "round",
        "row_count",
        "perturbation_kind",
    ]
    list_filter = ["task", "access_type", "perturbation_kind"]
    search_fields = ["name", "slug"]
    fields = [
        "name",
        "access_type",
        "inputs_to_others",
        "round",
        "description",
        "source_url",
        "weight",
    ]
    actions = ["generate_robustness", "generate_fairness", "evaluate_again"]
    # As the upload form does: a source URL typed without a scheme is https.
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        # Copies are hidden when their original is, and send their inputs where it does.
        if obj.perturbation_of_id is None:
            dataset_copies_follow(obj)

    def get_urls(self):
        own = [
            path(
                "upload/<int:task_id>/",
                self.admin_site.admin_view(self.upload_view),
                name="leaderboards_dataset_upload",
            ),
        ]
        return own + super().get_urls()

    def upload_view(self, request, task_id):
        task = get_object_or_404(Task.objects.select_related("current_config"), pk=task_id)
        if not is_task_owner(request.user, task):
            raise PermissionDenied
        errors = []
        form = DatasetUploadForm(request.POST or None, request.FILES or None, task=task)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                result = dataset_upload(task, upload, user=request.user, **form.import_arguments())
            except ServiceError as error:
                errors = error.details.get("errors", []) if isinstance(error.details, dict) else []
                messages.error(request, error.message)
            else:
                if isinstance(result, UploadJob):
                    messages.info(request, "The file is big: a job imports it; follow it here.")
                    return redirect(reverse("tasks:upload", args=[result.pk]))
                messages.success(request, f"Imported {result.row_count} examples.")
                return redirect(reverse("admin:leaderboards_dataset_change", args=[result.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Upload a dataset: {task.name}",
            "task": task,
            "form": form,
            "upload_errors": errors,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/leaderboards/dataset/upload.html", context)

    def _generate(self, request, queryset, kind):
        for dataset in queryset.filter(perturbation_of__isnull=True):
            try:
                copy = dataset_generate_perturbation(dataset, kind, user=request.user)
            except ServiceError as error:
                messages.error(request, f"{dataset}: {error.message}")
            else:
                browse = reverse("leaderboards:dataset_detail", args=[copy.task.code, copy.slug])
                messages.success(
                    request, f"{copy.name}: {copy.row_count} examples; browse them at {browse}"
                )

    @admin.action(description="Generate robustness perturbations")
    def generate_robustness(self, request, queryset):
        self._generate(request, queryset, "robustness")

    @admin.action(description="Generate fairness perturbations")
    def generate_fairness(self, request, queryset):
        self._generate(request, queryset, "fairness")

    @admin.action(description="Evaluate every model again")
    def evaluate_again(self, request, queryset):
        count = 0
        for dataset in queryset:
            count += len(evaluation_runs_for_dataset(dataset, trigger="rerun"))
        messages.success(request, f"Created {count} runs.")


@admin.register(EvaluationRun)
class EvaluationRunAdmin(OwnerScopedAdmin):
    task_lookup = "dataset__task"
    list_display = ["id", "model", "dataset", "status", "done", "total", "trigger", "created_at"]
    list_filter = ["status", "trigger"]
    readonly_fields = [field.name for field in EvaluationRun._meta.fields if field.name != "id"]
    actions = ["retry_failed"]

    @admin.action(description="Retry the failed runs (stored predictions are kept)")
    def retry_failed(self, request, queryset):
        retried = 0
        for run in queryset.filter(status=RunStatus.FAILED):
            try:
                evaluation_run_retry(run, user=request.user)
                retried += 1
            except ServiceError as error:
                messages.error(request, f"run {run.pk}: {error.message}")
        messages.success(request, f"Retried {retried} runs.")
