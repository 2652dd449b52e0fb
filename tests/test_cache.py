"""The shared cache of the production settings (django-redis): Redis when it answers, a miss
(never an error) when it does not; and sessions that survive a Redis outage (``cached_db``)."""

from __future__ import annotations

import socket
from importlib import import_module

import pytest
from django.conf import settings
from django.core.cache import caches
from django.test import override_settings

from dynatask_site.settings import base


def _caches(location: str) -> dict:
    """The production settings' cache, at ``location``."""
    return {"default": {**base.CACHES["default"], "LOCATION": location, "KEY_PREFIX": "t"}}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_values_round_trip_through_redis(redis_connection):
    with override_settings(CACHES=_caches(settings.REDIS_URL)):
        cache = caches["default"]
        cache.set("greeting", {"text": "héllo"}, 30)
        assert cache.get("greeting") == {"text": "héllo"}
        assert cache.add("greeting", "other") is False
        assert cache.get_many(["greeting", "missing"]) == {"greeting": {"text": "héllo"}}
        cache.delete("greeting")
        assert cache.get("greeting", "gone") == "gone"


def test_an_unreachable_redis_is_a_miss_not_an_error(caplog):
    with override_settings(CACHES=_caches(f"redis://127.0.0.1:{_closed_port()}/0")):
        cache = caches["default"]
        assert cache.get("key", "default") == "default"
        assert cache.get_many(["a", "b"]) == {}
        cache.set("key", "value", 30)
        assert cache.get_or_set("key", "computed", 30) == "computed"
    assert "Exception ignored" in caplog.text  # logged, not raised


@pytest.mark.django_db
def test_sessions_are_kept_in_the_database_while_redis_is_down():
    engine = "django.contrib.sessions.backends.cached_db"
    unreachable = _caches(f"redis://127.0.0.1:{_closed_port()}/0")
    with override_settings(CACHES=unreachable, SESSION_ENGINE=engine):
        store = import_module(engine).SessionStore()
        store["campaign"] = 42
        store.save()
        again = import_module(engine).SessionStore(session_key=store.session_key)
        assert again["campaign"] == 42
