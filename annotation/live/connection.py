"""The live loop's queue and Redis client, shared by the loop and the counters' buffer.

A module of its own, below both ``annotation.live.queue`` and ``annotation.stats.buffer``,
which use the same client.
"""

from __future__ import annotations

import threading
from typing import Any

import django_rq
from django.conf import settings
from django_rq.queues import get_redis_connection
from rq import get_current_job

LIVE_QUEUE = "live"

# One queue per name, process and settings: ``django_rq.get_queue`` builds a new Redis client
# with a pool of its own on every call; a kept one reuses its connections.
_queues: dict[str, Any] = {}
_queues_lock = threading.Lock()


def _web_queue(name: str = LIVE_QUEUE):
    """Queue ``name`` on a client that gives up at once (``WEB_REDIS_CLIENT_KWARGS``): a web
    request never waits out a Redis outage."""
    config = settings.RQ_QUEUES[name]
    key = repr((name, sorted(config.items())))
    queue = _queues.get(key)
    if queue is None:
        with _queues_lock:
            if key not in _queues:
                kwargs = {
                    **config.get("REDIS_CLIENT_KWARGS", {}),
                    **getattr(settings, "WEB_REDIS_CLIENT_KWARGS", {}),
                }
                connection = get_redis_connection({**config, "REDIS_CLIENT_KWARGS": kwargs})
                _queues[key] = django_rq.get_queue(name, connection=connection)
            queue = _queues[key]
    return queue


def rq_queue(name: str):
    """RQ queue ``name``: in an RQ job on the worker's own client (which rides out a Redis
    restart), elsewhere on the web's (``_web_queue``)."""
    job = get_current_job()
    if job is not None:
        return django_rq.get_queue(name, connection=job.connection)
    return _web_queue(name)


def live_queue():
    """The live queue (``rq_queue``)."""
    return rq_queue(LIVE_QUEUE)


def redis_connection():
    """The Redis client of the live loop and of the counters' buffer (``live_queue``)."""
    job = get_current_job()
    return job.connection if job is not None else _web_queue().connection
