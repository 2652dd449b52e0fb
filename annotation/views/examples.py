"""One example's page, its status part (htmx polls it while the model answers), and the
writer's actions on it: retry, verdict, metadata, retract, flag and its undo."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.display import context_items
from annotation.forms import MetadataForm
from annotation.live.queue import ensure_drain, job_timeout, live_job_id, wait_for_job
from annotation.models import ExampleStatus
from annotation.selectors.examples import example_get_for_actor
from annotation.selectors.tasks import bundle_for_actor
from annotation.services import examples as services
from annotation.services.guards import InvalidInput
from annotation.views import pages
from annotation.views.access import (
    annotation_view,
    poll_wait_seconds,
    slow_model_seconds,
    sync_wait_seconds,
)
from core.errors import NotFound, ServiceError


def _task_and_example(request, code: str, pk: int):
    task = bundle_for_actor(code, request.actor).task
    return task, example_get_for_actor(task, pk, request.actor)


@require_GET
@annotation_view
def example_detail(request, code: str, pk: int):
    task, example = _task_and_example(request, code, pk)
    return pages.example_page(request, task, example)


@require_GET
@annotation_view
def example_status(request, code: str, pk: int):
    task, example = _task_and_example(request, code, pk)
    if example.status == ExampleStatus.AWAITING_MODEL:
        ensure_drain(job_timeout(example.model))
        if wait_for_job(live_job_id(example.pk, example.model_attempts), poll_wait_seconds()):
            example = example_get_for_actor(task, pk, request.actor)
    return pages.status_part(request, task, example)


def _example_action(service_call):
    """A POST on one example: run ``service_call(request, task, example)``; answer htmx with
    the status part, else redirect to the example's page. A refusal is shown there."""

    @wraps(service_call)
    def view(request, code: str, pk: int):
        task, example = _task_and_example(request, code, pk)
        try:
            result = service_call(request, task, example)
        except (InvalidInput, NotFound):
            raise
        except ServiceError as error:
            messages.error(request, error.message)
            if request.headers.get("HX-Request"):
                example.refresh_from_db()
                return pages.status_part(request, task, example, extra={"error": error.message})
            return redirect("annotation:example", task.code, example.pk)
        if isinstance(result, HttpResponse):
            return result
        if request.headers.get("HX-Request"):
            return pages.status_part(request, task, result)
        return redirect("annotation:example", task.code, result.pk)

    return require_POST(annotation_view(view))


@_example_action
def example_verdict(request, task, example):
    value = request.POST.get("model_wrong")
    if value not in ("true", "false"):
        raise ServiceError("say whether the model was wrong", code="verdict.missing")
    return services.example_set_worker_verdict(example, request.actor, value == "true")


@_example_action
def example_metadata(request, task, example):
    config = example.config_version.parsed
    fields = config.create_metadata_fields(example.model_wrong)
    form = MetadataForm(request.POST, specs=fields, prefix="metadata")
    if form.is_valid():
        try:
            example = services.example_save_metadata(example, request.actor, form.config_values())
        except InvalidInput as error:
            form.add_issues(error.details.get("issues", []))
        else:
            if request.headers.get("HX-Request"):
                return pages.status_part(request, task, example, extra={"saved": True})
            messages.success(request, "Saved.")
            return example
    if request.headers.get("HX-Request"):
        return pages.status_part(request, task, example, metadata_form=form, status=400)
    page = pages.example_context(task, example, metadata_form=form)
    page["context_items"] = context_items(config, example.context.data if example.context else None)
    return render(request, "annotation/example.html", page, status=400)


@_example_action
def example_retract(request, task, example):
    return services.example_retract(example, request.actor)


@_example_action
def example_flag(request, task, example):
    reason = request.POST.get("reason", "")
    try:
        return services.example_flag(example, request.actor, reason)
    except ServiceError as error:
        if not request.headers.get("HX-Request"):
            raise
        # htmx swaps 2xx answers only: the refusal comes back in the part, the reason kept.
        extra = {"error": error.message, "flag_open": True, "flag_reason": reason}
        return pages.status_part(request, task, example, extra=extra)


@_example_action
def example_unflag(request, task, example):
    return services.example_unflag(example, request.actor)


@_example_action
def example_retry(request, task, example):
    example = services.example_request_model(
        example, request.actor, stale_after=slow_model_seconds()
    )
    if wait_for_job(live_job_id(example.pk, example.model_attempts), sync_wait_seconds()):
        example = example_get_for_actor(task, example.pk, request.actor)
    return example
