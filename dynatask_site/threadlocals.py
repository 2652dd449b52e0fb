"""Plain thread-local storage for Django's per-thread registries, in a process without asyncio.

Django keeps the database connections, the cache clients, the script prefix and the URLconf
override in asgiref's ``Local``, which also follows asyncio tasks and ``sync_to_async``
calls. Its attributes live in storage behind ``__getattr__``: every read first fails the
ordinary lookup (an ``AttributeError`` is made, with its message), then asks whether an event
loop runs (a ``RuntimeError`` when none does), and, for the non-thread-critical kind, takes a
lock and misses once more in a context variable. The ORM reads ``connections[alias]`` many
times per query and ``reverse`` reads the script prefix and the URLconf: together 2.4% of the
instructions of a submission cycle (callgrind, the same cycle before and after).

In a thread that runs no event loop, ``Local`` behaves as ``threading.local`` (asgiref's own
documentation says so, and the thread-critical kind is a ``threading.local`` there).
``use_thread_locals`` puts a ``threading.local`` in their place, keeping what the calling
thread holds, in the long-running processes that are sync by construction: the gunicorn
workers (WSGI) and the RQ workers. Never call it in a process that serves ASGI or runs
asyncio: there the values must follow the tasks.
"""

from __future__ import annotations

import asyncio
import threading

import django.urls.base as urls_base
from django.core.cache import caches
from django.db import connections


def _thread_local_copy(local, names) -> threading.local:
    """A ``threading.local`` holding the calling thread's values of ``names`` in ``local``."""
    copy = threading.local()
    for name in names:
        value = getattr(local, name, _MISSING)
        if value is not _MISSING:
            setattr(copy, name, value)
    return copy


_MISSING = object()


def use_thread_locals() -> bool:
    """Replace the ``Local`` registries by ``threading.local`` (once); False, and nothing
    changed, when called with an event loop running in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return False
    for handler in (connections, caches):
        if not isinstance(handler._connections, threading.local):
            handler._connections = _thread_local_copy(handler._connections, handler.settings)
    for name in ("_prefixes", "_urlconfs"):
        local = getattr(urls_base, name)
        if not isinstance(local, threading.local):
            setattr(urls_base, name, _thread_local_copy(local, ("value",)))
    return True
