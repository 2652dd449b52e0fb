"""The dataset pages: a task's datasets, uploads, a dataset's examples, generated perturbations."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views import View

from core.errors import NotFound, ServiceError
from leaderboards.forms import DatasetUploadForm, PerturbationForm
from leaderboards.selectors.datasets import (
    dataset_detail,
    dataset_get_visible,
    dataset_input_lines,
    datasets_for_task,
)
from leaderboards.services.dataset_uploads import dataset_upload
from leaderboards.services.datasets import dataset_generate_perturbation
from leaderboards.views.common import owned_task, task_or_404
from tasks.models import UploadJob
from tasks.permissions import can_manage_task


class DatasetListView(View):
    def get(self, request, code):
        task = task_or_404(code, request.user)
        context = {
            "task": task,
            "datasets": datasets_for_task(task, request.user),
            "is_owner": can_manage_task(request.user, task),
        }
        return TemplateResponse(request, "leaderboards/dataset_list.html", context)


class DatasetUploadView(LoginRequiredMixin, View):
    """The owners' upload form; every bad line of a refused file is listed."""

    def get(self, request, code):
        task = owned_task(code, request.user)
        return self.render(request, task, DatasetUploadForm(task=task), [])

    def post(self, request, code):
        task = owned_task(code, request.user)
        form = DatasetUploadForm(request.POST, request.FILES, task=task)
        if not form.is_valid():
            return self.render(request, task, form, [], status=400)
        upload = form.cleaned_data["file"]
        try:
            result = dataset_upload(task, upload, user=request.user, **form.import_arguments())
        except ServiceError as error:
            form.add_error(None, error.message)
            errors = error.details.get("errors", []) if isinstance(error.details, dict) else []
            return self.render(request, task, form, errors, status=error.status)
        if isinstance(result, UploadJob):
            messages.info(request, "The file is big: a job imports it; follow it here.")
            return redirect("tasks:upload", pk=result.pk)
        messages.success(request, f"Imported {result.row_count} examples into {result.name}.")
        return redirect("leaderboards:dataset_detail", code=task.code, slug=result.slug)

    def render(self, request, task, form, errors, status=200):
        config = task.config
        context = {
            "task": task,
            "form": form,
            "upload_errors": errors,
            "input_names": config.model_input_names if config else (),
            "gold_names": [field.name for field in config.gold_fields] if config else (),
        }
        return TemplateResponse(request, "leaderboards/dataset_upload.html", context, status=status)


class DatasetDetailView(View):
    def get(self, request, code, slug):
        task = task_or_404(code, request.user)
        try:
            detail = dataset_detail(task, slug, request.user, request.GET.get("page") or 1)
        except NotFound as error:
            raise Http404(error.message) from None
        context = {
            "task": task,
            "dataset": detail.dataset,
            "page": detail.page,
            "rows": detail.rows,
            "is_owner": detail.is_owner,
            "shows_gold": detail.shows_gold,
            "inputs_to_others": detail.inputs_to_others,
            "perturbations": detail.perturbations,
            "perturb_form": PerturbationForm() if detail.is_owner else None,
        }
        return TemplateResponse(request, "leaderboards/dataset_detail.html", context)


class DatasetInputsView(View):
    """A dataset's inputs as streamed JSON Lines, for whoever may read its examples (the
    same rule as the API's examples): what a predictions file answers, without the gold."""

    def get(self, request, code, slug):
        task = task_or_404(code, request.user)
        try:
            dataset = dataset_get_visible(task, slug, request.user)
        except NotFound as error:
            raise Http404(error.message) from None
        response = StreamingHttpResponse(
            dataset_input_lines(dataset), content_type="application/x-ndjson; charset=utf-8"
        )
        filename = f"{task.code}-{dataset.slug}-inputs.jsonl"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


class DatasetPerturbView(LoginRequiredMixin, View):
    """Generate (or regenerate) a perturbed copy of a dataset (owners)."""

    def post(self, request, code, slug):
        task = owned_task(code, request.user)
        try:
            dataset = dataset_get_visible(task, slug, request.user)
        except NotFound as error:
            raise Http404(error.message) from None
        form = PerturbationForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Choose a kind and a seed.")
            return redirect("leaderboards:dataset_detail", code=code, slug=slug)
        kind, seed = form.cleaned_data["kind"], form.cleaned_data["seed"]
        try:
            copy = dataset_generate_perturbation(dataset, kind, seed=seed, user=request.user)
        except ServiceError as error:
            messages.error(request, error.message)
            return redirect("leaderboards:dataset_detail", code=code, slug=slug)
        messages.success(request, f"Generated {copy.row_count} perturbed examples.")
        return redirect("leaderboards:dataset_detail", code=code, slug=copy.slug)
