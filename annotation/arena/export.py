"""The arena's battles as JSON Lines, one voted battle per line, oldest vote first (streamed).

Each line holds the battle (both models, the vote, when it was cast and revealed, why it is
void or excluded, whether it counts on the board), each side's conversation in the OpenAI
``messages`` format (``conversation_a``, ``conversation_b``: every worker message and that
model's own answer), chat's ``metadata`` of the conversation (``chat.export``: replies with
latency and tokens, the anonymised worker), and, when the vote chose a side, the pair as
preference data in the conversational layout of TRL's DPO trainer that chat's
``preferences.jsonl`` uses: ``prompt`` is the first worker message, ``chosen`` and
``rejected`` the rest of the winning and losing side's conversations (one assistant message
for a one-turn battle). A tie or "both bad" gives ``preference: null``.

A reader who may not see a model's card (unpublished, not theirs) reads "an unpublished
model" for its name, wherever it would appear (``without_names``).

Battles are read by primary key in chunks with their conversations, seats, turns and replies
(one query each per chunk), and the exclusions once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db.models import Prefetch

from annotation.arena.models import ArenaBattle, ArenaExclusion
from annotation.arena.serializers import UNLISTED_NAME, shown_void_reason
from annotation.chat.export import conversation_metadata
from annotation.chat.models import ChatReply, ChatTurn, ConversationSeat
from annotation.chat.selectors import assistant_text

CHUNK_SIZE = 200


def side_messages(turns, position: int) -> list[dict[str, str]]:
    """One side's conversation: each worker message and that model's answer."""
    messages: list[dict[str, str]] = []
    for turn in turns:
        messages.append({"role": "user", "content": turn.message})
        answer = assistant_text(turn, position)
        if answer is not None:
            messages.append({"role": "assistant", "content": answer})
    return messages


def preference(vote: str, side_a: list[dict], side_b: list[dict]) -> dict[str, Any] | None:
    """The DPO pair of a decided vote: the first message as prompt, each side's rest."""
    if vote not in ("a", "b") or not side_a:
        return None
    chosen, rejected = (side_a, side_b) if vote == "a" else (side_b, side_a)
    return {"prompt": chosen[:1], "chosen": chosen[1:], "rejected": rejected[1:]}


def _exclusion_reasons(task) -> dict[str, str]:
    reasons: dict[str, str] = {}
    for exclusion in ArenaExclusion.objects.filter(task=task).order_by("pk"):
        key = f"u:{exclusion.user_id}" if exclusion.user_id else f"c:{exclusion.campaign_worker_id}"
        reasons.setdefault(key, exclusion.reason)
    return reasons


def _chunks(task) -> Iterator[list[ArenaBattle]]:
    turns = Prefetch(
        "conversation__turns",
        queryset=ChatTurn.objects.order_by("number").prefetch_related(
            Prefetch("replies", queryset=ChatReply.objects.order_by("position"))
        ),
    )
    seats = Prefetch("conversation__seats", queryset=ConversationSeat.objects.order_by("position"))
    base = ArenaBattle.objects.filter(task=task).exclude(vote="")
    last = 0
    while True:
        chunk = list(
            base.filter(pk__gt=last)
            .select_related("conversation", "conversation__round", "conversation__example")
            .prefetch_related(seats, turns)
            .order_by("pk")[:CHUNK_SIZE]
        )
        if not chunk:
            return
        yield chunk
        last = chunk[-1].pk


def battle_record(battle: ArenaBattle, excluded: str | None) -> dict[str, Any]:
    turns = list(battle.conversation.turns.all())
    side_a, side_b = side_messages(turns, 0), side_messages(turns, 1)
    return {
        "battle_id": battle.pk,
        "task": battle.task.code,
        "model_a": battle.model_a_name,
        "model_b": battle.model_b_name,
        "vote": battle.vote,
        "voted_at": battle.voted_at.isoformat() if battle.voted_at else None,
        "revealed_at": battle.revealed_at.isoformat() if battle.revealed_at else None,
        "void_reason": battle.void_reason or None,
        "excluded_reason": excluded,
        "counted": not battle.void_reason and excluded is None,
        "length_a": battle.length_a,
        "length_b": battle.length_b,
        "conversation_a": side_a,
        "conversation_b": side_b,
        "preference": preference(battle.vote, side_a, side_b),
        "metadata": conversation_metadata(battle.conversation),
    }


def without_names(record: dict[str, Any], battle: ArenaBattle, hidden) -> dict[str, Any]:
    """``record`` with the names (and reported versions) of the models of ``hidden`` replaced
    by a neutral label, and its void reason unquoted, for a reader who may not see them."""
    positions = {
        position
        for position, model_id in enumerate((battle.model_a_id, battle.model_b_id))
        if model_id in hidden
    }
    if not positions:
        return record
    names = {0: record["model_a"], 1: record["model_b"]}
    gone = {names[position] for position in positions}
    for position in positions:
        record["model_" + "ab"[position]] = UNLISTED_NAME
    record["void_reason"] = shown_void_reason(record["void_reason"] or "", True) or None
    metadata = record["metadata"]
    for seat in metadata.get("models", []):
        if seat.get("name") in gone:
            seat["name"] = UNLISTED_NAME
    for turn in metadata.get("turns", []):
        if turn.get("best") in gone:
            turn["best"] = UNLISTED_NAME
        for reply in turn.get("replies", []):
            if reply.get("model") in gone:
                reply["model"], reply["model_version"] = UNLISTED_NAME, ""
    return record


def battle_lines(task, hidden: frozenset[int] = frozenset()) -> Iterator[str]:
    """Every voted battle of ``task``, one JSON object per line; the models of ``hidden``
    (those the reader may not see: ``model_ids_hidden_from``) are not named."""
    reasons = _exclusion_reasons(task)
    for chunk in _chunks(task):
        for battle in chunk:
            battle.task = task
            battle.conversation.task = task
            rater = f"u:{battle.user_id}" if battle.user_id else f"c:{battle.campaign_worker_id}"
            record = battle_record(battle, reasons.get(rater))
            if hidden:
                record = without_names(record, battle, hidden)
            yield json.dumps(record, ensure_ascii=False) + "\n"
