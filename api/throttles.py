"""Throttles of the API views (rates in ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``)."""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import UserRateThrottle


class ExampleCreateThrottle(UserRateThrottle):
    """Example creation (POST only): the ``examples`` rate of ``DEFAULT_THROTTLE_RATES``.

    Keyed by user (by IP for anonymous calls); reading examples is not throttled.
    """

    scope = "examples"

    def get_rate(self):
        # Read the settings at call time (DRF caches them on the class at import).
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def allow_request(self, request, view):
        if request.method != "POST":
            return True
        return super().allow_request(request, view)
