"""Reads of single examples and of the owners' review queue."""

from __future__ import annotations

from urllib.parse import urlencode

from django.db.models import Q

from annotation.campaigns.actors import Actor
from annotation.models import Example, ExampleStatus, ValidationState
from annotation.services.answers import MODEL_ANSWER_FIELDS
from core.errors import NotFound
from tasks.models import Task
from tasks.permissions import can_review_examples


def example_get_for_actor(task: Task, example_id: int, actor: Actor) -> Example:
    """The actor's own example ``example_id`` of ``task`` (owners may see any), with its
    config version, context and model; NotFound otherwise."""
    try:
        example = Example.objects.select_related("config_version", "context", "model").get(
            task=task, pk=example_id
        )
    except Example.DoesNotExist:
        raise NotFound("no such example") from None
    own = (actor.user is not None and example.user_id == actor.user.pk) or (
        actor.campaign_worker is not None and example.campaign_worker_id == actor.campaign_worker.pk
    )
    if not own and not (actor.user is not None and can_review_examples(actor.user, task)):
        raise NotFound("no such example")
    return example


def example_count_for_actor(task: Task, actor: Actor) -> int:
    """How many examples of ``task`` the actor has written (retracted ones included)."""
    return Example.objects.filter(task=task, **actor.filter_kwargs()).count()


def external_validator_url(config, task: Task, actor: Actor) -> str | None:
    """The survey the config's ``external_validator`` sends the actor to once they have
    written its number of examples (with its ``artifacts`` as query parameters), else None."""
    validator = config.external_validator
    if validator is None or not actor.is_authenticated:
        return None
    if example_count_for_actor(task, actor) < validator.required_examples:
        return None
    if not validator.parameters:
        return validator.url
    separator = "&" if "?" in validator.url else "?"
    return validator.url + separator + urlencode(dict(validator.parameters))


def example_model_answer(example_id: int) -> dict:
    """What the live loop writes on example ``example_id`` (``MODEL_ANSWER_FIELDS``)."""
    values = Example.objects.filter(pk=example_id).values_list(*MODEL_ANSWER_FIELDS).get()
    return dict(zip(MODEL_ANSWER_FIELDS, values, strict=True))


REVIEW_PAGE_SIZE = 50


def review_queue(
    task: Task,
    min_flags: int = 0,
    disagreement: bool = False,
    include_settled: bool = False,
    limit: int = REVIEW_PAGE_SIZE,
) -> list[Example]:
    """Examples for the owners' review: most flagged first, optionally with disagreement.

    Disagreement means validators gave different verdicts (at least two kinds of label).
    Settled examples are left out unless ``include_settled`` (an owner may override them).
    """
    queryset = Example.objects.filter(task=task, retracted=False).exclude(
        status=ExampleStatus.AWAITING_MODEL
    )
    if not include_settled:
        queryset = queryset.filter(validation_state=ValidationState.PENDING)
    if min_flags:
        queryset = queryset.filter(flag_count__gte=min_flags)
    if disagreement:
        queryset = queryset.filter(
            (Q(correct_count__gt=0) & (Q(incorrect_count__gt=0) | Q(flagged_count__gt=0)))
            | (Q(incorrect_count__gt=0) & Q(flagged_count__gt=0))
        )
    return list(
        queryset.select_related("config_version", "context", "user").order_by(
            "-flag_count", "-validation_count", "id"
        )[:limit]
    )
