"""Django's ``ModelBackend`` with the per-request user lookup compiled once.

Every signed-in request reads its user by primary key (``AuthenticationMiddleware`` through
the backend's ``get_user``); that query's shape never changes, so it is compiled to SQL once
per process (``dynatask_site.precompiled``) instead of on every request. A view that has
already read the user's row in the same request, together with others in one statement
(``user_lookup`` in ``first_together``), hands it over with ``user_preloaded``: the backend
takes it instead of querying again, and Django checks it as any user it loads (the
backend's ``user_can_authenticate``, then the session's hash of the password). Everything
else is Django's own backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import Any

from django.contrib.auth import backends, get_user_model
from django.db import models

from dynatask_site.precompiled import PrecompiledQuery

_PRELOADED: ContextVar[Any] = ContextVar("preloaded_user", default=None)


@contextmanager
def user_preloaded(user) -> Iterator[None]:
    """Within the block, ``get_user`` of ``user``'s key returns ``user`` (read by the caller
    in this request) without a query. ``user`` may be None: the backend queries."""
    token = _PRELOADED.set(user)
    try:
        yield
    finally:
        _PRELOADED.reset(token)


@cache
def user_lookup() -> PrecompiledQuery | None:
    """The user's row by primary key, as ``get_user`` reads it (None for a user model whose
    key is not an integer: Django's lookup)."""
    user_model = get_user_model()
    if not isinstance(user_model._meta.pk, models.IntegerField):
        return None
    return PrecompiledQuery(
        lambda pk: user_model._default_manager.filter(pk=pk).order_by()[:1], pk=int
    )


class ModelBackend(backends.ModelBackend):
    def get_user(self, user_id):
        lookup = user_lookup()
        if lookup is None:
            return super().get_user(user_id)
        user = _PRELOADED.get()
        if user is None or user.pk != user_id:
            user = lookup.first(pk=user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
