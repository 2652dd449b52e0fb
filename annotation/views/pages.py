"""What the annotation templates show: the create form, one example's page and status
part, and the validate page. Plain dictionaries built from the rows the views read."""

from __future__ import annotations

import random
from dataclasses import dataclass

from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from annotation.blank_forms import blank_create_html, blank_metadata_html, blank_validate_html
from annotation.chat.selectors import example_transcript
from annotation.display import context_items, goal_text, input_items, output_items
from annotation.forms import CreateForm, MetadataForm
from annotation.models import ExampleStatus, ValidationState
from annotation.selectors.progress import validator_progress, worker_progress
from annotation.selectors.tasks import round_loop_state
from annotation.services.examples import MAX_FLAG_REASON
from annotation.views.access import campaign_done_url, slow_model_seconds

PREFS_KEY = "annotation_prefs"
LAST_KEY = "annotation_last"


# -- the worker's preferences and retained input, in the session ----------
def prefs(request, task) -> dict:
    return request.session.get(PREFS_KEY, {}).get(task.code, {})


def set_pref(request, task, **values) -> None:
    all_prefs = dict(request.session.get(PREFS_KEY, {}))
    current = dict(all_prefs.get(task.code, {}))
    if all(current.get(key) == value for key, value in values.items()):
        return
    current.update(values)
    all_prefs[task.code] = current
    request.session[PREFS_KEY] = all_prefs


def remember_input(request, task, context_id, data, goal_label) -> None:
    last = dict(request.session.get(LAST_KEY, {}))
    last[task.code] = {"context_id": context_id, "input": data, "goal_label": goal_label}
    request.session[LAST_KEY] = last


def forget_input(request, task) -> None:
    last = request.session.get(LAST_KEY, {})
    if task.code in last:
        last = dict(last)
        del last[task.code]
        request.session[LAST_KEY] = last


def last_input(request, task) -> dict | None:
    return request.session.get(LAST_KEY, {}).get(task.code)


# -- the create form ----------
@dataclass(frozen=True)
class BlankForm:
    """A new example's form with nothing filled in: its HTML is laid out once per config
    version, goal and retain switch (``blank_create_html``)."""

    retain: bool


def new_form(request, task, config, context, *, retained: dict | None = None):
    """(form, goal label) of a new example on ``context``: a ``BlankForm``, or a form with the
    retained input and goal when the worker keeps their input (``retained``)."""
    initial: dict = dict((retained or {}).get("input") or {})
    goal_label = (retained or {}).get("goal_label", "")
    goal = config.goal_field
    if goal is not None and goal_label not in goal.labels:
        goal_label = random.choice(goal.labels)  # noqa: S311
    retain = bool(prefs(request, task).get("retain", False))
    if not any(initial.get(spec.name) for spec in config.input):
        return BlankForm(retain=retain), goal_label
    initial.update({"context_id": context.pk if context else None, "retain_input": retain})
    return CreateForm(config=config, goal_label=goal_label, initial=initial), goal_label


def form_part(task, config, context, form, goal_label: str) -> dict:
    """What ``_create_form.html`` shows: the goal and the create form."""
    blank = isinstance(form, BlankForm)
    part = {
        "task": task,
        "config": config,
        "form": None if blank else form,
        "goal_label": goal_label,
        "goal_text": goal_text(config, goal_label),
        "needs_context": bool(config.context),
    }
    if blank:
        version = task.current_config
        part["form_html"] = blank_create_html(
            (task.code, version.pk, version.yaml_text),
            config,
            goal_label=goal_label,
            retain=form.retain,
            context_id=context.pk if context else None,
            template_context=part,
        )
    return part


def next_form_part(request, task, example, retain: bool) -> dict:
    """The form of the next example on the same context, which the verdict page carries: a
    worker writes several examples against one context until the model is fooled."""
    config = task.config
    retained = {"input": example.input, "goal_label": example.goal_label} if retain else None
    form, goal_label = new_form(request, task, config, example.context, retained=retained)
    return form_part(task, config, example.context, form, goal_label)


def create_page(
    request, task, round_, config, context, form, *, goal_label="", status=200, **extra
):
    page = {
        "round": round_,
        "context": context,
        "progress": worker_progress(task, request.actor),
        "context_items": context_items(config, context.data if context else None),
        **form_part(task, config, context, form, goal_label),
        **extra,
    }
    return render(request, "annotation/create.html", page, status=status)


# -- one example ----------
# The example's own actions, each at its page's URL plus the action's name (``urls.py``
# builds their routes from this list): one ``reverse`` gives every link of the page.
EXAMPLE_ACTIONS = ("status", "retry", "verdict", "metadata", "retract", "flag", "unflag")


def example_urls(task, example) -> dict[str, str]:
    """The example's page and action URLs, by the names the templates use."""
    page = reverse("annotation:example", args=[task.code, example.pk])
    return {"page": page, **{action: page + action for action in EXAMPLE_ACTIONS}}


def example_context(task, example, *, metadata_form=None, quota_reached=False) -> dict:
    """What the example's status part shows: its answer, verdict, metadata form, actions."""
    config = example.config_version.parsed
    stale = (
        example.status == ExampleStatus.AWAITING_MODEL
        and (timezone.now() - example.updated_at).total_seconds() >= slow_model_seconds()
    )
    metadata_fields = config.create_metadata_fields(example.model_wrong)
    metadata_html = None
    if metadata_form is None and metadata_fields:
        if example.metadata:
            metadata_form = MetadataForm(
                specs=metadata_fields, initial=example.metadata, prefix="metadata"
            )
        else:  # the blank form of every new example: rendered once per config and outcome
            metadata_html = blank_metadata_html(
                (example.config_version_id, example.config_version.yaml_text, example.model_wrong),
                metadata_fields,
            )
    ask_user = (
        config.model_wrong_metric.type == "ask_user"
        and example.status == ExampleStatus.MODEL_ANSWERED
        and example.model_wrong is None
        and example.validation_state == ValidationState.PENDING
    )
    next_url = (
        campaign_done_url(task)
        if quota_reached
        else reverse("annotation:create", args=[task.code]) + "?next=1"
    )
    return {
        "task": task,
        "example": example,
        "example_urls": example_urls(task, example),
        "config": config,
        "outputs": output_items(config, example.model_output),
        "inputs": input_items(config, example.input),
        "ask_user": ask_user,
        "settled": example.validation_state != ValidationState.PENDING,
        "show_metadata": example.validation_state == ValidationState.PENDING
        and example.status in (ExampleStatus.MODEL_ANSWERED, ExampleStatus.NO_MODEL)
        and not ask_user
        and not example.retracted,
        "metadata_form": metadata_form,
        "metadata_html": metadata_html,
        "stale": stale,
        # Why a ``no_model`` example has no answer: the round's loop now (a cached read).
        "loop_state": round_loop_state(task.code, example.round_id)
        if example.status == ExampleStatus.NO_MODEL
        else None,
        "next_url": next_url,
        "quota_reached": quota_reached,
        "flag_reason_max": MAX_FLAG_REASON,
    }


def example_page(request, task, example, *, from_post=False, quota_reached=False, next_form=None):
    page = example_context(task, example, quota_reached=quota_reached)
    page.update(
        {
            "from_post": from_post,
            "next_form": next_form,
            "context_items": context_items(
                page["config"], example.context.data if example.context else None
            ),
            "goal_label": example.goal_label,
        }
    )
    return render(request, "annotation/example.html", page)


def status_part(request, task, example, *, status=200, extra=None, **kwargs):
    """The example's status part alone (htmx), with ``extra`` on top of its context."""
    page = example_context(task, example, **kwargs) | (extra or {})
    return render(request, "annotation/_example_status.html", page, status=status)


# -- the validate page ----------
def validate_page(request, task, example, form, status=200):
    page = {
        "task": task,
        "config": task.config,
        "example": example,
        "form": form,
        "progress": validator_progress(task, request.actor),
    }
    if example is not None:
        example_config = example.config_version.parsed
        if not form.is_bound:
            version = example.config_version
            page["form_html"] = blank_validate_html(
                (version.pk, version.yaml_text), example_config, example_id=example.pk
            )
        page.update(
            {
                "example_config": example_config,
                "context_items": context_items(
                    example_config, example.context.data if example.context else None
                ),
                "inputs": input_items(example_config, example.input),
                "outputs": output_items(example_config, example.model_output),
                "create_metadata": [
                    {"spec": spec, "value": example.metadata.get(spec.name)}
                    for spec in example_config.metadata_create
                    if spec.name in (example.metadata or {})
                ],
                # A chat task's example is a conversation: validators read it whole.
                "chat_transcript": example_transcript(example),
            }
        )
    return render(request, "annotation/validate.html", page, status=status)
