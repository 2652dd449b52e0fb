"""Reads of chat collection: a worker's conversation, what each model is sent, the
transcript (for the page, validators and exports) and the fooling rates per model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Prefetch, Q

from annotation.campaigns.actors import Actor
from annotation.chat.models import (
    ChatReply,
    ChatTurn,
    Conversation,
    ConversationSeat,
    ConversationStatus,
    ReplyStatus,
)
from core.errors import NotFound
from models_hub.models import RegisteredModel
from tasks.config.chat import CHOICE_BEST, ChatConfig
from tasks.permissions import can_manage_task

# A reply still "streaming" this long after its time limit was lost (its pump died): the
# page offers a retry.
STALE_MARGIN_SECONDS = 15


def is_owner(conversation: Conversation, actor: Actor | None) -> bool:
    if actor is None:
        return False
    if actor.user is not None:
        return conversation.user_id == actor.user.pk
    worker = actor.campaign_worker
    return worker is not None and conversation.campaign_worker_id == worker.pk


def conversation_for_actor(
    pk: int, actor: Actor | None, *, code: str | None = None
) -> Conversation:
    """The actor's own conversation ``pk`` (of task ``code``) with its task and seats."""
    queryset = Conversation.objects.select_related(
        "task", "round", "config_version", "example"
    ).prefetch_related(Prefetch("seats", queryset=ConversationSeat.objects.select_related("model")))
    if code is not None:
        queryset = queryset.filter(task__code=code)
    conversation = queryset.filter(pk=pk).first()
    if conversation is None or not is_owner(conversation, actor):
        raise NotFound("no such conversation")
    return conversation


def conversation_locked(pk: int, actor: Actor | None) -> Conversation:
    """The actor's own conversation ``pk``, locked for the transaction it is read in, with
    its config version and its seats with their models (two queries): the one read of the
    send, which needs nothing else of the conversation."""
    seats = Prefetch("seats", queryset=ConversationSeat.objects.select_related("model"))
    conversation = (
        Conversation.objects.select_for_update(of=("self",))
        .select_related("config_version")
        .prefetch_related(seats)
        .filter(pk=pk)
        .first()
    )
    if conversation is None or not is_owner(conversation, actor):
        raise NotFound("no such conversation")
    return conversation


def reply_for_actor(
    conversation_pk: int, reply_id: int, actor: Actor, *, code: str | None = None
) -> ChatReply:
    """Reply ``reply_id`` of the actor's own conversation ``conversation_pk`` (of task
    ``code``), with its turn, conversation and config version: one query, for the event
    stream, which needs nothing else before it waits."""
    queryset = ChatReply.objects.select_related("turn__conversation__config_version").filter(
        pk=reply_id, turn__conversation_id=conversation_pk
    )
    if code is not None:
        queryset = queryset.filter(turn__conversation__task__code=code)
    reply = queryset.first()
    if reply is None or not is_owner(reply.turn.conversation, actor):
        raise NotFound("no such reply")
    return reply


def chat_config(conversation: Conversation) -> ChatConfig:
    """The chat section of the config version the conversation runs under."""
    config = conversation.config_version.parsed
    if config is None or config.chat is None:
        raise NotFound("this task has no chat")
    return config.chat


def turns_with_replies(conversation: Conversation, *, up_to: int | None = None) -> list[ChatTurn]:
    """The turns in order (up to number ``up_to``), each with ``replies`` by position (two
    queries)."""
    replies = Prefetch("replies", queryset=ChatReply.objects.order_by("position"))
    turns = conversation.turns.order_by("number")
    if up_to is not None:
        turns = turns.filter(number__lte=up_to)
    return list(turns.prefetch_related(replies))


@dataclass(frozen=True)
class PastReply:
    position: int
    status: str
    text: str


class PastReplies(tuple):
    """A past turn's replies by position, read like a prefetched ``turn.replies``."""

    def all(self) -> PastReplies:
        return self


@dataclass(frozen=True)
class PastTurn:
    """A turn as the send needs it (its rules and the models' messages), read as values."""

    pk: int
    number: int
    message: str
    choice: str
    best_position: int | None
    replies: PastReplies


def turn_history(conversation: Conversation) -> list[PastTurn]:
    """The turns in order with their replies' position, status and text: two queries of plain
    values whatever the length of the conversation (no model instance, no per-turn queryset).
    ``assistant_text``, ``seat_messages``, ``turn_finished`` and ``turn_needs_choice`` read
    them as they read turns with their replies."""
    replies: dict[int, list[PastReply]] = {}
    rows = (
        ChatReply.objects.filter(turn__conversation=conversation)
        .order_by("position")
        .values_list("turn_id", "position", "status", "text")
    )
    for turn_id, position, status, text in rows:
        replies.setdefault(turn_id, []).append(PastReply(position, status, text))
    turns = conversation.turns.order_by("number").values_list(
        "pk", "number", "message", "choice", "best_position"
    )
    return [
        PastTurn(pk, number, message, choice, best, PastReplies(replies.get(pk, ())))
        for pk, number, message, choice, best in turns
    ]


def last_turn(conversation: Conversation) -> ChatTurn | None:
    """The conversation's last turn with its ``replies`` by position (two queries, whatever
    the length of the conversation), or None before the first."""
    replies = Prefetch("replies", queryset=ChatReply.objects.order_by("position"))
    return conversation.turns.order_by("-number").prefetch_related(replies).first()


def assistant_text(turn: ChatTurn, position: int) -> str | None:
    """What a model sees as the assistant's answer to ``turn``: the worker's pick when one was
    best (PRISM-style: the conversation goes on from the chosen answer), else its own reply."""
    replies = {reply.position: reply for reply in turn.replies.all()}
    if turn.choice == CHOICE_BEST and turn.best_position in replies:
        chosen = replies[turn.best_position]
        if chosen.status == ReplyStatus.DONE:
            return chosen.text
    own = replies.get(position)
    return own.text if own is not None and own.status == ReplyStatus.DONE else None


def own_text(turn: ChatTurn, position: int) -> str | None:
    """The reply of the model at ``position`` to ``turn``, when it finished."""
    reply = next((reply for reply in turn.replies.all() if reply.position == position), None)
    return reply.text if reply is not None and reply.status == ReplyStatus.DONE else None


def seat_messages(turns: list[ChatTurn], turn: ChatTurn, position: int) -> list[dict[str, str]]:
    """The messages sent to the model at ``position`` for ``turn``: the earlier turns, then
    the turn's message."""
    messages: list[dict[str, str]] = []
    for earlier in turns:
        if earlier.number >= turn.number:
            break
        messages.append({"role": "user", "content": earlier.message})
        answer = assistant_text(earlier, position)
        if answer is not None:
            messages.append({"role": "assistant", "content": answer})
    messages.append({"role": "user", "content": turn.message})
    return messages


def turn_finished(turn: ChatTurn) -> bool:
    return all(reply.status != ReplyStatus.STREAMING for reply in turn.replies.all())


def turn_needs_choice(turn: ChatTurn, chat: ChatConfig) -> bool:
    """Whether the worker must still choose among the answers of ``turn``."""
    if not chat.turn_choice or turn.choice:
        return False
    return sum(1 for reply in turn.replies.all() if reply.status == ReplyStatus.DONE) > 1


UNLISTED_SUFFIX = "(unpublished)"


def seat_label(seat: ConversationSeat, reveal: bool, unlisted: bool = False) -> str:
    """The seat's model name once revealed, else "Model A"...; "Model A (unpublished)" for a
    model whose card the worker may not see, even after the reveal."""
    if reveal and unlisted:
        return f"Model {seat.letter} {UNLISTED_SUFFIX}"
    if reveal and seat.model_name:
        return seat.model_name
    return f"Model {seat.letter}"


def unlisted_positions(conversation: Conversation, seats) -> frozenset[int]:
    """The seats whose model's card is a 404 to the conversation's worker (unpublished, not
    theirs, and they are not one of the task's owners): not named to them after the reveal.

    One query; two more when there is such a seat and the worker is a signed-in user.
    """
    ids = [seat.model_id for seat in seats if seat.model_id is not None]
    if not ids:
        return frozenset()
    rows = RegisteredModel.objects.filter(pk__in=ids, is_published=False).values_list(
        "pk", "owner_id"
    )
    worker = conversation.user_id
    hidden = {pk for pk, owner in rows if worker is None or owner != worker}
    if hidden and worker is not None and can_manage_task(conversation.user, conversation.task):
        return frozenset()
    return frozenset(seat.position for seat in seats if seat.model_id in hidden)


def reveals(conversation: Conversation, chat: ChatConfig, *, viewer_is_validator=False) -> bool:
    """Model names show once the conversation is finished, or always unless hidden."""
    if not chat.hide_model_identities:
        return True
    return conversation.status == ConversationStatus.FINISHED and not viewer_is_validator


@dataclass
class Transcript:
    """A conversation ready to show or export."""

    conversation: Conversation
    seats: list[ConversationSeat]
    turns: list[ChatTurn]
    labels: dict[int, str] = field(default_factory=dict)
    revealed: bool = False  # whether the models' names (and versions) show
    # Seats named neutrally even when revealed (``unlisted_positions``).
    unlisted: frozenset[int] = frozenset()


def transcript(conversation: Conversation, *, reveal: bool) -> Transcript:
    seats = list(conversation.seats.all())
    unlisted = unlisted_positions(conversation, seats) if reveal else frozenset()
    labels = {seat.position: seat_label(seat, reveal, seat.position in unlisted) for seat in seats}
    turns = turns_with_replies(conversation)
    return Transcript(conversation, seats, turns, labels, reveal, unlisted)


def active_conversation(task, round_, actor: Actor) -> Conversation | None:
    column, value = actor.id_column()
    return (
        Conversation.objects.filter(
            task=task, round=round_, status=ConversationStatus.ACTIVE, **{column: value}
        )
        .order_by("-id")
        .first()
    )


def chat_model_rates(task) -> list[dict[str, Any]]:
    """Per model of ``task``: finished conversations it was in, how many fooled it, the rate."""
    rows = (
        ConversationSeat.objects.filter(
            conversation__task=task, conversation__status=ConversationStatus.FINISHED
        )
        .values("model_id", "model_name")
        .annotate(
            n_conversations=Count("id"),
            n_fooled=Count("id", filter=Q(fooled=True)),
            n_decided=Count("id", filter=Q(fooled__isnull=False)),
        )
        .order_by("model_name")
    )
    return [
        {
            "model_id": row["model_id"],
            "model_name": row["model_name"],
            "conversations": row["n_conversations"],
            "fooled": row["n_fooled"],
            "decided": row["n_decided"],
            "rate": (row["n_fooled"] / row["n_decided"]) if row["n_decided"] else None,
        }
        for row in rows
    ]


def example_transcript(example) -> Transcript | None:
    """The conversation of a chat task's ``example`` as validators see it (model names
    hidden when the config hides them), or None for an ordinary example (no query)."""
    config = example.config_version.parsed
    if config is None or config.chat is None:
        return None
    conversation = (
        Conversation.objects.select_related("config_version")
        .prefetch_related("seats")
        .filter(example_id=example.pk)
        .first()
    )
    if conversation is None:
        return None
    chat = conversation.config_version.parsed.chat
    reveal = chat is not None and not chat.hide_model_identities
    return transcript(conversation, reveal=reveal)
