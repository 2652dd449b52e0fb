"""Django's ``ModelBackend`` with the per-request user lookup compiled once.

Every signed-in request reads its user by primary key (``AuthenticationMiddleware`` through
the backend's ``get_user``); that query's shape never changes, so it is compiled to SQL once
per process (``dynatask_site.precompiled``) instead of on every request. Everything else is
Django's own backend.
"""

from __future__ import annotations

from functools import cache

from django.contrib.auth import backends, get_user_model
from django.db import models

from dynatask_site.precompiled import PrecompiledQuery


@cache
def _user_by_pk() -> PrecompiledQuery | None:
    user_model = get_user_model()
    if not isinstance(user_model._meta.pk, models.IntegerField):
        return None  # a user model with another kind of key: Django's lookup
    return PrecompiledQuery(
        lambda pk: user_model._default_manager.filter(pk=pk).order_by()[:1], pk=int
    )


class ModelBackend(backends.ModelBackend):
    def get_user(self, user_id):
        lookup = _user_by_pk()
        if lookup is None:
            return super().get_user(user_id)
        user = lookup.first(pk=user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
