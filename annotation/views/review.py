"""The owners' review queue: flagged and disputed examples, and the owner's final verdict."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.display import context_items, input_items, output_items
from annotation.forms import OwnerVerdictForm, ReviewFilterForm
from annotation.models import Example
from annotation.selectors.examples import review_queue
from annotation.selectors.tasks import task_for_reviewer
from annotation.services.guards import InvalidInput
from annotation.services.validations import owner_review_submit
from annotation.views.access import annotation_view
from core.errors import NotFound, PermissionDenied


def _reviewer(request):
    if request.actor.user is None:
        raise PermissionDenied("only the task's owners review examples")
    return request.actor.user


def _row(example) -> dict:
    config = example.config_version.parsed
    return {
        "example": example,
        "inputs": input_items(config, example.input),
        "outputs": output_items(config, example.model_output),
        "context_items": context_items(config, example.context.data if example.context else None),
    }


@require_GET
@annotation_view
def review(request, code: str):
    task = task_for_reviewer(code, _reviewer(request))
    filters = ReviewFilterForm(request.GET or None)
    options = {"min_flags": 0, "disagreement": False, "include_settled": False}
    if filters.is_bound and filters.is_valid():
        options = {
            name: filters.cleaned_data.get(name) or default for name, default in options.items()
        }
    rows = [_row(example) for example in review_queue(task, **options)]
    return render(
        request,
        "annotation/review.html",
        {"task": task, "filters": filters, "rows": rows, "verdict_form": OwnerVerdictForm()},
    )


@require_POST
@annotation_view
def review_submit(request, code: str, pk: int):
    user = _reviewer(request)
    task = task_for_reviewer(code, user)
    form = OwnerVerdictForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a verdict.")
    elif not Example.objects.filter(task=task, pk=pk).exists():
        raise NotFound("no such example")
    else:
        try:
            owner_review_submit(example_id=pk, user=user, label=form.cleaned_data["label"])
        except InvalidInput as error:
            issues = error.details.get("issues", [])
            messages.error(request, "; ".join(issue.message for issue in issues)[:500])
        else:
            messages.success(request, f"Example {pk} is settled as {form.cleaned_data['label']}.")
    back = reverse("annotation:review", args=[task.code])
    query = request.POST.get("return_query", "")
    return redirect(f"{back}?{query}" if query and "\n" not in query else back)
