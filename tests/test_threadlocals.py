"""``use_thread_locals``: Django's per-thread registries as ``threading.local``, with the same
values per thread as asgiref's ``Local`` in a process without an event loop."""

from __future__ import annotations

import asyncio
import threading

import django.urls.base as urls_base
import pytest
from django.core.cache import caches
from django.db import connection, connections
from django.urls import get_script_prefix, reverse, set_script_prefix

from dynatask_site.threadlocals import use_thread_locals


@pytest.fixture
def restored():
    """Put Django's own registries back after the test (the test process shares them)."""
    saved = (connections._connections, caches._connections, urls_base._prefixes)
    saved += (urls_base._urlconfs,)
    prefix = get_script_prefix()
    yield
    connections._connections, caches._connections, urls_base._prefixes = saved[:3]
    urls_base._urlconfs = saved[3]
    set_script_prefix(prefix)  # this thread's prefix, in the registry put back


@pytest.mark.django_db
def test_the_registries_become_thread_locals_and_keep_this_threads_values(restored):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    mine = connections["default"]
    cache = caches["default"]
    set_script_prefix("/prefix/")

    assert use_thread_locals() is True
    for local in (connections._connections, caches._connections, urls_base._prefixes):
        assert isinstance(local, threading.local)
    assert connections["default"] is mine  # the same connection, its transaction too
    assert caches["default"] is cache
    assert get_script_prefix() == "/prefix/"
    assert reverse("annotation:validate", args=["sentiment"]).startswith("/prefix/")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 2")
        assert cursor.fetchone() == (2,)

    seen = {}

    def other_thread():
        try:
            seen["connection"] = connections["default"]
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT 3")
                seen["row"] = cursor.fetchone()
            seen["prefix"] = get_script_prefix()
            seen["cache"] = caches["default"]
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(10)
    # Another thread has its own connection and cache client, and the default prefix.
    assert seen["row"] == (3,)
    assert seen["connection"] is not mine and seen["cache"] is not cache
    assert seen["prefix"] == "/"
    set_script_prefix("/")
    assert use_thread_locals() is True  # once is enough: nothing changes the second time
    assert connections["default"] is mine


def test_nothing_changes_with_an_event_loop_running(restored):
    before = connections._connections
    results = []

    async def call():
        return use_thread_locals()

    # In a thread of its own: the test process's main thread may run a loop already
    # (Playwright's sync API).
    thread = threading.Thread(target=lambda: results.append(asyncio.run(call())))
    thread.start()
    thread.join(10)
    assert results == [False]
    assert connections._connections is before
