"""The validate page: the next example of the queue and the verdict form."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from annotation.actors import campaign_quota_reached, campaign_record_time
from annotation.forms import ValidateForm, time_spent_ms
from annotation.models import Campaign
from annotation.selectors.tasks import bundle_for_actor
from annotation.selectors.validation import example_for_validation, example_next_to_validate
from annotation.services.guards import InvalidInput
from annotation.services.validations import validation_submit
from annotation.views import pages
from annotation.views.access import (
    annotation_view,
    campaign_done_url,
    int_or_none,
    require_campaign_kind,
)
from tasks.errors import NotFound, ServiceError


@require_http_methods(["GET", "POST"])
@annotation_view
def validate(request, code: str):
    actor = request.actor
    task = bundle_for_actor(code, actor).task
    require_campaign_kind(actor, Campaign.Kind.VALIDATE)
    if actor.is_campaign and campaign_quota_reached(actor):
        return redirect(campaign_done_url(task))
    if request.method == "POST":
        return _submit(request, task)
    example = example_next_to_validate(task, actor)
    form = None
    if example is not None:
        form = ValidateForm(
            config=example.config_version.parsed, initial={"example_id": example.pk}
        )
    return pages.validate_page(request, task, example, form)


def _submit(request, task):
    actor = request.actor
    example = example_for_validation(task, int_or_none(request.POST.get("example_id")), actor)
    if example is None:
        messages.info(request, "That example was settled or is no longer available.")
        return redirect("annotation:validate", task.code)
    form = ValidateForm(request.POST, config=example.config_version.parsed)
    if not form.is_valid():
        return pages.validate_page(request, task, example, form, status=400)
    spent = time_spent_ms(form.cleaned_data.get("started_at"))
    try:
        validation_submit(
            example_id=example.pk,
            actor=actor,
            label=form.cleaned_data["label"],
            metadata=form.metadata_values(),
            time_spent_ms=spent,
            task=task,
        )
    except InvalidInput as error:
        form.add_issues(error.details.get("issues", []))
        return pages.validate_page(request, task, example, form, status=400)
    except NotFound:
        raise
    except ServiceError as error:
        messages.info(request, error.message)
        return redirect("annotation:validate", task.code)
    if actor.is_campaign:
        campaign_record_time(actor, spent or 0)
        if campaign_quota_reached(actor):
            return redirect(campaign_done_url(task))
    messages.success(request, "Thank you, your verdict is recorded.")
    return redirect("annotation:validate", task.code)
