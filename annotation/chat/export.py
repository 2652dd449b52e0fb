"""Exports of finished conversations, as JSON Lines people train with (streamed).

- ``conversation_lines``: one conversation per line in the OpenAI ``messages`` format
  (``{"messages": [{"role": "user", ...}, {"role": "assistant", ...}, ...], "metadata": {...}}``).
  The assistant message of a turn is the answer the conversation went on from: the worker's
  pick when one was best, else the first model's answer. ``metadata`` holds everything else:
  the ids, the anonymised worker, the models with their verdicts, every turn's replies (model,
  version, latency, token counts, finish reason), choices and sliders, the rating, free text,
  metadata answers, the judge's verdict and the validation state.
- ``preference_lines``: one pair per line for every turn where the worker picked a best
  answer and another model answered too, in the conversational layout of Hugging Face TRL's
  DPO trainer: ``{"prompt": [messages so far, ending with the user's], "chosen":
  [{"role": "assistant", ...}], "rejected": [{"role": "assistant", ...}]}``. Ties and "all
  bad" give no pair. With ``with_metadata`` a ``metadata`` object names the conversation, the
  turn, both models and the slider.

Conversations are read by primary key in chunks (keyset), each chunk with its seats, turns
and replies in one query each, so memory depends on the chunk size only. Worker ids are
anonymised as in the examples export (``annotation.export.anonymous_worker_id``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db.models import Prefetch

from annotation.chat.models import (
    ChatReply,
    ChatTurn,
    Conversation,
    ConversationSeat,
    ConversationStatus,
    ReplyStatus,
)
from annotation.chat.selectors import assistant_text
from annotation.export import anonymous_worker_id
from tasks.config.chat import CHOICE_BEST

CHUNK_SIZE = 200


def _chunks(task, round_=None) -> Iterator[list[Conversation]]:
    turns = Prefetch(
        "turns",
        queryset=ChatTurn.objects.order_by("number").prefetch_related(
            Prefetch("replies", queryset=ChatReply.objects.order_by("position"))
        ),
    )
    seats = Prefetch("seats", queryset=ConversationSeat.objects.order_by("position"))
    base = Conversation.objects.filter(task=task, status=ConversationStatus.FINISHED)
    if round_ is not None:
        base = base.filter(round=round_)
    last = 0
    while True:
        chunk = list(
            base.filter(pk__gt=last)
            .select_related("example", "round")
            .prefetch_related(seats, turns)
            .order_by("pk")[:CHUNK_SIZE]
        )
        if not chunk:
            return
        yield chunk
        last = chunk[-1].pk


def _followed_position(turn: ChatTurn) -> int | None:
    if turn.choice == CHOICE_BEST and turn.best_position is not None:
        return turn.best_position
    done = [reply.position for reply in turn.replies.all() if reply.status == ReplyStatus.DONE]
    return done[0] if done else None


def conversation_messages(conversation: Conversation) -> list[dict[str, str]]:
    return messages_of_turns(conversation.turns.all())


def messages_of_turns(turns) -> list[dict[str, str]]:
    """The turns as OpenAI messages: each worker message and the answer followed."""
    messages: list[dict[str, str]] = []
    for turn in turns:
        messages.append({"role": "user", "content": turn.message})
        position = _followed_position(turn)
        answer = assistant_text(turn, position) if position is not None else None
        if answer is not None:
            messages.append({"role": "assistant", "content": answer})
    return messages


def _reply_record(reply: ChatReply, names: dict[int, str]) -> dict[str, Any]:
    return {
        "model": names.get(reply.position),
        "model_id": reply.model_id,
        "model_version": reply.model_version,
        "status": reply.status,
        "text": reply.text,
        "latency_ms": reply.latency_ms,
        "first_token_ms": reply.first_token_ms,
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "finish_reason": reply.finish_reason,
        "attempts": reply.attempt,
    }


def conversation_metadata(conversation: Conversation) -> dict[str, Any]:
    seats = list(conversation.seats.all())
    names = {seat.position: seat.model_name for seat in seats}
    example = conversation.example
    return {
        "conversation_id": conversation.pk,
        "example_id": conversation.example_id,
        "task": conversation.task.code,
        "round": conversation.round.number,
        "worker": anonymous_worker_id(conversation.user_id, conversation.campaign_worker_id),
        "models": [
            {
                "name": seat.model_name,
                "model_id": seat.model_id,
                "fooled": seat.fooled,
                "worker_fooled": seat.worker_fooled,
                "judge_fooled": seat.judge_fooled,
            }
            for seat in seats
        ],
        "turns": [
            {
                "number": turn.number,
                "choice": turn.choice or None,
                "best": names.get(turn.best_position) if turn.choice == CHOICE_BEST else None,
                "slider": turn.slider,
                "replies": [_reply_record(reply, names) for reply in turn.replies.all()],
            }
            for turn in conversation.turns.all()
        ],
        "rating": conversation.rating,
        "free_text": conversation.free_text,
        "answers": conversation.metadata,
        "model_wrong": conversation.model_wrong,
        "judge_reply": conversation.judge_reply or None,
        "validation_state": example.validation_state if example is not None else None,
        "created_at": conversation.created_at.isoformat(),
        "finished_at": conversation.finished_at.isoformat() if conversation.finished_at else None,
    }


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def conversation_lines(task, round_=None) -> Iterator[str]:
    """One finished conversation of ``task`` (or ``round_``) per line, oldest first."""
    for chunk in _chunks(task, round_):
        for conversation in chunk:
            conversation.task = task
            yield _line(
                {
                    "messages": conversation_messages(conversation),
                    "metadata": conversation_metadata(conversation),
                }
            )


def preference_pairs(conversation: Conversation, *, with_metadata: bool = False):
    """The (prompt, chosen, rejected) pairs of one conversation (see the module docstring)."""
    names = {seat.position: seat.model_name for seat in conversation.seats.all()}
    prompt: list[dict[str, str]] = []
    for turn in conversation.turns.all():
        prompt = [*prompt, {"role": "user", "content": turn.message}]
        replies = {r.position: r for r in turn.replies.all() if r.status == ReplyStatus.DONE}
        best = replies.get(turn.best_position) if turn.choice == CHOICE_BEST else None
        if best is not None:
            for position, other in replies.items():
                if position == best.position:
                    continue
                pair: dict[str, Any] = {
                    "prompt": prompt,
                    "chosen": [{"role": "assistant", "content": best.text}],
                    "rejected": [{"role": "assistant", "content": other.text}],
                }
                if with_metadata:
                    pair["metadata"] = {
                        "conversation_id": conversation.pk,
                        "turn": turn.number,
                        "chosen_model": names.get(best.position),
                        "rejected_model": names.get(position),
                        "slider": turn.slider,
                    }
                yield pair
        position = _followed_position(turn)
        answer = assistant_text(turn, position) if position is not None else None
        if answer is not None:
            prompt = [*prompt, {"role": "assistant", "content": answer}]


def preference_lines(task, round_=None, *, with_metadata: bool = False) -> Iterator[str]:
    """Every preference pair of ``task``'s finished conversations, one per line."""
    for chunk in _chunks(task, round_):
        for conversation in chunk:
            for pair in preference_pairs(conversation, with_metadata=with_metadata):
                yield _line(pair)
