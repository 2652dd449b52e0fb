"""Pages of datasets, evaluation runs and predictions files (thin: services and selectors)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views import View

from leaderboards import selectors_runs, services
from leaderboards.forms_datasets import DatasetUploadForm, PerturbationForm, PredictionsUploadForm
from leaderboards.models import AccessType, Dataset
from models_hub.selectors import model_can_edit, model_get_visible
from tasks import selectors as task_selectors
from tasks.errors import NotFound, ServiceError
from tasks.permissions import can_manage_task


def _task_or_404(code: str, user):
    try:
        return task_selectors.task_get_visible(code, user)
    except NotFound as error:
        raise Http404(error.message) from None


def _owned_task(code: str, user):
    task = _task_or_404(code, user)
    if not can_manage_task(user, task):
        raise DjangoPermissionDenied("only the task's owners can do this")
    return task


class DatasetListView(View):
    def get(self, request, code):
        task = _task_or_404(code, request.user)
        return TemplateResponse(
            request,
            "leaderboards/dataset_list.html",
            {
                "task": task,
                "datasets": selectors_runs.datasets_for_task(task, request.user),
                "is_owner": can_manage_task(request.user, task),
            },
        )


class DatasetUploadView(LoginRequiredMixin, View):
    template_name = "leaderboards/dataset_upload.html"

    def get(self, request, code):
        task = _owned_task(code, request.user)
        return self.render(request, task, DatasetUploadForm(task=task), [])

    def post(self, request, code):
        task = _owned_task(code, request.user)
        form = DatasetUploadForm(request.POST, request.FILES, task=task)
        errors: list[dict] = []
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                dataset = services.dataset_import(
                    task,
                    upload.file,
                    filename=upload.name,
                    user=request.user,
                    **form.import_arguments(),
                )
            except ServiceError as error:
                errors = error.details.get("errors", [])
                form.add_error(None, error.message)
            else:
                messages.success(
                    request, f"Imported {dataset.row_count} examples into {dataset.name}."
                )
                return redirect("leaderboards:dataset_detail", code=task.code, slug=dataset.slug)
        return self.render(request, task, form, errors, status=400)

    def render(self, request, task, form, errors, status=200):
        config = task.config
        return TemplateResponse(
            request,
            self.template_name,
            {
                "task": task,
                "form": form,
                "upload_errors": errors,
                "input_names": config.model_input_names if config else (),
                "gold_names": [f.name for f in config.gold_fields] if config else (),
            },
            status=status,
        )


class DatasetDetailView(View):
    def get(self, request, code, slug):
        task = _task_or_404(code, request.user)
        try:
            dataset = selectors_runs.dataset_get_visible(task, slug, request.user)
        except NotFound as error:
            raise Http404(error.message) from None
        page, rows = selectors_runs.dataset_examples_page(
            dataset, request.user, request.GET.get("page") or 1
        )
        is_owner = can_manage_task(request.user, task)
        return TemplateResponse(
            request,
            "leaderboards/dataset_detail.html",
            {
                "task": task,
                "dataset": dataset,
                "page": page,
                "rows": rows,
                "is_owner": is_owner,
                "perturbations": list(dataset.perturbations.all()) if is_owner else [],
                "perturb_form": PerturbationForm() if is_owner else None,
            },
        )


class DatasetPerturbView(LoginRequiredMixin, View):
    def post(self, request, code, slug):
        task = _owned_task(code, request.user)
        dataset = Dataset.objects.filter(task=task, slug=slug).first()
        if dataset is None:
            raise Http404("no such dataset")
        form = PerturbationForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Choose a kind and a seed.")
            return redirect("leaderboards:dataset_detail", code=code, slug=slug)
        try:
            copy = services.dataset_generate_perturbation(
                dataset,
                form.cleaned_data["kind"],
                seed=form.cleaned_data["seed"],
                user=request.user,
            )
        except ServiceError as error:
            messages.error(request, error.message)
            return redirect("leaderboards:dataset_detail", code=code, slug=slug)
        messages.success(request, f"Generated {copy.row_count} perturbed examples.")
        return redirect("leaderboards:dataset_detail", code=code, slug=copy.slug)


def _visible_run(run_id, user):
    try:
        return selectors_runs.run_get_visible(run_id, user)
    except NotFound as error:
        raise Http404(error.message) from None


def _run_context(run, user):
    can_manage = model_can_edit(run.model, user)
    show_score = can_manage or run.dataset.access_type != AccessType.HIDDEN
    score = run.model.scores.filter(dataset_id=run.dataset.perturbation_of_id or run.dataset_id)
    return {
        "run": run,
        "progress": selectors_runs.run_progress(run),
        "can_manage": can_manage,
        "score": score.first() if show_score else None,
    }


class RunDetailView(View):
    def get(self, request, run_id):
        run = _visible_run(run_id, request.user)
        return TemplateResponse(
            request, "leaderboards/run_detail.html", _run_context(run, request.user)
        )


class RunProgressView(View):
    """The htmx-polled partial: progress bar, done/total, rate, ETA, state, Retry."""

    def get(self, request, run_id):
        run = _visible_run(run_id, request.user)
        return TemplateResponse(
            request, "leaderboards/run_progress.html", _run_context(run, request.user)
        )


class RunRetryView(LoginRequiredMixin, View):
    def post(self, request, run_id):
        run = _visible_run(run_id, request.user)
        try:
            services.evaluation_run_retry(run, user=request.user)
        except ServiceError as error:
            if error.status == 403:
                raise DjangoPermissionDenied(error.message) from None
            messages.error(request, error.message)
        else:
            messages.success(request, "The run was queued again; stored predictions are kept.")
        if request.headers.get("HX-Request"):
            run.refresh_from_db()
            return TemplateResponse(
                request, "leaderboards/run_progress.html", _run_context(run, request.user)
            )
        return redirect("leaderboards:run_detail", run_id=run.pk)


class ModelRunsProgressView(View):
    """The runs of one model with live progress (a partial the model page can poll)."""

    def get(self, request, pk):
        try:
            model = model_get_visible(pk, request.user)
        except NotFound as error:
            raise Http404(error.message) from None
        return TemplateResponse(
            request,
            "leaderboards/run_list_partial.html",
            {"model": model, "runs": selectors_runs.runs_for_model(model, request.user)},
        )


class PredictionsUploadView(LoginRequiredMixin, View):
    template_name = "leaderboards/predictions_upload.html"

    def _model(self, request, pk):
        try:
            model = model_get_visible(pk, request.user)
        except NotFound as error:
            raise Http404(error.message) from None
        if not model_can_edit(model, request.user):
            raise DjangoPermissionDenied("only the model's owner can upload its predictions")
        return model

    def _form(self, request, model, data=None, files=None):
        form = PredictionsUploadForm(data, files, task=model.task)
        if not can_manage_task(request.user, model.task):
            form.fields["dataset"].queryset = form.fields["dataset"].queryset.exclude(
                access_type=AccessType.HIDDEN
            )
        return form

    def get(self, request, pk):
        model = self._model(request, pk)
        return self.render(request, model, self._form(request, model), [])

    def post(self, request, pk):
        model = self._model(request, pk)
        form = self._form(request, model, request.POST, request.FILES)
        errors: list[dict] = []
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                run = services.predictions_import(
                    model,
                    form.cleaned_data["dataset"],
                    upload.file,
                    filename=upload.name,
                    user=request.user,
                )
            except ServiceError as error:
                errors = error.details.get("errors", [])
                form.add_error(None, error.message)
            else:
                messages.success(request, "The predictions were scored.")
                return redirect(reverse("leaderboards:run_detail", args=[run.pk]))
        return self.render(request, model, form, errors, status=400)

    def render(self, request, model, form, errors, status=200):
        config = model.task.config
        return TemplateResponse(
            request,
            self.template_name,
            {
                "model": model,
                "form": form,
                "upload_errors": errors,
                "output_names": config.output_names if config else (),
            },
            status=status,
        )
