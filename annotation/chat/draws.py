"""Which models a worker meets: a fair draw of the round's chat models for a conversation.

Candidates are the round's models in the loop that can chat (``openai_chat``, with an
endpoint, healthy or not yet checked). They are ordered by how often this worker met them in
the task (fewest first), then by how often anyone met them in the round (fewest first: the
draw balances the models over workers), then at random; the first ``models_per_turn`` take the
seats. With ``unique_models``, models the worker already met are left out (Dynabench's
``is_unique``). Two aggregate queries and one for the candidates.
"""

from __future__ import annotations

import random

from django.db.models import Count

from annotation.campaigns.actors import Actor
from annotation.chat.models import ConversationSeat
from core.errors import Conflict
from models_hub.models import Protocol, RegisteredModel
from models_hub.selectors import PICKABLE_STATUSES
from tasks.config.chat import ChatConfig


def chat_candidates(round_) -> list[RegisteredModel]:
    return list(
        RegisteredModel.objects.filter(
            round_models__round=round_,
            status__in=PICKABLE_STATUSES,
            protocol=Protocol.OPENAI_CHAT,
        )
        .exclude(endpoint_url="")
        .select_related("task")
        .order_by("pk")
    )


def _counts(queryset) -> dict[int, int]:
    rows = queryset.values("model_id").annotate(n=Count("id")).values_list("model_id", "n")
    return dict(rows)


def seat_models(
    task, round_, actor: Actor, chat: ChatConfig, rng: random.Random | None = None
) -> list[RegisteredModel]:
    """The models for a new conversation of ``actor`` (see the module docstring).

    Raises ``Conflict`` when no model can chat, or every one was met already under
    ``unique_models``.
    """
    candidates = chat_candidates(round_)
    if not candidates:
        raise Conflict("no chat model is in the loop of this round", code="chat.no_model")
    column, value = actor.id_column()
    met = _counts(
        ConversationSeat.objects.filter(
            conversation__task=task, **{f"conversation__{column}": value}
        )
    )
    if chat.unique_models:
        candidates = [model for model in candidates if not met.get(model.pk)]
        if not candidates:
            raise Conflict(
                "you have talked with every model of this task already", code="chat.no_new_model"
            )
    overall = _counts(ConversationSeat.objects.filter(conversation__round=round_))
    rng = rng or random.Random()
    ordered = sorted(
        candidates,
        key=lambda model: (met.get(model.pk, 0), overall.get(model.pk, 0), rng.random()),
    )
    seats = ordered[: chat.models_per_turn]
    rng.shuffle(seats)  # the order of the seats says nothing about how often a model was met
    return seats
