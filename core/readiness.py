"""``GET /readyz``: whether this web process can serve, for the load balancer's health check.

It asks the database for ``SELECT 1`` and Redis for ``PING``, each with a short timeout, and
answers 200 ``{"status": "ready"}`` or 503 ``{"status": "unavailable", "failed": [...]}``
naming only which of ``database`` and ``redis`` failed: no address, no error text. No session,
no sign-in and no template: one query and one round trip, cheap enough for a check every
second or two from each load balancer.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from redis import Redis
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

REDIS_TIMEOUT_SECONDS = 0.5
_clients: dict[str, Redis] = {}
_clients_lock = threading.Lock()


def _redis() -> Redis:
    """One client per process and Redis URL, with short timeouts and no retry."""
    url = settings.REDIS_URL
    client = _clients.get(url)
    if client is None:
        with _clients_lock:
            client = _clients.setdefault(
                url,
                Redis.from_url(
                    url,
                    socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
                    socket_timeout=REDIS_TIMEOUT_SECONDS,
                ),
            )
    return client


def database_ready() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        logger.warning("readiness: the database did not answer", exc_info=True)
        # A broken persistent connection is not kept for the next request.
        connection.close_if_unusable_or_obsolete()
        return False
    return True


def redis_ready() -> bool:
    try:
        return bool(_redis().ping())
    except (RedisError, OSError):
        logger.warning("readiness: Redis did not answer", exc_info=True)
        return False


@never_cache
@require_GET
def readyz(request):
    failed = [
        name
        for name, check in (("database", database_ready), ("redis", redis_ready))
        if not check()
    ]
    if failed:
        return JsonResponse({"status": "unavailable", "failed": failed}, status=503)
    return JsonResponse({"status": "ready"})
