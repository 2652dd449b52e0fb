"""Create, validate and review pages. Thin: parse the request, call a service or a selector,
render. Pages are server-rendered; htmx swaps the example's status panel."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.template.loader import get_template
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import jobs, selectors, services
from annotation.actors import actor_from_request, campaign_quota_reached, campaign_record_time
from annotation.forms import (
    CreateForm,
    MetadataForm,
    OwnerVerdictForm,
    ReviewFilterForm,
    ValidateForm,
    blank_create_html,
    blank_metadata_html,
    blank_validate_html,
    context_items,
    goal_text,
    input_items,
    output_items,
    time_spent_ms,
)
from annotation.models import Campaign, Example, ExampleStatus
from dynatask_site.auth_backends import user_preloaded
from dynatask_site.reversing import reverse_filled
from models_hub.selectors import model_pick_for_round
from tasks.config.values import check_worker_input
from tasks.errors import NotFound, PermissionDenied, ServiceError
from tasks.permissions import can_review_examples

PREFS_KEY = "annotation_prefs"
LAST_KEY = "annotation_last"


def sync_wait_seconds() -> float:
    return float(getattr(settings, "ANNOTATION_SYNC_WAIT_SECONDS", 1.5))


def poll_wait_seconds() -> float:
    return float(getattr(settings, "ANNOTATION_POLL_WAIT_SECONDS", 2.0))


def slow_model_seconds() -> float:
    return float(getattr(settings, "ANNOTATION_SLOW_MODEL_SECONDS", 30.0))


def campaign_done_url(task) -> str:
    try:
        return reverse("annotation:campaign_done")
    except NoReverseMatch:  # the campaigns pages are not wired yet
        return reverse("tasks:detail", args=[task.code])


def _error(request, error: ServiceError):
    if isinstance(error, PermissionDenied) and actor_from_request(request) is None:
        return redirect_to_login(request.get_full_path())
    return render(request, "annotation/error.html", {"message": error.message}, status=error.status)


def annotation_view(view=None, *, reads=None):
    """Resolve the actor (login redirect for anonymous) and turn ServiceErrors into pages.

    ``reads(request, *args, **kwargs)``: for a request whose session holds a signed-in user,
    the rows the view reads first, read with the user's row in one statement
    (``selectors.prefetch``). The user is resolved from that row (``user_preloaded``: Django
    checks it as any user it loads) and the view finds the rest in ``request.prefetched``.
    """
    if view is None:
        return lambda view: annotation_view(view, reads=reads)

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        prefetched = None
        if reads is not None and request.session.get(SESSION_KEY) is not None:
            prefetched = reads(request, *args, **kwargs)
        with user_preloaded(prefetched.user if prefetched is not None else None):
            actor = actor_from_request(request)
        if actor is None:
            return redirect_to_login(request.get_full_path())
        request.actor = actor
        request.prefetched = prefetched
        if actor.user is not None:
            request.user = actor.user  # loaded: the view and the page skip the lazy proxy
        try:
            return view(request, *args, **kwargs)
        except ServiceError as error:
            return _error(request, error)

    return wrapper


def _task_reads(request, code: str, **kwargs) -> selectors.Prefetched | None:
    """The validate page's first reads: the user, the task and, for a POST, the example."""
    example_id = _int(request.POST.get("example_id")) if request.method == "POST" else None
    return selectors.prefetch(request.session[SESSION_KEY], code, example_id=example_id)


def _round_reads(request, code: str, **kwargs) -> selectors.Prefetched | None:
    """The create page's first reads: the user, the open round with its task and, for a
    POST, the context written about."""
    context_id = request.POST.get("context_id") if request.method == "POST" else None
    return selectors.prefetch(
        request.session[SESSION_KEY], code, with_round=True, context_id=context_id or None
    )


def _prefs(request, task) -> dict:
    return request.session.get(PREFS_KEY, {}).get(task.code, {})


def _set_pref(request, task, **values) -> None:
    prefs = dict(request.session.get(PREFS_KEY, {}))
    current = dict(prefs.get(task.code, {}))
    if all(current.get(key) == value for key, value in values.items()):
        return
    current.update(values)
    prefs[task.code] = current
    request.session[PREFS_KEY] = prefs


def _remember_input(request, task, context_id, data, goal_label) -> None:
    last = dict(request.session.get(LAST_KEY, {}))
    last[task.code] = {"context_id": context_id, "input": data, "goal_label": goal_label}
    request.session[LAST_KEY] = last


def _forget_input(request, task) -> None:
    last = request.session.get(LAST_KEY, {})
    if task.code in last:
        last = dict(last)
        del last[task.code]
        request.session[LAST_KEY] = last


def _campaign_kind_ok(actor, kind: str) -> bool:
    return actor.campaign_worker is None or actor.campaign_worker.campaign.kind == kind


# -- the create page ----------
@dataclass(frozen=True)
class _BlankForm:
    """A new example's form with no input filled in: its HTML is laid out once per config
    version (``blank_create_html``), so no form object is built for it."""

    retain: bool


def _form_part(task, config, context, form, goal_label: str) -> dict:
    """What ``_create_form.html`` shows: the goal and the create form (a blank one's HTML is
    laid out once per config version, goal and retain switch, see ``blank_create_html``)."""
    blank = isinstance(form, _BlankForm)
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


def _new_form(request, task, config, context, *, retained: dict | None = None):
    """Return (form, goal label) of a new example on ``context``: blank (a ``_BlankForm``), or
    with the retained input and goal when the worker keeps their input (``retained``)."""
    initial: dict = dict((retained or {}).get("input") or {})
    goal_label = (retained or {}).get("goal_label", "")
    goal = config.goal_field
    if goal is not None and goal_label not in goal.labels:
        goal_label = random.choice(goal.labels)  # noqa: S311
    retain = bool(_prefs(request, task).get("retain", False))
    if not any(initial.get(spec.name) for spec in config.input):
        return _BlankForm(retain=retain), goal_label
    initial.update({"context_id": context.pk if context else None, "retain_input": retain})
    return CreateForm(config=config, goal_label=goal_label, initial=initial), goal_label


def _create_page(request, task, round_, config, context, form, **extra):
    goal_label = extra.pop("goal_label", "")
    page = {
        "round": round_,
        "context": context,
        "context_items": context_items(config, context.data if context else None),
        **_form_part(task, config, context, form, goal_label),
        **extra,
    }
    return render(request, "annotation/create.html", page, status=extra.get("status", 200))


@require_http_methods(["GET", "POST"])
@annotation_view(reads=_round_reads)
def create(request, code: str):
    actor = request.actor
    task, round_ = selectors.task_and_round_for_actor(code, actor, request.prefetched)
    if not _campaign_kind_ok(actor, Campaign.Kind.CREATE):
        raise PermissionDenied("your campaign is for validation")
    if actor.is_campaign and campaign_quota_reached(actor):
        return redirect(campaign_done_url(task))
    config = task.config
    if round_ is None or not round_.is_open:
        return render(request, "annotation/error.html", {"message": "No round is open."})
    if request.method == "POST":
        return _create_post(request, task, round_, config, actor)

    last = request.session.get(LAST_KEY, {}).get(task.code)
    context = None
    retained = None
    if _prefs(request, task).get("retain") and last and "next" not in request.GET:
        context = selectors.context_get(round_, last.get("context_id"))
        if context is not None or not config.context:
            retained = last
    if context is None and config.context:
        context = selectors.context_sample(
            task, round_, task.context_sampling, task.context_sampling_tag, actor
        )
        if context is not None:
            services.context_mark_served(context)
    form, goal_label = _new_form(request, task, config, context, retained=retained)
    return _create_page(request, task, round_, config, context, form, goal_label=goal_label)


def _create_post(request, task, round_, config, actor):
    form = CreateForm(request.POST, config=config)
    context = selectors.context_get(
        round_, request.POST.get("context_id") or None, request.prefetched
    )
    goal = config.goal_field
    goal_label = request.POST.get(goal.name, "") if goal else ""
    if not form.is_valid():
        return _create_page(
            request, task, round_, config, context, form, goal_label=goal_label, status=400
        )
    data = form.config_values()
    retain = form.cleaned_data.get("retain_input", False)
    _set_pref(request, task, retain=retain)
    if form.cleaned_data.get("sandbox"):
        return _sandbox(request, task, round_, config, context, form, data, goal_label)
    try:
        example = services.example_submit(
            task=task,
            round_=round_,
            actor=actor,
            context=context,
            data=data,
            goal_label=goal_label,
            time_spent_ms=time_spent_ms(form.cleaned_data.get("started_at")),
        )
    except services.InvalidInput as error:
        form.add_issues(error.details.get("issues", []))
        return _create_page(
            request, task, round_, config, context, form, goal_label=goal_label, status=400
        )
    if retain:
        _remember_input(request, task, context.pk if context else None, data, goal_label)
    else:
        _forget_input(request, task)
    quota_reached = False
    if actor.is_campaign:
        campaign_record_time(actor, example.time_spent_ms or 0)
        quota_reached = campaign_quota_reached(actor)
    next_form = None
    if not quota_reached:
        # The verdict page carries the form of the next example on the same context, as the
        # worker writes several examples against one context until the model is fooled.
        # Built while the live job runs: it does not depend on the answer.
        retained = {"input": data, "goal_label": goal_label} if retain else None
        form, next_goal = _new_form(request, task, config, context, retained=retained)
        next_form = _form_part(task, config, context, form, next_goal)
    if example.status != ExampleStatus.AWAITING_MODEL:
        return _example_page(
            request, task, example, from_post=True, quota_reached=quota_reached, next_form=next_form
        )
    # The page is laid out while the model answers, all but its status part, which is
    # rendered into its slot once the answer is in. The part gets a context of its own,
    # without the context processors: it uses none of them but the page's CSRF token.
    csrf_token = get_token(request)
    response = _example_page(
        request,
        task,
        example,
        from_post=True,
        quota_reached=quota_reached,
        next_form=next_form,
        slot_csrf_token=csrf_token,
    )
    job_id = jobs.live_job_id(example.pk, example.model_attempts)
    answer = jobs.wait_for_live_answer(job_id, sync_wait_seconds())
    if answer == {}:  # the job ended without saying what it stored
        answer = selectors.example_model_answer(example.pk)
    for name, value in (answer or {}).items():
        setattr(example, name, value)
    status = get_template("annotation/_example_status.html").render(
        {**_example_context(task, example, quota_reached=quota_reached), "csrf_token": csrf_token}
    )
    response.content = response.content.replace(STATUS_SLOT.encode(), status.encode(), 1)
    return response


def _sandbox(request, task, round_, config, context, form, data, goal_label):
    context_data = context.data if context else {}
    issues = check_worker_input(config, services.normalise_input(config, data), context_data)
    if issues:
        form.add_issues(issues)
        return _create_page(
            request, task, round_, config, context, form, goal_label=goal_label, status=400
        )
    model = model_pick_for_round(round_)
    sandbox: dict = {"data": data}
    if model is None:
        sandbox["message"] = "No model is in the loop of this round."
    else:
        inputs = services.model_inputs(config, data, context_data, uid="sandbox")
        job_id = jobs.enqueue_sandbox_prediction(model, inputs, request.actor.key)
        if job_id is None:
            sandbox["message"] = jobs.SANDBOX_QUEUE_UNAVAILABLE_MESSAGE
        else:
            jobs.wait_for_job(job_id, sync_wait_seconds())
            sandbox.update(_sandbox_view(task, config, data, job_id, request.actor))
    form = CreateForm(request.POST, config=config)
    form.is_valid()
    return _create_page(
        request, task, round_, config, context, form, goal_label=goal_label, sandbox=sandbox
    )


def _sandbox_view(task, config, data, job_id, actor) -> dict:
    result = jobs.sandbox_result(job_id, actor.key)
    view = {"job_id": job_id, "pending": result is None}
    if result is not None and result.get("ok"):
        output = result.get("output") or {}
        view.update(
            {
                "outputs": output_items(config, output),
                "model_wrong": services.verdict_for(config, data, output),
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
    task = selectors.task_for_actor(code, request.actor)
    if not job_id.replace("-", "").isalnum():
        raise Http404
    # Only the worker who asked reads the answer (NotFound otherwise), checked before waiting.
    jobs.wait_for_sandbox(job_id, request.actor.key, poll_wait_seconds())
    # The sandbox keeps nothing: the inputs come back from the page for the verdict.
    data = {}
    sandbox = _sandbox_view(task, task.config, data, job_id, request.actor)
    sandbox["hide_verdict"] = True
    return render(request, "annotation/_sandbox_result.html", {"task": task, "sandbox": sandbox})


# -- one example: status, answer, verdict, metadata, retract, flag, retry ----------
# The example's own links on its page and status panel, by the name the templates use.
EXAMPLE_URL_VIEWS = {
    "page": "annotation:example",
    "status": "annotation:example_status",
    "retry": "annotation:example_retry",
    "verdict": "annotation:example_verdict",
    "metadata": "annotation:example_metadata",
    "retract": "annotation:example_retract",
    "flag": "annotation:example_flag",
}


def _example_context(task, example, *, metadata_form=None, quota_reached=False, actor=None):
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
    )
    next_url = (
        campaign_done_url(task)
        if quota_reached
        else reverse_filled("annotation:create", task.code) + "?next=1"
    )
    return {
        "task": task,
        "example": example,
        "example_urls": {
            name: reverse_filled(view, task.code, example.pk)
            for name, view in EXAMPLE_URL_VIEWS.items()
        },
        "config": config,
        "outputs": output_items(config, example.model_output),
        "inputs": input_items(config, example.input),
        "ask_user": ask_user,
        "show_metadata": example.status in (ExampleStatus.MODEL_ANSWERED, ExampleStatus.NO_MODEL)
        and not ask_user
        and not example.retracted,
        "metadata_form": metadata_form,
        "metadata_html": metadata_html,
        "stale": stale,
        "next_url": next_url,
        "quota_reached": quota_reached,
    }


# Where ``_create_post`` puts the status part of a page laid out before the model answered. An
# HTML comment: what workers and owners write cannot hold one on this page (it is escaped).
STATUS_SLOT = "<!--dynatask:example-status-->"


def _example_page(
    request,
    task,
    example,
    *,
    from_post=False,
    quota_reached=False,
    next_form=None,
    slot_csrf_token=None,
):
    """The example's page. Given ``slot_csrf_token``, it has ``STATUS_SLOT`` in place of its
    status part, and that CSRF token, which the caller gives the part it puts there."""
    page = _example_context(task, example, quota_reached=quota_reached)
    config = page["config"]
    if slot_csrf_token is not None:
        page["csrf_token"] = slot_csrf_token  # instead of the context processor's
        page["status_slot"] = mark_safe(STATUS_SLOT)  # noqa: S308
    page.update(
        {
            "from_post": from_post,
            "next_form": next_form,
            "context_items": context_items(
                config, example.context.data if example.context else None
            ),
            "goal_label": example.goal_label,
        }
    )
    return render(request, "annotation/example.html", page)


def _status_partial(request, task, example, **kwargs):
    return render(
        request, "annotation/_example_status.html", _example_context(task, example, **kwargs)
    )


@require_GET
@annotation_view
def example_detail(request, code: str, pk: int):
    task = selectors.task_for_actor(code, request.actor)
    example = selectors.example_get_for_actor(task, pk, request.actor)
    return _example_page(request, task, example)


@require_GET
@annotation_view
def example_status(request, code: str, pk: int):
    task = selectors.task_for_actor(code, request.actor)
    example = selectors.example_get_for_actor(task, pk, request.actor)
    if example.status == ExampleStatus.AWAITING_MODEL:
        jobs.ensure_drain(jobs.job_timeout(example.model))
        job_id = jobs.live_job_id(example.pk, example.model_attempts)
        if jobs.wait_for_job(job_id, poll_wait_seconds()):
            example = selectors.example_get_for_actor(task, pk, request.actor)
    return _status_partial(request, task, example)


def _after_action(request, task, example, **kwargs):
    if request.headers.get("HX-Request"):
        return _status_partial(request, task, example, **kwargs)
    return redirect("annotation:example", task.code, example.pk)


def _example_action(service_call):
    """POST on one example: run ``service_call(request, example)``, answer htmx or redirect."""

    @wraps(service_call)
    def view(request, code: str, pk: int):
        task = selectors.task_for_actor(code, request.actor)
        example = selectors.example_get_for_actor(task, pk, request.actor)
        try:
            result = service_call(request, task, example)
        except services.InvalidInput:
            raise
        except ServiceError as error:
            if isinstance(error, NotFound):
                raise
            messages.error(request, error.message)
            if request.headers.get("HX-Request"):
                example.refresh_from_db()
                page = _example_context(task, example)
                page["error"] = error.message
                return render(request, "annotation/_example_status.html", page)
            return redirect("annotation:example", task.code, example.pk)
        if isinstance(result, HttpResponse):
            return result
        return _after_action(request, task, result)

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
        except services.InvalidInput as error:
            form.add_issues(error.details.get("issues", []))
        else:
            if request.headers.get("HX-Request"):
                page = _example_context(task, example)
                page["saved"] = True
                return render(request, "annotation/_example_status.html", page)
            messages.success(request, "Saved.")
            return example
    page = _example_context(task, example, metadata_form=form)
    template = (
        "annotation/_example_status.html"
        if request.headers.get("HX-Request")
        else "annotation/example.html"
    )
    if template == "annotation/example.html":
        page["context_items"] = context_items(
            config, example.context.data if example.context else None
        )
    return render(request, template, page, status=400)


@_example_action
def example_retract(request, task, example):
    return services.example_retract(example, request.actor)


@_example_action
def example_flag(request, task, example):
    return services.example_flag(example, request.actor, request.POST.get("reason", ""))


@_example_action
def example_retry(request, task, example):
    example = services.example_request_model(
        example, request.actor, stale_after=slow_model_seconds()
    )
    job_id = jobs.live_job_id(example.pk, example.model_attempts)
    if jobs.wait_for_job(job_id, sync_wait_seconds()):
        example = selectors.example_get_for_actor(task, example.pk, request.actor)
    return example


# -- the validate page ----------
def _validate_page(request, task, example, form, status=200):
    config = task.config
    page = {"task": task, "config": config, "example": example, "form": form}
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
            }
        )
    return render(request, "annotation/validate.html", page, status=status)


@require_http_methods(["GET", "POST"])
@annotation_view(reads=_task_reads)
def validate(request, code: str):
    actor = request.actor
    task = selectors.task_for_actor(code, actor, request.prefetched)
    if not _campaign_kind_ok(actor, Campaign.Kind.VALIDATE):
        raise PermissionDenied("your campaign is for writing examples")
    if actor.is_campaign and campaign_quota_reached(actor):
        return redirect(campaign_done_url(task))
    if request.method == "GET":
        example = selectors.example_next_to_validate(task, actor)
        form = (
            ValidateForm(config=example.config_version.parsed, initial={"example_id": example.pk})
            if example
            else None
        )
        return _validate_page(request, task, example, form)

    example = selectors.example_for_validation(
        task, _int(request.POST.get("example_id")), actor, request.prefetched
    )
    if example is None:
        messages.info(request, "That example was settled or is no longer available.")
        return redirect("annotation:validate", task.code)
    form = ValidateForm(request.POST, config=example.config_version.parsed)
    if not form.is_valid():
        return _validate_page(request, task, example, form, status=400)
    try:
        services.validation_submit(
            example_id=example.pk,
            actor=actor,
            label=form.cleaned_data["label"],
            metadata=form.metadata_values(),
            time_spent_ms=time_spent_ms(form.cleaned_data.get("started_at")),
            task=task,
        )
    except services.InvalidInput as error:
        form.add_issues(error.details.get("issues", []))
        return _validate_page(request, task, example, form, status=400)
    except ServiceError as error:
        if isinstance(error, NotFound):
            raise
        messages.info(request, error.message)
        return redirect("annotation:validate", task.code)
    if actor.is_campaign:
        campaign_record_time(actor, time_spent_ms(form.cleaned_data.get("started_at")) or 0)
        if campaign_quota_reached(actor):
            return redirect(campaign_done_url(task))
    messages.success(request, "Thank you, your verdict is recorded.")
    return redirect("annotation:validate", task.code)


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# -- the owners' review queue ----------
@require_GET
@annotation_view
def review(request, code: str):
    if request.actor.user is None:
        raise PermissionDenied("only the task's owners review examples")
    task = selectors.task_for_reviewer(code, request.actor.user)
    filters = ReviewFilterForm(request.GET or None)
    min_flags, disagreement, include_settled = 0, False, False
    if filters.is_bound and filters.is_valid():
        min_flags = filters.cleaned_data.get("min_flags") or 0
        disagreement = filters.cleaned_data.get("disagreement") or False
        include_settled = filters.cleaned_data.get("include_settled") or False
    examples = selectors.review_queue(task, min_flags, disagreement, include_settled)
    rows = []
    for example in examples:
        config = example.config_version.parsed
        rows.append(
            {
                "example": example,
                "inputs": input_items(config, example.input),
                "outputs": output_items(config, example.model_output),
                "context_items": context_items(
                    config, example.context.data if example.context else None
                ),
            }
        )
    return render(
        request,
        "annotation/review.html",
        {"task": task, "filters": filters, "rows": rows, "verdict_form": OwnerVerdictForm()},
    )


@require_POST
@annotation_view
def review_submit(request, code: str, pk: int):
    user = request.actor.user
    if user is None:
        raise PermissionDenied("only the task's owners review examples")
    task = selectors.task_for_reviewer(code, user)
    if not can_review_examples(user, task):
        raise PermissionDenied("only the task's owners review examples")
    form = OwnerVerdictForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a verdict.")
    else:
        example = Example.objects.filter(task=task, pk=pk).only("pk").first()
        if example is None:
            raise NotFound("no such example")
        try:
            services.owner_review_submit(example_id=pk, user=user, label=form.cleaned_data["label"])
        except services.InvalidInput as error:
            issues = error.details.get("issues", [])
            messages.error(request, "; ".join(issue.message for issue in issues)[:500])
        else:
            messages.success(request, f"Example {pk} is settled as {form.cleaned_data['label']}.")
    back = reverse("annotation:review", args=[task.code])
    query = request.POST.get("return_query", "")
    return redirect(f"{back}?{query}" if query and "\n" not in query else back)
