"""Writes of the arena: start a battle, vote (which reveals the models), exclude a worker's
votes, freeze the board.

A battle is a chat conversation (``annotation.chat``) with two seats, model A at position 0
and model B at position 1, drawn by ``pairing`` over the round's models with an endpoint (chat
models, and text models when a battle has one turn: ``selectors.arena_candidates``); the turns are
sent, streamed, retried and cancelled by chat's services and pages. The vote finishes the
conversation (``chat.services.conversation_finish``: it becomes an Example), which is what
shows the models' names; a battle whose conversation was finished without a vote was revealed
without one, and takes no vote. Errors are ``core.errors.ServiceError`` with a code.
"""

from __future__ import annotations

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.arena import hygiene, pairing
from annotation.arena.board import board_view
from annotation.arena.board_page import board_changed
from annotation.arena.models import ArenaBattle, ArenaExclusion, ArenaSnapshot, Vote
from annotation.arena.selectors import (
    arena_board,
    arena_candidates,
    arena_config,
    pair_ahead,
    pair_battles,
    public_model_ids_hidden,
    votes_today,
)
from annotation.campaigns.actors import Actor
from annotation.chat.models import Conversation, ConversationSeat, ConversationStatus, ReplyStatus
from annotation.chat.selectors import is_owner, turn_finished, turns_with_replies
from annotation.chat.services import FinishForm, conversation_finish
from core.errors import Conflict, NotFound, PermissionDenied, ServiceError
from tasks.models import Round, Task
from tasks.permissions import can_manage_task

MAX_REASON = 2000


class ArenaInvalid(ServiceError):
    """What was sent does not fit the arena."""

    code = "arena.invalid"


def _check_cap(task: Task, actor: Actor, cap: int) -> None:
    if cap and votes_today(task, actor) >= cap:
        raise Conflict(
            f"you have cast today's {cap} votes in this arena; come back tomorrow (UTC)",
            code="arena.daily_cap",
        )


def _draw_pair(task: Task, round_: Round, rng: np.random.Generator):
    config, chat = arena_config(task)
    candidates, skipped = arena_candidates(round_, chat)
    models = {model.pk: model for model in candidates}
    if len(models) < 2:
        message = "an arena needs two models with an endpoint in the loop"
        if skipped:
            message += f" ({len(skipped)} text model(s) left out: {skipped[0].reason})"
        raise Conflict(message, code="arena.no_models")
    battles = pair_battles(task)
    if config.pairing == "uncertain":
        ahead = pair_ahead(task)
        first, second = pairing.uncertain_pair(
            list(models), rng, battles, ahead, config.min_battles_per_pair
        )
    else:
        first, second = pairing.uniform_pair(
            list(models), rng, battles, config.min_battles_per_pair
        )
    return models[first], models[second]


def battle_start(
    *, task: Task, round_: Round, actor: Actor, rng: np.random.Generator | None = None
) -> ArenaBattle:
    """Start a battle of ``actor``: a conversation with two drawn, hidden models."""
    if actor is None or not actor.is_authenticated:
        raise PermissionDenied("sign in to vote in the arena")
    if not task.active:
        raise PermissionDenied("this task takes no new battles")
    if round_ is None or round_.task_id != task.pk or not round_.is_open:
        raise Conflict("the round is closed", code="round.closed")
    config, _ = arena_config(task)
    _check_cap(task, actor, config.daily_vote_cap)
    model_a, model_b = _draw_pair(task, round_, rng or np.random.default_rng())
    with transaction.atomic():
        conversation = Conversation.objects.create(
            task=task, round=round_, config_version=task.current_config, **actor.create_kwargs()
        )
        ConversationSeat.objects.bulk_create(
            ConversationSeat(
                conversation=conversation, position=position, model=model, model_name=model.name
            )
            for position, model in enumerate((model_a, model_b))
        )
        return ArenaBattle.objects.create(
            conversation=conversation,
            task=task,
            model_a=model_a,
            model_b=model_b,
            model_a_name=model_a.name,
            model_b_name=model_b.name,
            **actor.create_kwargs(),
        )


def _answers(conversation: Conversation) -> dict[int, list[str]]:
    """Each seat's finished answers; refuses a vote before both have answered."""
    turns = turns_with_replies(conversation)
    if not turns:
        raise Conflict("send a message first: there is nothing to vote on", code="arena.empty")
    if not turn_finished(turns[-1]):
        raise Conflict("the models are still answering", code="arena.answering")
    answers: dict[int, list[str]] = {0: [], 1: []}
    for turn in turns:
        for reply in turn.replies.all():
            if reply.status == ReplyStatus.DONE and reply.position in answers:
                answers[reply.position].append(reply.text)
    if not (answers[0] and answers[1]):
        raise Conflict("both models must answer before you vote", code="arena.unanswered")
    return answers


def identity_void_reason(battle: ArenaBattle, answers: dict[int, list[str]], words) -> str:
    """Why the vote is void when an answer names a model ("" otherwise)."""
    phrases = hygiene.identity_phrases([*words, battle.model_a_name, battle.model_b_name])
    for position, texts in answers.items():
        for text in texts:
            found = hygiene.names_a_model(text, phrases)
            if found:
                side = "A" if position == 0 else "B"
                return f"answer {side} names a model ({found!r})"[:300]
    return ""


def battle_vote(battle: ArenaBattle, actor: Actor, vote: str) -> ArenaBattle:
    """Record ``actor``'s vote on their battle, finish its conversation and reveal it."""
    if vote not in Vote.values:
        raise ArenaInvalid(f"vote one of {', '.join(Vote.values)}", code="arena.bad_vote")
    if actor is None or not is_owner(battle.conversation, actor):
        raise NotFound("no such battle")
    config, _ = arena_config(battle.task)
    with transaction.atomic():
        locked = ArenaBattle.objects.select_for_update().get(pk=battle.pk)
        conversation = Conversation.objects.select_related("config_version", "task").get(
            pk=locked.conversation_id
        )
        if locked.revealed_at or locked.vote or conversation.status != ConversationStatus.ACTIVE:
            raise Conflict(
                "the models of this battle were already shown: it takes no vote",
                code="arena.revealed",
            )
        _check_cap(battle.task, actor, config.daily_vote_cap)
        answers = _answers(conversation)
        reason = ""
        if config.void_identity_votes:
            reason = identity_void_reason(locked, answers, config.identity_words)
        conversation_finish(conversation, actor, _finish_form(conversation))
        now = timezone.now()
        locked.vote, locked.voted_at, locked.revealed_at = vote, now, now
        locked.void_reason = reason
        locked.length_a = sum(len(text) for text in answers[0])
        locked.length_b = sum(len(text) for text in answers[1])
        locked.save()
        transaction.on_commit(lambda: board_changed(locked.task_id))
    return locked


def _finish_form(conversation: Conversation) -> FinishForm:
    chat = conversation.config_version.parsed.chat
    spent = (timezone.now() - conversation.created_at).total_seconds() * 1000
    return FinishForm(
        fooled_positions=() if chat.asks_worker else None,
        time_spent_ms=int(min(spent, 2**31 - 1)),
    )


def _require_manager(task: Task, user) -> None:
    if user is None or not can_manage_task(user, task):
        raise PermissionDenied("only the task's owners can do this")


def exclusion_create(task: Task, *, by, rater: str, reason: str) -> ArenaExclusion:
    """Leave the votes of ``rater`` ("u:<user id>" or "c:<campaign worker id>") out of the
    board, with the owner's ``reason`` (kept, shown and exported)."""
    _require_manager(task, by)
    arena_config(task)
    reason = (reason or "").strip()
    if not reason:
        raise ArenaInvalid("give a reason for leaving the votes out", code="arena.no_reason")
    if len(reason) > MAX_REASON:
        raise ArenaInvalid(f"the reason is over {MAX_REASON} characters", code="arena.no_reason")
    kind, _, number = (rater or "").partition(":")
    if kind not in ("u", "c") or not number.isdigit():
        raise ArenaInvalid("name a rater as u:<id> or c:<id>", code="arena.bad_rater")
    column = "user_id" if kind == "u" else "campaign_worker_id"
    if not ArenaBattle.objects.filter(task=task, **{column: int(number)}).exists():
        raise NotFound("this rater has no battle in the arena")
    exclusion = ArenaExclusion.objects.create(
        task=task, reason=reason, created_by=by, **{column: int(number)}
    )
    transaction.on_commit(lambda: board_changed(task.pk))
    return exclusion


def snapshot_create(task: Task, *, by, name: str = "") -> ArenaSnapshot:
    """Freeze the board as it is now (owners)."""
    _require_manager(task, by)
    board = arena_board(task)
    name = (name or "").strip()[:200]
    body = {"task": task.code, **board.as_dict()}
    public = board_view(board, public_model_ids_hidden(task))
    public_body = {"task": task.code, **public.as_dict()}
    return ArenaSnapshot.objects.create(
        task=task, name=name, board=body, public_board=public_body, created_by=by
    )
