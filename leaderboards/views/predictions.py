"""The predictions file upload: score a model from its outputs on a dataset (its owners)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views import View

from core.errors import ServiceError
from leaderboards.forms import PredictionsUploadForm
from leaderboards.services.predictions import predictions_import
from leaderboards.views.common import editable_model


def missing_ids_message(details: dict) -> str:
    """The page's refusal of a file that misses examples: which ones, and the box to tick."""
    named = ", ".join(str(uid)[:60] for uid in details["missing_ids"])
    more = ", …" if details["missing_count"] > len(details["missing_ids"]) else ""
    return (
        f"The file is missing {details['missing_count']} of {details['total']} ids: "
        f"{named}{more}. Add them, or tick “Accept a partial file” to score it as it is: the "
        "missing examples then count as wrong and the score is marked partial."
    )


class PredictionsUploadView(LoginRequiredMixin, View):
    def get(self, request, pk):
        model = editable_model(pk, request.user)
        form = PredictionsUploadForm(task=model.task, user=request.user)
        return self.render(request, model, form, [])

    def post(self, request, pk):
        model = editable_model(pk, request.user)
        form = PredictionsUploadForm(
            request.POST, request.FILES, task=model.task, user=request.user
        )
        if not form.is_valid():
            return self.render(request, model, form, [], status=400)
        upload = form.cleaned_data["file"]
        dataset = form.cleaned_data["dataset"]
        try:
            run = predictions_import(
                model,
                dataset,
                upload.file,
                filename=upload.name,
                user=request.user,
                partial=form.cleaned_data["partial"],
            )
        except ServiceError as error:
            if "missing_ids" in error.details:
                # One problem, named in full, with the page's own way round it.
                form.add_error("partial", missing_ids_message(error.details))
                return self.render(request, model, form, [], status=400)
            form.add_error(None, error.message)
            return self.render(request, model, form, error.details.get("errors", []), status=400)
        messages.success(request, "The predictions were scored.")
        return redirect("leaderboards:run_detail", run_id=run.pk)

    def render(self, request, model, form, errors, status=200):
        config = model.task.config
        context = {
            "model": model,
            "form": form,
            "upload_errors": errors,
            "output_names": config.output_names if config else (),
        }
        template = "leaderboards/predictions_upload.html"
        return TemplateResponse(request, template, context, status=status)
