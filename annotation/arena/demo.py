"""The demo arena: the demo chat models in an arena task, with a few hundred synthetic votes.

``seed_arena`` (run by ``scripts/dev.sh run`` through ``annotation/seed.py``, after the models
hub registered the chat task's demo models) registers, for the ``arena`` demo task, the two
demo chat models and a terse variant of each (the same server with ``max_tokens``), all in
the loop of its open rounds and pointed at the chat models' current addresses; then, once,
stores ``VOTES`` synthetic votes of a few demo raters drawn from ``STRENGTHS``, so that the
board shows ratings, intervals and ties at first start. Idempotent.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.arena.models import ArenaBattle
from annotation.arena.synthetic import synthetic_battles
from core.errors import ServiceError
from models_hub import services as hub_services
from models_hub.calls import model_record_health
from models_hub.models import Protocol, RegisteredModel
from tasks.models import Task

ARENA_TASK = "arena"
SOURCE_TASK = "chat"
VOTES = 360
RATERS = ("worker1", "worker2", "arena-rater-1", "arena-rater-2", "arena-rater-3")
# Demo model name in the chat task -> (arena variants: name suffix, max_tokens, true rating).
VARIANTS = {
    "Notes retrieval chat (demo)": (("", None, 1120.0), (", terse", 12, 1060.0)),
    "Pattern-rule chat (demo)": (("", None, 940.0), (", terse", 8, 920.0)),
}


def _arena_model(
    task: Task, owner, source: RegisteredModel, suffix: str, max_tokens
) -> RegisteredModel:
    name = f"{source.name}{suffix}"
    options = dict(source.options or {})
    if max_tokens is not None:
        options["max_tokens"] = max_tokens
    fields = {
        "endpoint_url": source.endpoint_url,
        "protocol": Protocol.OPENAI_CHAT,
        "options": options,
        "description": source.description,
    }
    model = RegisteredModel.objects.filter(task=task, name=name).first()
    if model is None:
        model = hub_services.model_register(
            task=task, owner=owner, name=name, is_published=True, in_loop=False, **fields
        )
    elif model.endpoint_url != source.endpoint_url or model.options != options:
        model = hub_services.model_update_card(model, owner, **fields)
    rounds = set(task.rounds.filter(is_open=True)) | set(model.in_loop_rounds.all())
    hub_services.model_set_rounds(model, rounds, owner)
    return model


def _raters():
    User = get_user_model()
    raters = []
    for username in RATERS:
        user, created = User.objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        raters.append(user)
    return raters


def seed_arena(say) -> None:
    """Register the arena's demo models and seed its votes once (see the module docstring)."""
    task = Task.objects.filter(code=ARENA_TASK).first()
    owner = task.owners.order_by("pk").first() if task is not None else None
    if task is None or owner is None:
        return
    sources = RegisteredModel.objects.filter(task__code=SOURCE_TASK, name__in=VARIANTS).exclude(
        endpoint_url=""
    )
    models, strengths = [], {}
    try:
        with transaction.atomic():
            for source in sources.order_by("name"):
                for suffix, max_tokens, rating in VARIANTS[source.name]:
                    model = _arena_model(task, owner, source, suffix, max_tokens)
                    models.append(model)
                    strengths[model.pk] = rating
    except ServiceError as error:
        say(f"cannot register the arena's demo models: {error.message}")
        return
    if len(models) < 2:
        say("the arena demo needs the chat demo models: none is registered yet")
        return
    for model in models:
        model_record_health(model.pk)
    if ArenaBattle.objects.filter(task=task).exists():
        return
    round_ = task.rounds.filter(is_open=True).order_by("-number").first()
    synthetic_battles(task, round_, models, _raters(), strengths, VOTES, seed=34)
    say(f"seeded {VOTES} synthetic arena votes among {len(models)} models")
