"""Permission checks of the API views.

Permission rules are never stated here: a rule is a function of ``tasks.permissions`` (or an
app's own), so that the API and the pages ask the very same question.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import exceptions

Rule = Callable[[Any, Any], bool]


def require(request, rule: Rule, obj: Any, message: str = "you are not allowed to do this"):
    """Raise unless ``rule(request.user, obj)`` holds; ``rule`` comes from tasks.permissions.

    Anonymous callers get a 401 (so scripts know to send a token), others a 403.
    """
    if rule(request.user, obj):
        return
    if not request.user.is_authenticated:
        raise exceptions.NotAuthenticated()
    raise exceptions.PermissionDenied(message)


def require_signed_in(request) -> None:
    if not request.user.is_authenticated:
        raise exceptions.NotAuthenticated()
