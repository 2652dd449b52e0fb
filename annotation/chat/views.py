"""The conversation page (server-rendered, htmx) and its server-sent-event reply streams.

The page shows the transcript, one box per model and turn, the worker's choice and the
composer. Sending a message appends the new turn (htmx); each streaming reply box opens an
``EventSource`` on ``reply_stream``, which relays the reply's Redis stream (``streams``) as
server-sent events: ``text`` pieces, then ``done``, ``error`` or ``cancelled``. The box then
fetches itself again (``reply_box``), which brings the choice form and the composer up to
date out of band.
"""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.campaigns.services import campaign_quota_reached
from annotation.chat import services, streams
from annotation.chat.export import conversation_lines, preference_lines
from annotation.chat.models import ChatReply, ConversationStatus, ReplyStatus
from annotation.chat.pump import release_connection, retake_connection
from annotation.chat.selectors import (
    STALE_MARGIN_SECONDS,
    active_conversation,
    chat_config,
    chat_model_rates,
    conversation_for_actor,
    reply_for_actor,
    reveals,
    transcript,
    turn_finished,
    turn_needs_choice,
)
from annotation.chat.services import FinishForm
from annotation.models import Campaign
from annotation.selectors.tasks import bundle_for_actor, round_for_actor
from annotation.stats.summaries import round_by_number
from annotation.views.access import (
    annotation_view,
    campaign_done_url,
    error_page,
    require_campaign_kind,
)
from core.errors import PermissionDenied, ServiceError
from tasks.permissions import can_export_examples
from tasks.selectors import task_get_visible

STATUS_EVENTS = {
    ReplyStatus.DONE: streams.DONE,
    ReplyStatus.FAILED: streams.ERROR,
    ReplyStatus.CANCELLED: streams.CANCELLED,
}


def page_state(conversation) -> dict:
    """Everything the page and its partials show about ``conversation``."""
    chat = chat_config(conversation)
    shown = transcript(conversation, reveal=reveals(conversation, chat))
    turns = shown.turns
    last = turns[-1] if turns else None
    active = conversation.status == ConversationStatus.ACTIVE
    waiting = last is not None and not turn_finished(last)
    must_choose = last is not None and not waiting and turn_needs_choice(last, chat)
    answered = last is None or any(r.status == ReplyStatus.DONE for r in last.replies.all())
    full = len(turns) >= chat.max_turns
    reason = ""
    if waiting:
        reason = "The models are answering…"
    elif not answered:
        reason = "No model answered your last message: retry it."
    elif must_choose:
        reason = "Choose among the answers first."
    elif full:
        reason = f"This conversation has reached its {chat.max_turns} turns: finish it."
    can_finish = active and len(turns) >= chat.min_turns and not (waiting or must_choose)
    return {
        "conversation": conversation,
        "chat": chat,
        "task": conversation.task,
        "transcript": shown,
        "turns": turns,
        "last_turn": last,
        "labels": shown.labels,
        "active": active,
        "can_send": active and not reason,
        "send_reason": reason if active else "",
        "can_finish": can_finish and answered,
        "turns_left": max(0, chat.min_turns - len(turns)),
        "config": conversation.config_version.parsed,
    }


def _conversation(request, code: str, pk: int):
    return conversation_for_actor(pk, request.actor, code=code)


@require_http_methods(["GET", "POST"])
@annotation_view
def chat_home(request, code: str):
    """The start page; POST starts a conversation (or resumes the worker's active one)."""
    actor = request.actor
    bundle = bundle_for_actor(code, actor)
    require_campaign_kind(actor, Campaign.Kind.CREATE)
    if campaign_quota_reached(actor):  # as on the create page: no new work past the quota
        return redirect(campaign_done_url(bundle.task))
    config = bundle.config
    if config is None or config.chat is None:
        raise Http404("this task is not a chat task")
    round_ = round_for_actor(bundle, actor)
    if round_ is None:
        return render(request, "annotation/error.html", {"message": "No round is open."})
    current = active_conversation(bundle.task, round_, actor)
    if request.method == "POST":
        if current is None:
            current = services.conversation_start(task=bundle.task, round_=round_, actor=actor)
        return redirect("annotation:chat_page", code, current.pk)
    page = {"task": bundle.task, "chat": config.chat, "config": config, "current": current}
    return render(request, "annotation/chat/start.html", page)


@require_GET
@annotation_view
def chat_page(request, code: str, pk: int):
    conversation = _conversation(request, code, pk)
    return render(request, "annotation/chat/page.html", page_state(conversation))


def _turn_response(request, conversation, turn_id: int, status: int = 200):
    state = page_state(conversation)
    turn = next((turn for turn in state["turns"] if turn.pk == turn_id), None)
    if turn is None:
        raise Http404("no such turn")
    return render(
        request, "annotation/chat/_turn_response.html", {**state, "turn": turn}, status=status
    )


def _error_response(request, conversation, error: ServiceError):
    state = page_state(conversation)
    return render(
        request,
        "annotation/chat/_composer.html",
        {**state, "error": error.message},
        status=error.status if error.status >= 400 else 400,
    )


@require_POST
@annotation_view
def chat_send(request, code: str, pk: int):
    conversation = _conversation(request, code, pk)
    try:
        turn = services.turn_send(conversation, request.actor, request.POST.get("message", ""))
    except ServiceError as error:
        return _error_response(request, conversation, error)
    return _turn_response(request, conversation, turn.pk)


@require_GET
@annotation_view
def chat_turn(request, code: str, pk: int, turn_id: int):
    return _turn_response(request, _conversation(request, code, pk), turn_id)


@require_POST
@annotation_view
def chat_choose(request, code: str, pk: int, turn_id: int):
    conversation = _conversation(request, code, pk)
    choice = request.POST.get("choice", "")
    best = None
    if choice.startswith("best:"):
        choice, _, position = choice.partition(":")
        best = int(position) if position.isdigit() else None
    try:
        services.turn_choose(
            conversation, request.actor, turn_id, choice, best, request.POST.get("slider")
        )
    except ServiceError as error:
        return _error_response(request, conversation, error)
    return _turn_response(request, conversation, turn_id)


def _reply_of(conversation, reply_id: int) -> ChatReply:
    reply = ChatReply.objects.filter(pk=reply_id, turn__conversation=conversation).first()
    if reply is None:
        raise Http404("no such reply")
    return reply


@require_GET
@annotation_view
def reply_box(request, code: str, pk: int, reply_id: int):
    """One reply box, with the choice and composer out of band (after a stream ended)."""
    conversation = _conversation(request, code, pk)
    reply = _reply_of(conversation, reply_id)
    state = page_state(conversation)
    turn = next(turn for turn in state["turns"] if turn.pk == reply.turn_id)
    box = next(item for item in turn.replies.all() if item.pk == reply.pk)
    return render(
        request, "annotation/chat/_reply_response.html", {**state, "turn": turn, "reply": box}
    )


@require_POST
@annotation_view
def reply_retry(request, code: str, pk: int, reply_id: int):
    conversation = _conversation(request, code, pk)
    try:
        reply = services.reply_retry(conversation, request.actor, reply_id)
    except ServiceError as error:
        return _error_response(request, conversation, error)
    return _turn_response(request, conversation, reply.turn_id)


@require_POST
@annotation_view
def reply_cancel(request, code: str, pk: int, reply_id: int):
    conversation = _conversation(request, code, pk)
    services.reply_cancel(conversation, request.actor, reply_id)
    return HttpResponse(status=204)


def sse(kind: str, data) -> str:
    """One server-sent event; every line of ``data`` is a ``data:`` line."""
    text = data if isinstance(data, str) else json.dumps(data)
    lines = "".join(f"data: {line}\n" for line in text.split("\n"))
    return f"event: {kind}\n{lines}\n"


# Fields of a terminal event that never reach the worker: the version a server reports often
# names the model, which stays hidden until the end (the reply row has it for the owners).
HIDDEN_EVENT_FIELDS = ("model_version",)


def terminal_fields(data: str) -> dict | str:
    """The fields of a terminal event as relayed: the stored ones but the hidden ones."""
    try:
        fields = json.loads(data)
    except ValueError:
        return data
    if not isinstance(fields, dict):
        return data
    return {key: value for key, value in fields.items() if key not in HIDDEN_EVENT_FIELDS}


def reply_events(reply: ChatReply, attempt: int, seconds: float):
    """The events of one reply attempt: from its stream, or from the row once stored."""
    if reply.attempt != attempt or reply.status != ReplyStatus.STREAMING:
        if reply.text:
            yield sse(streams.TEXT, reply.text)
        kind = STATUS_EVENTS.get(reply.status, streams.ERROR)
        yield sse(kind, {"status": reply.status, "error_message": reply.error_message})
        return
    release_connection()  # a stream holds a thread, never a database connection
    yield ": stream open\n\n"
    key = streams.reply_key(reply.pk, attempt)
    for kind, data in streams.follow(key, seconds, poll_ms=2000):
        if kind is None:
            yield ": keep-alive\n\n"
            continue
        if kind in streams.TERMINAL:
            yield sse(kind, terminal_fields(data))
            break
        yield sse(kind, data)
    else:
        message = "The reply did not arrive in time. Retry it."
        yield sse(streams.ERROR, {"status": "lost", "error_message": message})
    retake_connection()


def turn_events(turn_data: dict, replies: list[ChatReply], seconds: float):
    """The events of a turn just sent: ``turn`` (the turn as the API shows it), then every
    reply's events as they come, each JSON with its ``reply`` id (``text`` pieces, then
    ``done``, ``error`` or ``cancelled``), until every reply has ended."""
    release_connection()  # a stream holds a thread, never a database connection
    yield sse("turn", turn_data)
    keys = {streams.reply_key(reply.pk, reply.attempt): reply.pk for reply in replies}
    waiting = set(keys)
    for key, kind, data in streams.follow_many(list(keys), seconds, poll_ms=2000):
        if kind is None:
            yield ": keep-alive\n\n"
        elif kind in streams.TERMINAL:
            waiting.discard(key)
            fields = terminal_fields(data)
            fields = fields if isinstance(fields, dict) else {"data": fields}
            yield sse(kind, {"reply": keys[key], **fields})
        else:
            yield sse(kind, {"reply": keys[key], "text": data})
    message = "The reply did not arrive in time. Retry it."
    for key in sorted(waiting, key=keys.get):
        yield sse(streams.ERROR, {"reply": keys[key], "status": "lost", "error_message": message})
    retake_connection()


@require_GET
@annotation_view
def reply_stream(request, code: str, pk: int, reply_id: int):
    """The reply as server-sent events (see the module docstring)."""
    reply = reply_for_actor(pk, reply_id, request.actor, code=code)
    attempt = request.GET.get("attempt", "")
    attempt = int(attempt) if attempt.isdigit() else reply.attempt
    seconds = chat_config(reply.turn.conversation).reply_timeout + STALE_MARGIN_SECONDS
    response = StreamingHttpResponse(
        reply_events(reply, attempt, seconds), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def finish_form(request, conversation) -> FinishForm:
    post = request.POST
    chat = chat_config(conversation)
    fooled = None
    if chat.asks_worker and post.get("verdict_given"):
        fooled = tuple(int(value) for value in post.getlist("fooled") if value.isdigit())
    config = conversation.config_version.parsed
    metadata = {
        spec.name: post.get(f"meta_{spec.name}", "").strip()
        for spec in config.metadata_create
        if post.get(f"meta_{spec.name}", "").strip()
    }
    model_wrong = bool(fooled) if fooled is not None else None
    allowed = {spec.name for spec in config.create_metadata_fields(model_wrong)}
    spent = (timezone.now() - conversation.created_at).total_seconds() * 1000
    return FinishForm(
        fooled_positions=fooled,
        rating=post.get("rating") or None,
        free_text=post.get("free_text", ""),
        metadata={key: value for key, value in metadata.items() if key in allowed},
        time_spent_ms=int(min(spent, 2**31 - 1)),
    )


@require_POST
@annotation_view
def chat_finish(request, code: str, pk: int):
    conversation = _conversation(request, code, pk)
    try:
        services.conversation_finish(
            conversation, request.actor, finish_form(request, conversation)
        )
    except ServiceError as error:
        state = page_state(conversation)
        return render(
            request,
            "annotation/chat/page.html",
            {**state, "finish_error": error.message, "finish_issues": _issues(error)},
            status=400,
        )
    return redirect(reverse("annotation:chat_page", args=[code, pk]) + "#finished")


def _issues(error: ServiceError) -> list[str]:
    details = error.details if isinstance(error.details, dict) else {}
    return [str(issue) for issue in details.get("issues", [])]


EXPORTS = {"conversations": "conversations", "preferences": "preferences"}


def _owned_task(request, code: str):
    """Task ``code`` for a user who may export its examples (404 / 403 otherwise)."""
    task = task_get_visible(code, request.user)
    if not can_export_examples(request.user, task):
        raise PermissionDenied("only the task's owners see the results and exports")
    return task


@require_GET
@login_required
def chat_results(request, code: str):
    """The owners' page: fooling rates per model and the two exports."""
    try:
        task = _owned_task(request, code)
    except ServiceError as error:
        return error_page(request, error)
    page = {"task": task, "rates": chat_model_rates(task), "config": task.config}
    return render(request, "annotation/chat/results.html", page)


@require_GET
@login_required
def chat_export(request, code: str, kind: str):
    """``conversations.jsonl`` or ``preferences.jsonl`` of the task (``?round=N``), streamed."""
    if kind not in EXPORTS:
        raise Http404("no such export")
    try:
        task = _owned_task(request, code)
        round_ = round_by_number(task, request.GET.get("round"))
    except ServiceError as error:
        return error_page(request, error)
    response = StreamingHttpResponse(
        export_lines(task, round_, kind, request.GET.get("metadata") == "1"),
        content_type="application/x-ndjson; charset=utf-8",
    )
    suffix = f"round-{round_.number}" if round_ else "all-rounds"
    response["Content-Disposition"] = f'attachment; filename="{task.code}-{kind}-{suffix}.jsonl"'
    response["Cache-Control"] = "no-store"
    return response


def export_lines(task, round_, kind: str, with_metadata: bool):
    if kind == "preferences":
        return preference_lines(task, round_, with_metadata=with_metadata)
    return conversation_lines(task, round_)
