"""The model page: its card, scores per dataset and runs, and for owners the example browser."""

from __future__ import annotations

from django.template.response import TemplateResponse
from django.views import View

from leaderboards.selectors.models import model_page
from leaderboards.selectors.runs import runs_for_model
from leaderboards.views.common import model_or_404
from models_hub.selectors import model_can_edit


class ModelResultsView(View):
    """The model page; the browser's dataset, comparison, filter and page come from the URL."""

    def get(self, request, pk: int):
        model = model_or_404(pk, request.user)
        page = model_page(
            model,
            request.user,
            dataset_slug=request.GET.get("dataset"),
            compare_model_id=request.GET.get("compare"),
            wrong_only=request.GET.get("wrong") == "1",
            page=request.GET.get("page", "1"),
        )
        context = {"model": model, "task": model.task, "results": page.results}
        context["browser"] = page.browser
        return TemplateResponse(request, "leaderboards/model_results.html", context)


class ModelRunsProgressView(View):
    """The runs of one model with live progress (a partial the model page can poll)."""

    def get(self, request, pk: int):
        model = model_or_404(pk, request.user)
        context = {
            "model": model,
            "runs": runs_for_model(model, request.user),
            "can_manage": model_can_edit(model, request.user),
        }
        return TemplateResponse(request, "leaderboards/run_list_partial.html", context)
