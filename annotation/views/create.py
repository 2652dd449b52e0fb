"""The create page: a context, the goal and the form; on submit the example is saved, the
model in the loop answers, and the page shows its verdict with the next example's form."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from annotation.campaigns.services import campaign_quota_reached, campaign_record_time
from annotation.display import output_items
from annotation.forms import CreateForm, time_spent_ms
from annotation.live import sandbox as sandbox_questions
from annotation.live.queue import live_job_id, wait_for_live_answer
from annotation.models import Campaign, ExampleStatus
from annotation.selectors.examples import example_model_answer, external_validator_url
from annotation.selectors.tasks import (
    LOOP_SILENT,
    bundle_for_actor,
    context_get,
    context_sample,
    round_for_actor,
)
from annotation.services.answers import model_inputs, normalise_input, verdict_for
from annotation.services.examples import context_mark_served, example_submit
from annotation.services.guards import InvalidInput
from annotation.views import pages
from annotation.views.access import (
    annotation_view,
    campaign_done_url,
    poll_wait_seconds,
    require_campaign_kind,
    sync_wait_seconds,
)
from tasks.config.values import check_worker_input

# The sandbox's answer when no model can be asked.
SANDBOX_NO_MODEL = "No model is in the loop of this round."
SANDBOX_MODEL_SILENT = (
    "The model in the loop is not answering right now, so the sandbox cannot ask it. "
    "Try again in a few minutes."
)


@require_http_methods(["GET", "POST"])
@annotation_view
def create(request, code: str):
    actor = request.actor
    context_id = request.POST.get("context_id") if request.method == "POST" else None
    bundle = bundle_for_actor(code, actor, context_id=context_id)
    require_campaign_kind(actor, Campaign.Kind.CREATE)
    if actor.is_campaign and campaign_quota_reached(actor):
        return redirect(campaign_done_url(bundle.task))
    round_ = round_for_actor(bundle, actor)
    if round_ is None:
        return render(request, "annotation/error.html", {"message": "No round is open."})
    if request.method == "POST":
        return _submit(request, bundle, round_)
    task, config = bundle.task, bundle.config
    survey = external_validator_url(config, task, actor)
    if survey is not None:
        return redirect(survey)
    last = pages.last_input(request, task)
    context, retained = None, None
    if pages.prefs(request, task).get("retain") and last and "next" not in request.GET:
        context = context_get(round_, last.get("context_id"))
        if context is not None or not config.context:
            retained = last
    if context is None and config.context:
        context = context_sample(round_, task.context_sampling, task.context_sampling_tag)
        if context is not None:
            context_mark_served(context)
    form, goal_label = pages.new_form(request, task, config, context, retained=retained)
    return pages.create_page(
        request,
        task,
        round_,
        config,
        context,
        form,
        goal_label=goal_label,
        loop_state=bundle.loop_state(round_.pk),
    )


def _submit(request, bundle, round_):
    task, config, actor = bundle.task, bundle.config, request.actor
    form = CreateForm(request.POST, config=config)
    context = context_get(round_, request.POST.get("context_id"), bundle.requested_context)
    goal_label = request.POST.get(config.goal_field.name, "") if config.goal_field else ""
    if not form.is_valid():
        return pages.create_page(
            request, task, round_, config, context, form, goal_label=goal_label, status=400
        )
    retain = form.cleaned_data.get("retain_input", False)
    pages.set_pref(request, task, retain=retain)
    if form.cleaned_data.get("sandbox"):
        return _sandbox(request, bundle, round_, context, form, form.config_values(), goal_label)
    try:
        example = example_submit(
            task=task,
            round_=round_,
            actor=actor,
            context=context,
            data=form.config_values(),
            goal_label=goal_label,
            asked_label=form.cleaned_data.get("asked_label", ""),
            time_spent_ms=time_spent_ms(form.cleaned_data.get("started_at")),
            model=bundle.pick_model(round_),
        )
    except InvalidInput as error:
        form.add_issues(error.details.get("issues", []))
        return pages.create_page(
            request, task, round_, config, context, form, goal_label=goal_label, status=400
        )
    quota_reached = _record_submission(request, task, example, retain)
    next_form = None if quota_reached else pages.next_form_part(request, task, example, retain)
    if example.status == ExampleStatus.AWAITING_MODEL:
        _wait_for_answer(example)
    return pages.example_page(
        request, task, example, from_post=True, quota_reached=quota_reached, next_form=next_form
    )


def _record_submission(request, task, example, retain: bool) -> bool:
    """Keep the input in the session when the worker retains it; record a campaign worker's
    time. Returns whether the campaign's quota is reached."""
    if retain:
        pages.remember_input(request, task, example.context_id, example.input, example.goal_label)
    else:
        pages.forget_input(request, task)
    if not request.actor.is_campaign:
        return False
    campaign_record_time(request.actor, example.time_spent_ms or 0)
    return campaign_quota_reached(request.actor)


def _wait_for_answer(example) -> None:
    """Wait a moment for the model's answer and set what it stored on ``example``."""
    answer = wait_for_live_answer(
        live_job_id(example.pk, example.model_attempts), sync_wait_seconds()
    )
    if answer == {}:  # it ended without saying what it stored: read the row
        answer = example_model_answer(example.pk)
    for name, value in (answer or {}).items():
        setattr(example, name, value)


def _sandbox(request, bundle, round_, context, form, data, goal_label):
    """Ask the model about the input without storing anything; show its answer."""
    task, config = bundle.task, bundle.config
    context_data = context.data if context else {}
    issues = check_worker_input(config, normalise_input(config, data), context_data)
    if issues:
        form.add_issues(issues)
        return pages.create_page(
            request, task, round_, config, context, form, goal_label=goal_label, status=400
        )
    model = bundle.pick_model(round_)
    sandbox: dict = {"data": data}
    if model is None:
        silent = bundle.loop_state(round_.pk) == LOOP_SILENT
        sandbox["message"] = SANDBOX_MODEL_SILENT if silent else SANDBOX_NO_MODEL
    else:
        inputs = model_inputs(config, data, context_data, uid="sandbox")
        job_id = sandbox_questions.enqueue_sandbox_prediction(model, inputs, request.actor.key)
        if job_id is None:
            sandbox["message"] = sandbox_questions.SANDBOX_QUEUE_UNAVAILABLE_MESSAGE
        else:
            sandbox_questions.wait_for_sandbox(job_id, request.actor.key, sync_wait_seconds())
            sandbox.update(_sandbox_view(task, config, data, job_id, request.actor))
    form = CreateForm(request.POST, config=config)
    form.is_valid()
    return pages.create_page(
        request, task, round_, config, context, form, goal_label=goal_label, sandbox=sandbox
    )


def _sandbox_view(task, config, data, job_id, actor) -> dict:
    result = sandbox_questions.sandbox_result(job_id, actor.key)
    view = {"job_id": job_id, "pending": result is None}
    if result is not None and result.get("ok"):
        output = result.get("output") or {}
        view.update(
            {
                "outputs": output_items(config, output),
                "model_wrong": verdict_for(config, data, output),
                "ask_user": config.model_wrong_metric.type == "ask_user",
            }
        )
    elif result is not None:
        view["error"] = result.get("message") or "The model could not answer."
    view["status_url"] = reverse("annotation:sandbox_status", args=[task.code, job_id])
    return view


@require_GET
@annotation_view
def sandbox_status(request, code: str, job_id: str):
    bundle = bundle_for_actor(code, request.actor)
    if not job_id.replace("-", "").isalnum():
        raise Http404
    # Only the worker who asked reads the answer (NotFound otherwise), checked before waiting.
    sandbox_questions.wait_for_sandbox(job_id, request.actor.key, poll_wait_seconds())
    # The sandbox keeps nothing: the inputs come back from the page for the verdict.
    sandbox = _sandbox_view(bundle.task, bundle.config, {}, job_id, request.actor)
    sandbox["hide_verdict"] = True
    return render(
        request, "annotation/_sandbox_result.html", {"task": bundle.task, "sandbox": sandbox}
    )
