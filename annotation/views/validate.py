"""The validate page: the next example of the queue and the verdict form."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from annotation.campaigns.services import campaign_quota_reached, campaign_record_time
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
from core.errors import NotFound, ServiceError
from tasks.models import TaskConfigVersion


@require_http_methods(["GET", "POST"])
@annotation_view
def validate(request, code: str):
    actor = request.actor
    bundle = bundle_for_actor(code, actor)
    task = bundle.task
    require_campaign_kind(actor, Campaign.Kind.VALIDATE)
    if actor.is_campaign and campaign_quota_reached(actor):
        return redirect(campaign_done_url(task))
    if request.method == "POST":
        return _submit(request, bundle)
    example = example_next_to_validate(task, actor)
    form = None
    if example is not None:
        form = ValidateForm(
            config=example.config_version.parsed, initial={"example_id": example.pk}
        )
    return pages.validate_page(request, task, example, form)


def _submit(request, bundle):
    """Record the verdict without reading the example first: the form is checked against
    the config version it names, the service checks the example under its lock."""
    task, actor = bundle.task, request.actor
    example_id = int_or_none(request.POST.get("example_id"))
    config = _config_of(bundle, request.POST.get("config_version"))
    form = ValidateForm(request.POST, config=config) if config is not None else None
    if example_id is None or form is None or not form.is_valid():
        return _refused(request, task, example_id)
    spent = time_spent_ms(form.cleaned_data.get("started_at"))
    try:
        validation_submit(
            example_id=example_id,
            actor=actor,
            label=form.cleaned_data["label"],
            metadata=form.metadata_values(),
            time_spent_ms=spent,
            task=task,
        )
    except InvalidInput as error:
        return _refused(request, task, example_id, issues=error.details.get("issues", []))
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


def _config_of(bundle, version_id):
    """The config of version ``version_id`` of the bundle's task (None for none)."""
    version_id = int_or_none(version_id)
    if version_id is None or version_id == bundle.version.pk:
        return bundle.config
    version = TaskConfigVersion.objects.filter(task=bundle.task, pk=version_id).first()
    return version.parsed if version is not None else None


def _refused(request, task, example_id, issues=()):
    """The page again, with the errors of a verdict that does not fit the example's config
    (400); or back to the queue when the example is no longer in it."""
    example = example_for_validation(task, example_id, request.actor)
    if example is None:
        messages.info(request, "That example was settled or is no longer available.")
        return redirect("annotation:validate", task.code)
    form = ValidateForm(request.POST, config=example.config_version.parsed)
    form.is_valid()
    form.add_issues(issues)
    return pages.validate_page(request, task, example, form, status=400)
