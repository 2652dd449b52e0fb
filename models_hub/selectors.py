"""Reads of the models hub: endpoint specs, the models in the loop, visible models."""

from __future__ import annotations

import hashlib
import json
import random

from django.conf import settings
from django.db.models import F, Q
from django.urls import reverse

from core.errors import NotFound
from models_hub import sealing
from models_hub.client import EndpointSpec
from models_hub.errors import ModelConfigurationError, ModelTokenUnreadable
from models_hub.keyring import site_key_ring
from models_hub.models import ModelStatus, RegisteredModel, RoundModel
from tasks.models import Round, Task
from tasks.permissions import can_manage_task, can_view_task
from tasks.selectors import RoundWarning

ANONYMOUS_OWNER = "anonymous"
TOKEN_REENTER = "enter the token again"
# A model whose health was never checked may still be picked: the seeder and registration
# check health right away, and a failing live call is a normal, handled outcome.
PICKABLE_STATUSES = (ModelStatus.HEALTHY, ModelStatus.UNKNOWN)


def model_read_timeout_cap(model: RegisteredModel) -> float:
    """Return the most ``read_timeout`` may be for ``model``: its own cap (set by staff) or
    the site's (``MODELS_HUB_READ_TIMEOUT_CAP``)."""
    if model.read_timeout_cap is not None:
        return float(model.read_timeout_cap)
    return float(settings.MODELS_HUB_READ_TIMEOUT_CAP)


ENDPOINT_FIELDS = (
    "endpoint_url",
    "protocol",
    "auth_token",
    "connect_timeout",
    "read_timeout",
    "read_timeout_cap",
    "batch_size",
    "max_concurrency",
    "options",
)


def endpoint_fingerprint(model: RegisteredModel) -> str:
    """A digest of the columns ``endpoint_spec`` is built from (the sealed token included):
    a process that keeps specs keys them by it, so a changed row is never served stale."""
    values = [getattr(model, name) for name in ENDPOINT_FIELDS]
    text = json.dumps([model.pk, *values], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def endpoint_spec(model: RegisteredModel) -> EndpointSpec:
    """Return the client's view of ``model``: URL, protocol, token, limits and the allowlist.

    The read timeout is at most the model's cap (``model_read_timeout_cap``), whatever was
    stored before the cap. The token is decrypted here, and only here. Raises
    ``ModelConfigurationError`` for a model without an endpoint (protocol ``none``) and
    ``ModelTokenUnreadable`` when its stored token cannot be decrypted.
    """
    if not model.has_endpoint:
        raise ModelConfigurationError("this model has no endpoint (predictions-file only)")
    try:
        token = sealing.unseal(model.auth_token, site_key_ring())
    except sealing.TokenUnreadable:
        raise ModelTokenUnreadable(
            f"the stored token of model {model.name!r} cannot be decrypted with the site's "
            f"keys (DYNATASK_SECRET_KEYS): {TOKEN_REENTER}"
        ) from None
    return EndpointSpec(
        url=model.endpoint_url,
        protocol=model.protocol,
        token=token or None,
        connect_timeout=model.connect_timeout,
        read_timeout=min(model.read_timeout, model_read_timeout_cap(model)),
        batch_size=model.batch_size,
        max_concurrency=model.max_concurrency,
        options=model.options or {},
        allowed_hosts=tuple(settings.MODELS_HUB_ALLOWED_HOSTS),
        max_response_bytes=settings.MODELS_HUB_MAX_RESPONSE_BYTES,
    )


def model_token_unreadable(model: RegisteredModel) -> bool:
    """Return True when ``model`` has a stored token that the site's keys cannot decrypt
    (its owner must enter it again); the token itself is never returned."""
    return not sealing.can_unseal(model.auth_token, site_key_ring())


def _with_task(queryset):
    # ``predict_live`` needs the task's code and current config: load them in the same query.
    return queryset.select_related("task", "task__current_config")


def models_in_loop(round: Round) -> list[RegisteredModel]:
    """Return the models in the loop of ``round`` (one query), ordered by name."""
    return list(
        _with_task(RegisteredModel.objects.filter(round_models__round=round)).order_by("name", "pk")
    )


def _pickable(round_ids):
    return (
        RegisteredModel.objects.filter(
            round_models__round_id__in=round_ids, status__in=PICKABLE_STATUSES
        )
        .exclude(protocol="none")
        .exclude(endpoint_url="")
    )


def is_pickable(model: RegisteredModel) -> bool:
    """Return True when ``model`` may answer in a loop now (``_pickable``'s rule, in Python)."""
    return model.status in PICKABLE_STATUSES and model.has_endpoint


def loop_members(round_ids) -> list[tuple[RegisteredModel, int]]:
    """Every model in the loops of rounds ``round_ids``, whatever its health, each with its
    round's id; one query. ``is_pickable`` tells which may answer."""
    if not round_ids:
        return []
    rows = RegisteredModel.objects.filter(round_models__round_id__in=round_ids).annotate(
        loop_round_id=F("round_models__round_id")
    )
    return [(model, model.loop_round_id) for model in rows.order_by("pk")]


def model_pick_for_round(round: Round, rng: random.Random | None = None) -> RegisteredModel | None:
    """Pick a random in-the-loop model of ``round`` that is healthy or not yet checked, with
    its task and config; None when the round has no such model. One query."""
    picked = list(_with_task(_pickable([round.pk])).order_by("pk"))
    if not picked:
        return None
    return (rng or random).choice(picked)


def _label_owner(model: RegisteredModel, user, manages_task: bool) -> RegisteredModel:
    """Set ``model.owner_display``: the owner's name, or "anonymous" for other people."""
    sees_owner = manages_task or (user.is_authenticated and model.owner_id == user.pk)
    if model.is_anonymous and not sees_owner:
        model.owner_display = ANONYMOUS_OWNER
    else:
        model.owner_display = model.owner.get_username()
    return model


def model_list_for_task(task: Task, user) -> list[RegisteredModel]:
    """Return the models of ``task`` that ``user`` may see, each with ``owner_display``.

    Everyone sees published models; a user also sees their own; task owners see all.
    One query (plus one for ownership when the task's owners are not prefetched).
    """
    manages = can_manage_task(user, task)
    models = RegisteredModel.objects.filter(task=task).select_related("owner")
    if not manages:
        visible = Q(is_published=True)
        if user.is_authenticated:
            visible |= Q(owner=user)
        models = models.filter(visible)
    return [_label_owner(model, user, manages) for model in models.order_by("name", "pk")]


def model_ids_hidden_from(task: Task, user) -> frozenset[int]:
    """Return the ids of ``task``'s models whose card is a 404 to ``user``.

    The rule of ``model_get_visible``: unpublished models but the user's own, and none for
    the task's owners. One query (plus one for ownership when the task's owners are not
    prefetched).
    """
    if can_manage_task(user, task):
        return frozenset()
    models = RegisteredModel.objects.filter(task=task, is_published=False)
    if user is not None and user.is_authenticated:
        models = models.exclude(owner=user)
    return frozenset(models.values_list("pk", flat=True))


def model_get_visible(pk: int, user) -> RegisteredModel:
    """Return model ``pk`` with ``owner_display`` if ``user`` may see it, else raise NotFound."""
    model = (
        RegisteredModel.objects.select_related("owner", "task", "task__current_config")
        .filter(pk=pk)
        .first()
    )
    if model is None or not can_view_task(user, model.task):
        raise NotFound(f"no model {pk}")
    manages = can_manage_task(user, model.task)
    is_owner = user.is_authenticated and model.owner_id == user.pk
    if not (model.is_published or is_owner or manages):
        raise NotFound(f"no model {pk}")
    return _label_owner(model, user, manages)


def model_can_edit(model: RegisteredModel, user) -> bool:
    """Return True for the model's owner and the owners of its task."""
    if not (user and user.is_authenticated):
        return False
    return model.owner_id == user.pk or can_manage_task(user, model.task)


def model_ids_to_check() -> list[int]:
    """Return the ids of every model with an endpoint that is not disabled."""
    return list(
        RegisteredModel.objects.exclude(protocol="none")
        .exclude(endpoint_url="")
        .exclude(status=ModelStatus.DISABLED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def loop_health(task: Task) -> list[tuple[Round, list[RegisteredModel]]]:
    """Return each open round of ``task`` (newest first) with the models in its loop, by
    name, whatever their health (two queries): what the owners watch."""
    rounds = list(task.rounds.filter(is_open=True).order_by("-number"))
    members: dict[int, list[RegisteredModel]] = {round_.pk: [] for round_ in rounds}
    for model, round_id in loop_members(list(members)):
        members[round_id].append(model)
    return [
        (round_, sorted(members[round_.pk], key=lambda model: (model.name, model.pk)))
        for round_ in rounds
    ]


def rounds_with_models(task: Task) -> list[tuple[Round, list[RegisteredModel]]]:
    """Return each round of ``task`` with its in-loop models (two queries)."""
    rounds = list(task.rounds.order_by("number"))
    links: dict[int, list[RegisteredModel]] = {round.pk: [] for round in rounds}
    for link in RoundModel.objects.filter(round__task=task).select_related("model"):
        links[link.round_id].append(link.model)
    return [(round, links[round.pk]) for round in rounds]


LOOP_FIX_LABEL = "Choose the models in the loop"


def loop_warnings(task: Task, rounds) -> list[RoundWarning]:
    """Return ``loop.empty`` for each of ``rounds`` with no model in its loop and
    ``loop.silent`` for each whose loop models may none answer now; one query.

    Registered with ``tasks.selectors.register_round_check`` (see ``apps.py``).
    """
    members: dict[int, list[RegisteredModel]] = {round_.pk: [] for round_ in rounds}
    for model, round_id in loop_members(list(members)):
        members[round_id].append(model)
    # Where the loop is set: the task's loop page.
    fix = {"fix_url": reverse("models_hub:loop", args=[task.code]), "fix_label": LOOP_FIX_LABEL}
    warnings = []
    for round_ in rounds:
        models = members[round_.pk]
        if not models:
            warnings.append(
                RoundWarning(
                    "loop.empty",
                    round_.number,
                    f"Round {round_.number} has no model in the loop: examples are saved "
                    "without a model's answer.",
                    **fix,
                )
            )
        elif not any(is_pickable(model) for model in models):
            warnings.append(
                RoundWarning(
                    "loop.silent",
                    round_.number,
                    f"No model in the loop of round {round_.number} is answering (their last "
                    "health checks failed, or they are disabled): examples are saved without "
                    "a model's answer.",
                    **fix,
                )
            )
    return warnings
