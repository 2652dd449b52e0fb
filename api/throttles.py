"""Rate limits of the REST API (DRF throttles), keyed by user (by address when anonymous).

- ``WriteRateThrottle`` (``DEFAULT_THROTTLE_CLASSES``: every API view) counts the unsafe
  methods only (POST, PUT, PATCH, DELETE): reads are never throttled. A view's
  ``throttle_scope`` names its rate, as with DRF's ``ScopedRateThrottle``; without one the
  rate is ``writes``. The views that start model calls, imports or copies (registrations,
  runs, retries, forks, uploads) use ``heavy_writes``. Each scope has its own budget.
- ``ExampleCreateThrottle``: example creation (POST only), the ``examples`` rate, on top.

The rates are ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (``settings/api.py``, each set
by an environment variable), read at call time. Over a rate the API answers 429 with
``Retry-After`` and the error ``throttled`` (``api.errors.exception_handler``).
A module of its own because DRF reads ``DEFAULT_THROTTLE_CLASSES`` when its views module is
imported, which ``api.errors`` does.
"""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS
from rest_framework.settings import api_settings
from rest_framework.throttling import UserRateThrottle

WRITES = "writes"
HEAVY_WRITES = "heavy_writes"


class _SettingsRateThrottle(UserRateThrottle):
    def get_rate(self):
        # Read the settings at call time (DRF caches them on the class at import).
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class WriteRateThrottle(_SettingsRateThrottle):
    """Every unsafe method: the rate of the view's ``throttle_scope`` (default ``writes``)."""

    scope = WRITES

    def allow_request(self, request, view):
        if request.method in SAFE_METHODS:
            return True
        self.scope = getattr(view, "throttle_scope", None) or WRITES
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)


class ExampleCreateThrottle(_SettingsRateThrottle):
    """Example creation (POST only): the ``examples`` rate of ``DEFAULT_THROTTLE_RATES``.

    Keyed by user (by IP for anonymous calls); reading examples is not throttled.
    """

    scope = "examples"

    def allow_request(self, request, view):
        if request.method != "POST":
            return True
        return super().allow_request(request, view)
