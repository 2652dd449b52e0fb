"""The live loop's periodic check: no example waits for a model that nobody will ask.

``live_watchdog_job`` runs every ``ANNOTATION_LIVE_WATCHDOG_SECONDS`` (RQ's cron scheduler,
``run_cron``). It

1. gives the claim of every drain whose lease lapsed (a worker killed mid-batch) back to the
   front of the pending list;
2. puts back on the list every example still awaiting its model after
   ``ANNOTATION_SLOW_MODEL_SECONDS`` that is in no list at all (its queueing was lost: a
   Redis that restarted without persistence, a web process that died after the commit);
3. queues a drain when examples are pending and none is queued.

A drain that answers an example twice stores the first answer only, so a check that races
with a slow drain costs a model call at most, never a wrong count.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from annotation.live.connection import redis_connection
from annotation.live.drain import DRAINS_KEY, GIVE_BACK, claimed_key, lease_key
from annotation.live.queue import PENDING_KEY, ensure_drain, pending_item
from annotation.models import Example, ExampleStatus

logger = logging.getLogger(__name__)

# The most examples one check puts back on the list from the database.
STRANDED_BATCH = 500


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def reclaim_lapsed_claims(connection) -> int:
    """Give the claims of drains whose lease lapsed back to the list; return how many."""
    given = 0
    for token in map(_text, connection.smembers(DRAINS_KEY)):
        if connection.exists(lease_key(token)):
            continue
        count = connection.eval(GIVE_BACK, 2, claimed_key(token), PENDING_KEY)
        connection.srem(DRAINS_KEY, token)
        if count:
            logger.warning("gave %s examples of the dead drain %s back to the list", count, token)
        given += count
    return given


def _queued_items(connection) -> set[str]:
    """Every entry of the pending list and of the drains' claims, read in one transaction."""
    tokens = list(map(_text, connection.smembers(DRAINS_KEY)))
    with connection.pipeline(transaction=True) as pipe:
        pipe.lrange(PENDING_KEY, 0, -1)
        for token in tokens:
            pipe.lrange(claimed_key(token), 0, -1)
        lists = pipe.execute()
    return {_text(item) for items in lists for item in items}


def requeue_stranded_examples(connection) -> int:
    """Put examples that waited too long in no list back on it; return how many."""
    cutoff = timezone.now() - timedelta(seconds=float(settings.ANNOTATION_SLOW_MODEL_SECONDS))
    waiting = list(
        Example.objects.filter(status=ExampleStatus.AWAITING_MODEL, updated_at__lt=cutoff)
        .order_by("updated_at")
        .values_list("pk", "model_attempts")[:STRANDED_BATCH]
    )
    if not waiting:
        return 0
    queued = _queued_items(connection)
    stranded = [
        pending_item(pk, attempt)
        for pk, attempt in waiting
        if pending_item(pk, attempt) not in queued
    ]
    if stranded:
        connection.rpush(PENDING_KEY, *stranded)
        logger.warning("put %s stranded examples back on the live list", len(stranded))
    return len(stranded)


def live_watchdog_job() -> dict[str, int]:
    """RQ job: see the module's docstring. Returns what it put back and whether it queued
    a drain."""
    connection = redis_connection()
    reclaimed = reclaim_lapsed_claims(connection)
    stranded = requeue_stranded_examples(connection)
    drained = ensure_drain()
    return {"reclaimed": reclaimed, "stranded": stranded, "drain_queued": int(drained)}
