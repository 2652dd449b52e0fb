"""Writes of the models hub: registration, the card, publishing, the loop, token rotation.

Calls to a model's endpoint (health probes, live predictions) are ``models_hub.calls``.

Every refusal is a ``core.errors.ServiceError`` with a stable code; permission failures are
``core.errors.PermissionDenied``. The auth token never appears in a message or a log line.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import TextField, Value

from core.errors import Conflict, PermissionDenied, ServiceError
from models_hub import queues, sealing, selectors
from models_hub.budget import budget_charge
from models_hub.calls import announce_rows_changed
from models_hub.errors import (
    ModelAddressRefused,
    ModelUnreachable,
)
from models_hub.keyring import site_key_ring
from models_hub.models import BudgetKind, ModelStatus, Protocol, RegisteredModel, RoundModel
from models_hub.signals import model_registered, model_rows_changed
from models_hub.ssrf import check_url
from models_hub.trial import model_trial
from tasks.models import Round, Task
from tasks.permissions import can_manage_task, can_register_model
from tasks.selectors import round_current

logger = logging.getLogger(__name__)

CARD_FIELDS = ("name", "description", "params", "languages", "license", "source_url", "card")
ENDPOINT_FIELDS = (
    "protocol",
    "endpoint_url",
    "connect_timeout",
    "read_timeout",
    "batch_size",
    "max_concurrency",
    "options",
)
FLAG_FIELDS = ("is_anonymous",)
# ``auth_token``: a new token; ``clear_auth_token=True`` removes the stored one.
TOKEN_FIELDS = ("auth_token", "clear_auth_token")
REGISTER_FIELDS = (*CARD_FIELDS, *ENDPOINT_FIELDS, *FLAG_FIELDS, "auth_token", "is_published")
UPDATE_FIELDS = (*CARD_FIELDS, *ENDPOINT_FIELDS, *FLAG_FIELDS, *TOKEN_FIELDS)


def _reject_unknown(fields: Mapping[str, Any], allowed: Iterable[str]) -> None:
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        raise TypeError(f"unexpected model fields: {', '.join(unknown)}")


def model_check_endpoint(protocol: str, endpoint_url: str) -> str:
    """Return the endpoint URL to store for ``protocol``, or raise a ``ServiceError``.

    Checks the scheme and, by resolving the host now, the SSRF rules under
    ``settings.MODELS_HUB_ALLOWED_HOSTS`` (the transport checks again at connect time).
    """
    endpoint_url = (endpoint_url or "").strip()
    if protocol not in Protocol.values:
        raise ServiceError(f"unknown protocol {protocol!r}", code="model.protocol_unknown")
    if protocol == Protocol.NONE:
        if endpoint_url:
            raise ServiceError(
                "a model without a protocol takes predictions files only; leave the URL blank",
                code="model.endpoint_unexpected",
            )
        return ""
    if not endpoint_url:
        raise ServiceError("enter the model's endpoint URL", code="model.endpoint_required")
    try:
        check_url(endpoint_url, settings.MODELS_HUB_ALLOWED_HOSTS)
    except ModelAddressRefused as error:
        raise ServiceError(str(error), code="model.address_refused") from None
    except ModelUnreachable as error:
        raise ServiceError(str(error), code="model.host_unresolvable") from None
    return endpoint_url


def read_timeout_problem(read_timeout: float | None, cap: float) -> str:
    """Return why ``read_timeout`` is refused under ``cap`` (seconds), or ""."""
    if read_timeout is None or read_timeout <= cap:
        return ""
    return (
        f"The read timeout is at most {cap:g} s for this model; "
        "ask the site's staff to raise its cap."
    )


def _full_clean(model: RegisteredModel, *, check_cap: bool = True) -> None:
    """Run the field validators and (``check_cap``) the read-timeout cap; turn failures into
    a ServiceError."""
    details: dict[str, list[str]] = {}
    try:
        model.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as error:
        details = {
            field: [str(m) for m in messages] for field, messages in error.message_dict.items()
        }
        # The token field's own messages never quote the value, but keep it out regardless.
        details.pop("auth_token", None)
    problem = ""
    if check_cap:
        cap = selectors.model_read_timeout_cap(model)
        problem = read_timeout_problem(model.read_timeout, cap)
    if problem and "read_timeout" not in details:
        details["read_timeout"] = [problem]
    if details:
        message = "the model registration is not valid"
        if list(details) == ["read_timeout"]:
            message = details["read_timeout"][0]
        raise ServiceError(message, code="model.invalid", details=details)


def model_register(
    *, task: Task, owner, in_loop: bool | None = None, trial: bool = True, **fields: Any
) -> RegisteredModel:
    """Register a model for ``task`` owned by ``owner`` and queue a first health check.

    ``trial``: first send the endpoint one request built from the task's config and refuse a
    model whose answer cannot fit the task (``models_hub.trial``, ``model.answer_unfit``);
    False when the caller's form has just sent it.

    Spends a unit of the owner's daily budget on the task (``models_hub.budget``; the
    task's owners apart): beyond it ``model.registration_limit``, 429.

    ``in_loop`` puts the model in the loop of the task's current round (its latest open one).
    Left out (None), it is on when ``owner`` owns the task and the model has an endpoint, and
    off otherwise; asking for it is refused for someone who does not own the task
    (``PermissionDenied``) or for a model without an endpoint (``model.no_endpoint``).
    """
    _reject_unknown(fields, REGISTER_FIELDS)
    if not can_register_model(owner, task):
        raise PermissionDenied("you cannot register models for this task")
    manages = can_manage_task(owner, task)
    if in_loop and not manages:
        raise PermissionDenied("only the task's owners choose the models in the loop")
    protocol = fields.get("protocol", Protocol.DYNATASK)
    fields["endpoint_url"] = model_check_endpoint(protocol, fields.get("endpoint_url", ""))
    fields["auth_token"] = (fields.get("auth_token") or "").strip()
    fields.setdefault("options", {})
    model = RegisteredModel(task=task, owner=owner, **fields)
    _full_clean(model)
    if trial:
        model_trial(model, task.config, task.code)
    if in_loop is None:
        in_loop = manages and model.has_endpoint
    elif in_loop:
        _check_loop_models(task, [model])
    try:
        with transaction.atomic():
            budget_charge(owner, task, BudgetKind.REGISTRATION)
            model.save()
            if in_loop:
                _loop_join_current_round(model)
    except IntegrityError:
        raise Conflict(
            f"this task already has a model named {model.name!r}", code="model.name_taken"
        ) from None
    if model.has_endpoint:
        transaction.on_commit(lambda: queues.enqueue_health_check(model.pk))
    # Evaluation belongs to leaderboards, which listens; after commit so it sees the row.
    transaction.on_commit(lambda: _announce_registration(model))
    logger.info("model %s registered for task %s by user %s", model.pk, task.code, owner.pk)
    return model


def _loop_join_current_round(model: RegisteredModel) -> None:
    """Put ``model`` in the loop of its task's current round (none open: nothing to do)."""
    round_ = round_current(model.task)
    if round_ is not None:
        RoundModel.objects.create(round=round_, model=model)


def _announce_registration(model: RegisteredModel) -> None:
    for receiver, outcome in model_registered.send_robust(sender=RegisteredModel, model=model):
        if isinstance(outcome, Exception):
            # The registration stands; a failed hand-over must not turn into an error page.
            logger.error(
                "model %s: receiver %s failed: %s",
                model.pk,
                getattr(receiver, "__name__", receiver),
                outcome,
            )


def _require_editor(model: RegisteredModel, user) -> None:
    if not selectors.model_can_edit(model, user):
        raise PermissionDenied("only the model's owner or the task's owners can change it")


TOKEN_OWNER_ONLY = "model.token_owner_only"


def endpoint_origin(url: str) -> tuple[str, str, int | None]:
    """Return ``(scheme, host, port)`` of ``url``, the port filled in for http and https."""
    parts = urlsplit((url or "").strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def token_move_problem(
    model: RegisteredModel,
    user,
    *,
    endpoint_url: str | None = None,
    owner=None,
    keeps_token: bool = True,
) -> str:
    """Return why ``user`` may not make this change to ``model`` with its token, or "".

    A token goes only where its owner sent it: while a token is stored (and the change
    keeps it: no new token, no clearing), only the model's owner may move the endpoint to
    another scheme, host or port (``endpoint_url``), and nobody may hand the model to
    another owner (``owner``). Everyone else (the task's owners, staff, superusers) clears
    the token in the same change, or asks the model's owner.
    """
    if not (model.pk and model.has_token and keeps_token):
        return ""
    if owner is not None and owner.pk != model.owner_id:
        return (
            "A model changes owner without its token: clear the stored token in the same "
            "change (the new owner enters their own)."
        )
    # ``model`` holds the stored values: forms check in ``clean()``, before the instance
    # takes the new ones, and the service before it sets them.
    moves = endpoint_url is not None and (
        endpoint_origin(endpoint_url) != endpoint_origin(model.endpoint_url)
    )
    if moves and not (user and user.pk == model.owner_id):
        return (
            "Only the model's owner may move its endpoint to another scheme, host or port "
            "while a token is stored: the token would be sent there. Clear the stored token "
            "in the same change (the API's clear_auth_token), or ask the model's owner."
        )
    return ""


def model_update_card(model: RegisteredModel, user, **fields: Any) -> RegisteredModel:
    """Update the card, endpoint settings or token of ``model``; never changes publishing.

    ``auth_token`` (non-empty) replaces the token, ``clear_auth_token=True`` removes it; a
    blank or missing ``auth_token`` keeps the stored one. A changed endpoint is checked again
    and resets the health status to unknown; a changed endpoint or token queues a health
    check. Moving the endpoint to another scheme, host or port with the stored token is the
    model owner's alone (``token_move_problem``: 403 ``model.token_owner_only``). A changed
    endpoint spends a unit of the editor's daily budget on the task (``models_hub.budget``:
    429 ``model.endpoint_change_limit``).
    """
    _reject_unknown(fields, UPDATE_FIELDS)
    _require_editor(model, user)
    new_token = (fields.pop("auth_token", None) or "").strip()
    clear_token = bool(fields.pop("clear_auth_token", False))
    problem = token_move_problem(
        model,
        user,
        endpoint_url=fields.get("endpoint_url"),
        keeps_token=not (new_token or clear_token),
    )
    if problem:
        raise PermissionDenied(problem, code=TOKEN_OWNER_ONLY)
    changed: list[str] = []
    for name, value in fields.items():
        if getattr(model, name) != value:
            setattr(model, name, value)
            changed.append(name)
    if "protocol" in changed or "endpoint_url" in changed:
        model.endpoint_url = model_check_endpoint(model.protocol, model.endpoint_url)
        model.status = ModelStatus.UNKNOWN
        changed += ["endpoint_url", "status"]
    if new_token:
        model.auth_token = new_token
        changed.append("auth_token")
    elif clear_token and model.auth_token:
        model.auth_token = ""
        changed.append("auth_token")
    if not changed:
        return model
    # A stored timeout above a cap set later stands until it is changed (calls use the lower).
    _full_clean(model, check_cap="read_timeout" in changed)
    try:
        with transaction.atomic():
            if "endpoint_url" in changed:
                budget_charge(user, model.task, BudgetKind.ENDPOINT_CHANGE)
            # update_fields: a concurrent publish toggle or health write is never overwritten.
            model.save(update_fields=sorted({*changed, "updated_at"}))
    except IntegrityError:
        raise Conflict(
            f"this task already has a model named {model.name!r}", code="model.name_taken"
        ) from None
    # A new token may cure a failing model (one whose stored token no key decrypted, say).
    if {"status", "auth_token"} & set(changed) and model.has_endpoint:
        transaction.on_commit(lambda: queues.enqueue_health_check(model.pk))
    return model


def model_set_read_timeout_cap(model: RegisteredModel, user, cap: float | None) -> RegisteredModel:
    """Set ``model``'s own cap on its read timeout (None: the site's cap); staff with the
    ``models_hub.raise_read_timeout`` permission only (superusers have it)."""
    if not (user and user.is_authenticated and user.has_perm("models_hub.raise_read_timeout")):
        raise PermissionDenied("only the site's staff change a model's read-timeout cap")
    if cap is not None and not 0.1 <= cap <= 600:
        message = "a model's read-timeout cap is between 0.1 and 600 s"
        raise ServiceError(message, code="model.invalid", details={"read_timeout_cap": [message]})
    if model.read_timeout_cap == cap:
        return model
    # A cap below the stored read timeout is allowed: calls use the lower of the two.
    model.read_timeout_cap = cap
    model.save(update_fields=["read_timeout_cap", "updated_at"])
    return model


def model_set_published(model: RegisteredModel, user, published: bool) -> RegisteredModel:
    """Publish or unpublish ``model`` (its owner or the task's owners)."""
    _require_editor(model, user)
    if model.is_published != bool(published):
        model.is_published = bool(published)
        model.save(update_fields=["is_published", "updated_at"])
    return model


def model_set_status(model: RegisteredModel, user, status: str) -> RegisteredModel:
    """Disable a model (``disabled``) or re-enable it (``unknown`` until its next check)."""
    _require_editor(model, user)
    if status not in (ModelStatus.DISABLED, ModelStatus.UNKNOWN):
        raise ServiceError("a model can only be disabled or re-enabled", code="model.status")
    model.status = status
    model.save(update_fields=["status", "updated_at"])
    return model


def _check_loop_models(task: Task, models: Sequence[RegisteredModel]) -> None:
    for model in models:
        if model.task_id != task.pk:
            raise ServiceError(
                f"model {model.name!r} belongs to another task", code="model.wrong_task"
            )
        if not model.has_endpoint:
            raise ServiceError(
                f"model {model.name!r} has no endpoint and cannot answer live",
                code="model.no_endpoint",
            )


def model_set_in_loop(
    round: Round, models: Iterable[RegisteredModel], user
) -> list[RegisteredModel]:
    """Make ``models`` exactly the in-the-loop models of ``round`` (task owners only)."""
    models = list(models)
    if not can_manage_task(user, round.task):
        raise PermissionDenied("only the task's owners choose the models in the loop")
    _check_loop_models(round.task, models)
    wanted = {model.pk for model in models}
    with transaction.atomic():
        RoundModel.objects.filter(round=round).exclude(model_id__in=wanted).delete()
        RoundModel.objects.bulk_create(
            [RoundModel(round=round, model=model) for model in models], ignore_conflicts=True
        )
        announce_rows_changed(round.task_id)
    return models


def model_set_rounds(model: RegisteredModel, rounds: Iterable[Round], user) -> None:
    """Make ``rounds`` exactly the rounds whose loop includes ``model`` (task owners only)."""
    rounds = list(rounds)
    if not can_manage_task(user, model.task):
        raise PermissionDenied("only the task's owners choose the models in the loop")
    if any(round.task_id != model.task_id for round in rounds):
        raise ServiceError("a round of another task was chosen", code="model.wrong_task")
    if rounds:
        _check_loop_models(model.task, [model])
    wanted = {round.pk for round in rounds}
    with transaction.atomic():
        RoundModel.objects.filter(model=model).exclude(round_id__in=wanted).delete()
        RoundModel.objects.bulk_create(
            [RoundModel(round=round, model=model) for round in rounds], ignore_conflicts=True
        )
        announce_rows_changed(model.task_id)


def loop_carry_over(previous: Round, new_round: Round) -> int:
    """Put the models in the loop of ``previous`` in the loop of ``new_round``; return how
    many. Kept for ``tasks.signals.round_opened`` (the round's owner asked for it there)."""
    links = [
        RoundModel(round=new_round, model_id=model_id)
        for model_id in RoundModel.objects.filter(round=previous)
        .order_by("model_id")
        .values_list("model_id", flat=True)
    ]
    if not links:
        return 0
    RoundModel.objects.bulk_create(links, ignore_conflicts=True)
    announce_rows_changed(new_round.task_id)
    return len(links)


@dataclasses.dataclass
class TokenRotation:
    """What ``model_tokens_rotate`` did: tokens sealed again with the first key, tokens that
    were stored unencrypted and are now sealed, and the models (id, name) whose token no key
    decrypts (their owners must enter it again)."""

    rotated: int = 0
    sealed: int = 0
    unreadable: list[tuple[int, str]] = dataclasses.field(default_factory=list)


def model_tokens_rotate() -> TokenRotation:
    """Seal every stored token again with the first key of ``DYNATASK_SECRET_KEYS``.

    Run after putting a new key first and before dropping the old one (docs/security.md).
    A token stored unencrypted is sealed; one that no key decrypts is left as it is and
    reported. A token replaced while this runs keeps its new value. Running it again is
    harmless. The cached rows of the tasks touched are forgotten (``model_rows_changed``).
    """
    ring = site_key_ring()
    report = TokenRotation()
    task_ids: set[int] = set()
    rows = RegisteredModel.objects.exclude(auth_token="").order_by("pk")
    for pk, name, task_id, stored in rows.values_list("pk", "name", "task_id", "auth_token"):
        try:
            if sealing.is_sealed(stored):
                new_value, counter = sealing.rotate(stored, ring), "rotated"
            else:
                new_value, counter = sealing.seal(stored, ring), "sealed"
        except sealing.TokenUnreadable:
            report.unreadable.append((pk, name))
            continue
        # Compared as the stored text: the field would seal a plain value before comparing.
        stored_text = Value(stored, output_field=TextField())
        if RegisteredModel.objects.filter(pk=pk, auth_token=stored_text).update(
            auth_token=new_value
        ):
            setattr(report, counter, getattr(report, counter) + 1)
            task_ids.add(task_id)
    if task_ids:
        transaction.on_commit(
            lambda: model_rows_changed.send(sender=RegisteredModel, task_ids=sorted(task_ids)),
            robust=True,
        )
    logger.info(
        "model tokens: %s rotated, %s sealed, %s unreadable",
        report.rotated,
        report.sealed,
        len(report.unreadable),
    )
    return report
