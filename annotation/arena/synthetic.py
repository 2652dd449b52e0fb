"""Synthetic votes for the demo arena and the benchmarks: battles whose outcomes are drawn from
known strengths, stored as finished one-turn conversations like real ones.

``synthetic_battles`` draws each battle's pair with the arena's own ``pairing.uniform_pair``,
a voter at random, and the outcome from the Bradley-Terry probability of the strengths (on the
arena's scale) with a share of ties; each battle is a finished conversation with one turn and
both models' (canned) answers, so the board, the raters' agreement and the data export treat
it like any other. Rows go in with ``bulk_create`` (a few queries per thousand battles).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.arena import pairing, ratings
from annotation.arena.board_page import board_changed
from annotation.arena.models import ArenaBattle
from annotation.chat.models import (
    ChatReply,
    ChatTurn,
    Conversation,
    ConversationSeat,
    ConversationStatus,
    ReplyStatus,
)

PROMPTS = (
    "Why does Mars look red?",
    "How should I brew green tea?",
    "How do I fix a flat bicycle tyre?",
    "What is the largest planet?",
    "Is black tea stronger than green tea?",
    "How often should I oil my bicycle chain?",
)


def draw_outcome(rng: np.random.Generator, gap: float, tie_share: float) -> str:
    """A vote for a battle whose A is ``gap`` rating points above B."""
    if rng.random() < tie_share:
        return "tie" if rng.random() < 0.7 else "both_bad"
    a_wins = 1.0 / (1.0 + ratings.BASE ** (-gap / ratings.SCALE))
    return "a" if rng.random() < a_wins else "b"


def synthetic_battles(
    task,
    round_,
    models: Sequence,
    voters: Sequence,
    strengths: dict[int, float],
    count: int,
    *,
    seed: int = 0,
    tie_share: float = 0.15,
) -> int:
    """Store ``count`` voted battles of ``voters`` (users) among ``models``; return ``count``.

    ``strengths`` maps a model id to its true rating (arena scale)."""
    rng = np.random.default_rng(seed)
    by_id = {model.pk: model for model in models}
    start = timezone.now() - timedelta(minutes=count)
    plans = []
    met: dict[tuple[int, int], int] = {}
    for number in range(count):
        first, second = pairing.uniform_pair(list(by_id), rng, met, 1)
        pair = (min(first, second), max(first, second))
        met[pair] = met.get(pair, 0) + 1
        gap = strengths[first] - strengths[second]
        voter = voters[int(rng.integers(len(voters)))]
        when = start + timedelta(minutes=number)
        plans.append((by_id[first], by_id[second], voter, draw_outcome(rng, gap, tie_share), when))
    with transaction.atomic():
        _store(task, round_, plans, rng)
        transaction.on_commit(lambda: board_changed(task.pk))
    return count


def _store(task, round_, plans, rng) -> None:
    version = task.current_config
    conversations = Conversation.objects.bulk_create(
        Conversation(
            task=task,
            round=round_,
            config_version=version,
            user=voter,
            status=ConversationStatus.FINISHED,
            finished_at=when,
        )
        for _a, _b, voter, _vote, when in plans
    )
    seats, turns = [], []
    for conversation, (model_a, model_b, _voter, _vote, _when) in zip(
        conversations, plans, strict=True
    ):
        for position, model in enumerate((model_a, model_b)):
            seats.append(
                ConversationSeat(
                    conversation=conversation,
                    position=position,
                    model=model,
                    model_name=model.name,
                )
            )
        message = PROMPTS[int(rng.integers(len(PROMPTS)))]
        turns.append(ChatTurn(conversation=conversation, number=1, message=message))
    ConversationSeat.objects.bulk_create(seats)
    turns = ChatTurn.objects.bulk_create(turns)
    replies, battles = [], []
    for conversation, turn, (model_a, model_b, voter, vote, when) in zip(
        conversations, turns, plans, strict=True
    ):
        texts = []
        for position, model in enumerate((model_a, model_b)):
            text = f"(a synthetic answer to {turn.message!r} for the demo arena, side {position})"
            texts.append(text)
            replies.append(
                ChatReply(
                    turn=turn,
                    position=position,
                    model=model,
                    status=ReplyStatus.DONE,
                    text=text,
                    finish_reason="stop",
                    finished_at=when,
                )
            )
        battles.append(
            ArenaBattle(
                conversation=conversation,
                task=task,
                user=voter,
                model_a=model_a,
                model_b=model_b,
                model_a_name=model_a.name,
                model_b_name=model_b.name,
                vote=vote,
                voted_at=when,
                revealed_at=when,
                length_a=len(texts[0]),
                length_b=len(texts[1]),
            )
        )
    ChatReply.objects.bulk_create(replies)
    ArenaBattle.objects.bulk_create(battles)
