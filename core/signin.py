"""Sign-in hardening: the client's address behind trusted proxies, and the lockout page.

django-axes counts failed sign-ins (settings ``AXES_*``, see ``docs/security.md``). Two pieces
of it are ours:

- ``client_ip_address(request)`` (``AXES_CLIENT_IP_CALLABLE``) is the address a lockout is
  keyed by. With ``TRUSTED_PROXY_COUNT = 0`` (the default: nothing in front of the app server)
  it is ``REMOTE_ADDR`` and ``X-Forwarded-For`` is ignored, as any client can write it. With
  ``N`` trusted reverse proxies in front, each appends the address it received the request
  from, so the real client is the ``N``-th address from the right; whatever a client wrote to
  the left of it is never read. This is DRF's rule for ``NUM_PROXIES`` too (settings/api.py
  sets it to the same count), so the API's throttles see the same address. A value that is
  not an IP address falls back to ``REMOTE_ADDR``.
- ``lockout_response(request, credentials)`` (``AXES_LOCKOUT_CALLABLE``) is the page a
  locked-out sign-in gets: a 429 that says what happened and how long to wait, with
  ``Retry-After``.
"""

from __future__ import annotations

import ipaddress
import math

from axes.helpers import get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

LOCKOUT_TEMPLATE = "registration/locked_out.html"


def client_ip_address(request: HttpRequest) -> str | None:
    """Return the client's address: ``REMOTE_ADDR``, or the one the trusted proxies saw."""
    remote = request.META.get("REMOTE_ADDR")
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies <= 0 or not forwarded:
        return remote
    addresses = [part.strip() for part in forwarded.split(",")]
    candidate = addresses[-min(proxies, len(addresses))]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote


def lockout_response(request: HttpRequest, credentials: dict | None = None) -> HttpResponse:
    """Render the lockout page: a 429 with the wait and ``Retry-After``."""
    cool_off = get_cool_off(request)
    seconds = int(cool_off.total_seconds()) if cool_off else None
    context = {
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "minutes": math.ceil(seconds / 60) if seconds else None,
    }
    response = render(request, LOCKOUT_TEMPLATE, context, status=429)
    if seconds:
        response["Retry-After"] = str(seconds)
    return response
