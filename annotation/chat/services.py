"""Writes of chat collection: start a conversation, send a turn, retry or cancel a reply,
choose among the answers, finish (the conversation becomes an Example).

Every function checks that the actor owns the conversation and that it is in the right state,
and raises a ``core.errors.ServiceError`` with a code otherwise. Replies are streamed by the
pump after the commit (``pump.reply_queue``); the judge, when the config has one, runs after
the finish (``judge.judge_queue``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from annotation.campaigns.actors import Actor
from annotation.chat import pump, streams, text_models
from annotation.chat.draws import seat_models
from annotation.chat.judge import judge_queue
from annotation.chat.models import (
    ChatReply,
    ChatTurn,
    Conversation,
    ConversationSeat,
    ConversationStatus,
    ReplyStatus,
)
from annotation.chat.selectors import (
    STALE_MARGIN_SECONDS,
    PastTurn,
    chat_config,
    conversation_locked,
    is_owner,
    seat_messages,
    turn_finished,
    turn_history,
    turn_needs_choice,
    turns_with_replies,
)
from annotation.chat.text_models import message_field
from annotation.models import Example, ExampleStatus, VerdictSource
from annotation.services.guards import issues_or_raise
from annotation.stats import counters
from annotation.stats.buffer import counters_add_on_commit
from core.errors import Conflict, NotFound, PermissionDenied, ServiceError
from models_hub.selectors import endpoint_fingerprint
from tasks.config.chat import CHOICE_BEST, ChatConfig
from tasks.config.values import check_metadata
from tasks.models import Round, Task

MAX_FREE_TEXT = 5000


class ChatInvalid(ServiceError):
    """What the worker sent does not fit the chat config."""

    code = "chat.invalid"


def _require_owner(conversation: Conversation, actor: Actor) -> None:
    if actor is None or not is_owner(conversation, actor):
        raise NotFound("no such conversation")


def _require_active(conversation: Conversation) -> None:
    if conversation.status != ConversationStatus.ACTIVE:
        raise Conflict("the conversation is finished", code="chat.finished")


def conversation_start(*, task: Task, round_: Round, actor: Actor) -> Conversation:
    """Start a conversation of ``actor`` with fairly drawn models (``draws.seat_models``)."""
    if actor is None or not actor.is_authenticated:
        raise PermissionDenied("sign in to chat")
    if not task.active:
        raise PermissionDenied("this task takes no new examples")
    if round_ is None or round_.task_id != task.pk or not round_.is_open:
        raise Conflict("the round is closed", code="round.closed")
    version = task.current_config
    chat = version.parsed.chat if version is not None and version.parsed else None
    if chat is None:
        raise Conflict("this task is not a chat task", code="chat.not_chat")
    models = seat_models(task, round_, actor, chat)
    with transaction.atomic():
        conversation = Conversation.objects.create(
            task=task, round=round_, config_version=version, **actor.create_kwargs()
        )
        ConversationSeat.objects.bulk_create(
            ConversationSeat(
                conversation=conversation, position=index, model=model, model_name=model.name
            )
            for index, model in enumerate(models)
        )
    return conversation


def _check_message(chat: ChatConfig, message: str) -> str:
    message = (message or "").strip()
    if not message:
        raise ChatInvalid("write a message first", code="chat.empty_message")
    if len(message) > chat.message_max_length:
        raise ChatInvalid(
            f"the message is {len(message)} characters long; the limit is "
            f"{chat.message_max_length}",
            code="chat.message_too_long",
        )
    return message


def _check_last_turn(turns: list[ChatTurn] | list[PastTurn], chat: ChatConfig) -> None:
    if not turns:
        return
    last = turns[-1]
    if not turn_finished(last):
        raise Conflict("the models are still answering", code="chat.answering")
    if not any(reply.status == ReplyStatus.DONE for reply in last.replies.all()):
        raise Conflict("no model answered the last turn: retry it first", code="chat.no_answer")
    if turn_needs_choice(last, chat):
        raise Conflict("choose among the answers first", code="chat.choose_first")


def turn_send(conversation: Conversation, actor: Actor, message: str) -> ChatTurn:
    """Add the worker's ``message`` as the next turn; every seat's model answers it."""
    return turn_send_to(conversation.pk, actor, message)


def turn_send_to(conversation_id: int, actor: Actor, message: str) -> ChatTurn:
    """``turn_send`` from the conversation's id: the conversation is read once, under its
    lock, and the pump is handed every reply's messages (``pump.ReplyOrder``). The turn
    comes back with ``conversation`` (its seats loaded) and ``new_replies``."""
    with transaction.atomic():
        locked = conversation_locked(conversation_id, actor)
        chat = chat_config(locked)
        message = _check_message(chat, message)
        _require_active(locked)
        turns = turn_history(locked)  # numbered 1, 2... under this lock
        count = turns[-1].number if turns else 0
        if count >= chat.max_turns:
            raise Conflict(f"a conversation has at most {chat.max_turns} turns", code="chat.full")
        _check_last_turn(turns, chat)
        turn = ChatTurn.objects.create(conversation=locked, number=count + 1, message=message)
        seats = list(locked.seats.all())
        replies = ChatReply.objects.bulk_create(
            ChatReply(turn=turn, position=seat.position, model_id=seat.model_id) for seat in seats
        )
        locked.save(update_fields=["updated_at"])
        _queue_on_commit(_orders(chat, seats, turns, turn, replies))
    turn.new_replies = replies  # the rows just written, for the caller's answer
    return turn


def _orders(chat: ChatConfig, seats, turns, turn, replies) -> list:
    """An order per chat model's reply; a text model's reply goes by its id (the pump reads
    the task input it is asked about)."""
    limits = pump.ReplyLimits.of(chat)
    models = {seat.position: seat.model for seat in seats}
    orders: list[pump.ReplyOrder | tuple[int, int]] = []
    for reply in replies:
        model = models.get(reply.position)
        if model is not None and text_models.is_text_protocol(model.protocol):
            orders.append((reply.pk, reply.attempt))
            continue
        orders.append(
            pump.ReplyOrder(
                reply_id=reply.pk,
                attempt=reply.attempt,
                model_id=model.pk if model is not None else None,
                fingerprint=endpoint_fingerprint(model) if model is not None else "",
                messages=seat_messages(turns, turn, reply.position),
                limits=limits,
            )
        )
    return orders


def _queue_on_commit(items: list[tuple[int, int] | pump.ReplyOrder]) -> None:
    def queue() -> None:
        if not pump.reply_queue(items):
            for reply_id, attempt in pump.reply_ids(items):
                ChatReply.objects.filter(pk=reply_id, attempt=attempt).update(
                    status=ReplyStatus.FAILED,
                    error_code=pump.QUEUE_UNAVAILABLE,
                    error_message="The model could not be asked: the job queue is not "
                    "reachable. Retry in a moment.",
                    finished_at=timezone.now(),
                )

    transaction.on_commit(queue)


def reply_is_stale(reply: ChatReply, chat: ChatConfig) -> bool:
    """A reply still streaming long past its time limit: its pump is gone."""
    limit = timedelta(seconds=chat.reply_timeout + STALE_MARGIN_SECONDS)
    return reply.status == ReplyStatus.STREAMING and timezone.now() - reply.started_at > limit


def _reply_of(conversation: Conversation, reply_id: int) -> ChatReply:
    reply = (
        ChatReply.objects.select_for_update()
        .select_related("turn")
        .filter(pk=reply_id, turn__conversation=conversation)
        .first()
    )
    if reply is None:
        raise NotFound("no such reply")
    return reply


def reply_retry(conversation: Conversation, actor: Actor, reply_id: int) -> ChatReply:
    """Ask the model again for a failed, cancelled or lost reply of the last turn."""
    _require_owner(conversation, actor)
    chat = chat_config(conversation)
    with transaction.atomic():
        _require_active(Conversation.objects.select_for_update().get(pk=conversation.pk))
        reply = _reply_of(conversation, reply_id)
        last = conversation.turns.order_by("-number").values_list("pk", flat=True).first()
        if reply.turn_id != last:
            raise Conflict("only the last turn can be retried", code="chat.not_last_turn")
        retryable = (ReplyStatus.FAILED, ReplyStatus.CANCELLED)
        if reply.status not in retryable and not reply_is_stale(reply, chat):
            raise Conflict("this reply is not failed", code="chat.not_failed")
        if reply.turn.choice:
            raise Conflict("the answers were already chosen", code="chat.chosen")
        reply.attempt += 1
        reply.status = ReplyStatus.STREAMING
        reply.text = reply.error_code = reply.error_message = reply.finish_reason = ""
        reply.started_at = timezone.now()
        reply.finished_at = None
        reply.save()
        _queue_on_commit([(reply.pk, reply.attempt)])
    return reply


def reply_cancel(conversation: Conversation, actor: Actor, reply_id: int) -> ChatReply:
    """Stop a streaming reply: the pump stores it as cancelled (a lost one is at once)."""
    _require_owner(conversation, actor)
    chat = chat_config(conversation)
    with transaction.atomic():
        reply = _reply_of(conversation, reply_id)
        if reply.status != ReplyStatus.STREAMING:
            return reply
        if reply_is_stale(reply, chat):
            reply.status = ReplyStatus.CANCELLED
            reply.finished_at = timezone.now()
            reply.save(update_fields=["status", "finished_at"])
            return reply
    streams.request_cancel(reply.pk, reply.attempt)
    return reply


def turn_choose(
    conversation: Conversation,
    actor: Actor,
    turn_id: int,
    choice: str,
    best_position: int | None = None,
    slider: int | None = None,
) -> ChatTurn:
    """Record the worker's choice for the last turn (it may change until the next turn)."""
    _require_owner(conversation, actor)
    chat = chat_config(conversation)
    if choice not in chat.turn_choice:
        raise ChatInvalid(f"choose one of {', '.join(chat.turn_choice)}", code="chat.bad_choice")
    with transaction.atomic():
        _require_active(Conversation.objects.select_for_update().get(pk=conversation.pk))
        turns = turns_with_replies(conversation)
        turn = next((turn for turn in turns if turn.pk == turn_id), None)
        if turn is None:
            raise NotFound("no such turn")
        if turn is not turns[-1]:
            raise Conflict("only the last turn's choice can change", code="chat.not_last_turn")
        if not turn_finished(turn):
            raise Conflict("the models are still answering", code="chat.answering")
        done = {reply.position for reply in turn.replies.all() if reply.status == "done"}
        if choice == CHOICE_BEST and best_position not in done:
            raise ChatInvalid("pick one of the answers as the best", code="chat.bad_choice")
        turn.choice = choice
        turn.best_position = best_position if choice == CHOICE_BEST else None
        turn.slider = _check_scale(chat.turn_slider, slider, "slider", required=False)
        turn.chosen_at = timezone.now()
        turn.save(update_fields=["choice", "best_position", "slider", "chosen_at"])
    return turn


def _check_scale(scale, value, name: str, *, required: bool) -> int | None:
    if scale is None or value in (None, ""):
        if scale is not None and required:
            raise ChatInvalid(f"give a {name} from {scale.min} to {scale.max}", code="chat.scale")
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ChatInvalid(f"the {name} must be a whole number", code="chat.scale")
    if not scale.min <= number <= scale.max:
        raise ChatInvalid(
            f"the {name} must be from {scale.min} to {scale.max}, not {number}", code="chat.scale"
        )
    return number


@dataclass(frozen=True)
class FinishForm:
    """What the worker gives at the end of a conversation."""

    fooled_positions: tuple[int, ...] | None = None  # None: not said
    rating: int | str | None = None
    free_text: str = ""
    metadata: Mapping | None = None
    time_spent_ms: int | None = None


def conversation_finish(conversation: Conversation, actor: Actor, form: FinishForm) -> Example:
    """End the conversation: store the worker's verdict, rating and answers as an Example."""
    _require_owner(conversation, actor)
    chat = chat_config(conversation)
    config = conversation.config_version.parsed
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        _require_active(locked)
        turns = turns_with_replies(locked)
        if len(turns) < chat.min_turns:
            raise Conflict(
                f"hold at least {chat.min_turns} turns before you finish", code="chat.too_short"
            )
        _check_last_turn(turns, chat)
        seats = list(locked.seats.all())
        fooled = _worker_verdict(chat, seats, form.fooled_positions)
        model_wrong = any(fooled.values()) if chat.fooled_by == "worker" else None
        fields = config.create_metadata_fields(model_wrong)
        metadata = dict(form.metadata or {})
        issues_or_raise(check_metadata(fields, metadata), "the answers do not fit the task")
        free_text = (form.free_text or "").strip()
        if len(free_text) > MAX_FREE_TEXT:
            raise ChatInvalid(f"the text is over {MAX_FREE_TEXT} characters", code="chat.text")
        for seat in seats:
            seat.worker_fooled = fooled.get(seat.position)
            seat.fooled = seat.worker_fooled if chat.fooled_by == "worker" else None
        ConversationSeat.objects.bulk_update(seats, ["worker_fooled", "fooled"])
        example = _store_example(locked, actor, config, turns, seats, model_wrong, metadata, form)
        locked.rating = _check_scale(chat.rating, form.rating, "rating", required=True)
        locked.free_text, locked.metadata = free_text, metadata
        locked.model_wrong, locked.example = model_wrong, example
        locked.status, locked.finished_at = ConversationStatus.FINISHED, timezone.now()
        locked.save()
        counters_add_on_commit(counters.example_created(example))
        if chat.asks_judge:
            transaction.on_commit(lambda: judge_queue(locked.pk))
    return example


def _worker_verdict(chat: ChatConfig, seats, positions) -> dict[int, bool]:
    if not chat.asks_worker:
        return {}
    if positions is None:
        raise ChatInvalid("say whether the models were fooled", code="chat.verdict_missing")
    known = {seat.position for seat in seats}
    if not set(positions) <= known:
        raise ChatInvalid("a fooled model that is not in the conversation", code="chat.verdict")
    return {seat.position: seat.position in positions for seat in seats}


def _store_example(conversation, actor, config, turns, seats, model_wrong, metadata, form):
    first = seats[0] if seats else None
    last_reply = next(
        (reply for reply in turns[-1].replies.all() if reply.status == ReplyStatus.DONE), None
    )
    return Example.objects.create(
        task_id=conversation.task_id,
        round_id=conversation.round_id,
        config_version_id=conversation.config_version_id,
        input={message_field(config): turns[0].message},
        status=ExampleStatus.MODEL_ANSWERED,
        model_id=first.model_id if first else None,
        model_version=(last_reply.model_version if last_reply else "")[:200],
        model_output={"turns": len(turns), "conversation": conversation.pk},
        model_attempts=1,
        model_wrong=model_wrong,
        verdict_source=VerdictSource.WORKER if model_wrong is not None else VerdictSource.NONE,
        metadata=metadata,
        time_spent_ms=form.time_spent_ms,
        **actor.create_kwargs(),
    )
