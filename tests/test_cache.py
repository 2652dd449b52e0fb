"""The shared cache: Redis when it answers, a miss (never an error) when it does not; and
sessions that survive a Redis outage through ``cached_db``."""

from __future__ import annotations

import socket

import pytest
from django.conf import settings
from django.test import override_settings

from dynatask_site.cache import ResilientRedisCache
from dynatask_site.settings import base


def _cache(location: str) -> ResilientRedisCache:
    """The cache of the production settings (their options), at ``location``."""
    options = base.CACHES["default"]["OPTIONS"]
    return ResilientRedisCache(location, {"KEY_PREFIX": "test-cache", "OPTIONS": options})


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_values_round_trip_through_redis(redis_connection):
    cache = _cache(settings.REDIS_URL)
    cache.set("greeting", {"text": "héllo"}, 30)
    assert cache.get("greeting") == {"text": "héllo"}
    assert cache.add("greeting", "other") is False
    assert cache.get_many(["greeting", "missing"]) == {"greeting": {"text": "héllo"}}
    cache.delete("greeting")
    assert cache.get("greeting", "gone") == "gone"


def test_one_redis_client_serves_every_call_and_reconnects_after_a_drop(redis_connection):
    cache = _cache(settings.REDIS_URL)
    client = cache._cache.get_client("a")
    assert cache._cache.get_client("b", write=True) is client
    cache.set("kept", 1, 30)
    # The pooled connections are gone (as after a Redis restart): the shared client connects
    # again on its next call.
    for connection in client.connection_pool._available_connections:
        connection.disconnect()
    assert cache.get("kept") == 1
    assert cache._cache.get_client("c") is client


def test_an_unreachable_redis_is_a_miss_not_an_error(caplog):
    cache = _cache(f"redis://127.0.0.1:{_closed_port()}/0")
    assert cache.get("key", "default") == "default"
    assert cache.get_many(["a", "b"]) == {}
    assert cache.set("key", "value", 30) is None
    assert cache.add("key", "value") is False
    assert cache.has_key("key") is False
    assert cache.delete("key") is False
    assert cache.get_or_set("key", "computed", 30) == "computed"
    assert "treated as a miss" in caplog.text


@pytest.mark.django_db
def test_sessions_are_kept_in_the_database_while_redis_is_down(caplog):
    from importlib import import_module

    unreachable = {
        "default": {
            "BACKEND": "dynatask_site.cache.ResilientRedisCache",
            "LOCATION": f"redis://127.0.0.1:{_closed_port()}/0",
            "OPTIONS": base.CACHES["default"]["OPTIONS"],
        }
    }
    engine = "django.contrib.sessions.backends.cached_db"
    with override_settings(CACHES=unreachable, SESSION_ENGINE=engine):
        store = import_module(engine).SessionStore()
        store["campaign"] = 42
        store.save()
        again = import_module(engine).SessionStore(session_key=store.session_key)
        assert again["campaign"] == 42
    assert "treated as a miss" in caplog.text  # the cache was tried, and missed
