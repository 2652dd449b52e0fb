"""The shared cache: Redis, and a Redis outage is a cache miss, never a 500.

Sessions (``cached_db``: read from the cache, kept in the database), the leaderboard's
computed pages and the API throttle counters live in the one Redis of ``REDIS_URL``, so
every web process sees the same values. When Redis is down or slow, each call gives up
after a short socket timeout, logs a warning and answers as a miss: sessions are read from
the database, pages are computed, throttles count from zero.
"""

from __future__ import annotations

import logging
from functools import wraps

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)


def _miss_on_outage(default_of):
    """Wrap a cache method: a Redis error logs a warning and returns ``default_of(args)``."""

    def decorate(method):
        @wraps(method)
        def wrapper(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except RedisError as error:
                logger.warning("cache %s failed, treated as a miss: %s", method.__name__, error)
                return default_of(*args, **kwargs)

        return wrapper

    return decorate


def _default(key=None, default=None, *args, **kwargs):
    return default


class ReusedClientRedisCacheClient(RedisCacheClient):
    """Django's cache client, with one redis-py client per connection pool.

    Django builds a new ``redis.Redis`` for every cache call, and each one builds its table of
    reply callbacks (80-odd entries): on the create and validate pages that was more CPU than
    the session read it served. A client over a connection pool is safe to share between
    threads, so one per pool is kept.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients: dict[int, object] = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients.setdefault(id(pool), self._client(connection_pool=pool))
        return client


class ResilientRedisCache(RedisCache):
    """Django's Redis cache whose failures are misses (see the module's docstring)."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = ReusedClientRedisCacheClient

    get = _miss_on_outage(_default)(RedisCache.get)
    get_many = _miss_on_outage(lambda *args, **kwargs: {})(RedisCache.get_many)
    has_key = _miss_on_outage(lambda *args, **kwargs: False)(RedisCache.has_key)
    add = _miss_on_outage(lambda *args, **kwargs: False)(RedisCache.add)
    set = _miss_on_outage(lambda *args, **kwargs: None)(RedisCache.set)
    set_many = _miss_on_outage(lambda data, *args, **kwargs: list(data))(RedisCache.set_many)
    touch = _miss_on_outage(lambda *args, **kwargs: False)(RedisCache.touch)
    delete = _miss_on_outage(lambda *args, **kwargs: False)(RedisCache.delete)
    delete_many = _miss_on_outage(lambda *args, **kwargs: None)(RedisCache.delete_many)
    clear = _miss_on_outage(lambda *args, **kwargs: False)(RedisCache.clear)
