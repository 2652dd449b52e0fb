"""Rules shared by the annotation services: invalid input, who wrote an example, row locks
and retries after a deadlock."""

from __future__ import annotations

import functools
import logging

from django.db import OperationalError, transaction

from annotation.campaigns.actors import Actor
from annotation.models import Example, ValidationState
from core.errors import Conflict, NotFound, PermissionDenied, ServiceError

logger = logging.getLogger(__name__)

# PostgreSQL's "deadlock detected" and "could not serialize access": the transaction was
# rolled back as a whole, so running it again is safe.
RETRYABLE_SQLSTATES = frozenset({"40P01", "40001"})
DEADLOCK_ATTEMPTS = 3


class InvalidInput(ServiceError):
    """What the worker entered does not fit the config; ``details["issues"]`` lists why."""

    code = "example.invalid"


def issues_or_raise(issues, message: str) -> None:
    if issues:
        raise InvalidInput(message, details={"issues": issues})


def is_creator(example: Example, actor: Actor) -> bool:
    if actor.user is not None:
        return example.user_id == actor.user.pk
    return actor.campaign_worker is not None and example.campaign_worker_id == (
        actor.campaign_worker.pk
    )


def require_creator(example: Example, actor: Actor) -> None:
    if not is_creator(example, actor):
        raise PermissionDenied("only the example's writer can do this")


SETTLED_MESSAGE = (
    "This example is settled: its writer can no longer change it. The task's owners review "
    "settled examples."
)


def require_unsettled(example: Example) -> None:
    """Refuse a writer's change to a settled example (``Conflict`` ``example.settled``)."""
    if example.validation_state != ValidationState.PENDING:
        raise Conflict(SETTLED_MESSAGE, code="example.settled")


def example_locked(example_id: int, *related: str) -> Example:
    """Lock and return example ``example_id`` with its config version and ``related`` (call
    inside a transaction); NotFound when it does not exist."""
    try:
        return (
            Example.objects.select_for_update(of=("self",))
            .select_related("config_version", *related)
            .get(pk=example_id)
        )
    except Example.DoesNotExist:
        raise NotFound("no such example") from None


def retry_on_deadlock(function):
    """Run ``function`` again (up to ``DEADLOCK_ATTEMPTS`` times) after a deadlock; inside an
    outer transaction nothing is retried (only the outermost block may start over)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        for attempt in range(1, DEADLOCK_ATTEMPTS + 1):
            try:
                return function(*args, **kwargs)
            except OperationalError as error:
                retryable = getattr(error.__cause__, "sqlstate", None) in RETRYABLE_SQLSTATES
                if (
                    not retryable
                    or attempt == DEADLOCK_ATTEMPTS
                    or transaction.get_connection().in_atomic_block
                ):
                    raise
                logger.warning("%s: deadlock, attempt %s, retrying", function.__name__, attempt)
        raise AssertionError("unreachable")

    return wrapper
