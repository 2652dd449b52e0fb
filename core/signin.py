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
  not an IP address falls back to ``REMOTE_ADDR``. An IPv6 address counts as its /64
  network (``lockout_address``): one subscriber, one data centre machine, usually holds a
  whole /64 and could send every guess from a new address of it. The lockout is keyed (and
  stored) as the network's first address, ``2001:db8:1:2::``; an IPv4 address mapped into
  IPv6 (``::ffff:192.0.2.1``) counts as that IPv4 address.
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


IPV6_LOCKOUT_PREFIX = 64


def lockout_address(address: str | None) -> str | None:
    """Return the address sign-in failures are counted by: an IPv6 address's /64 network
    (as its first address), an IPv4 address as it is; what is not an address, unchanged."""
    try:
        parsed = ipaddress.ip_address((address or "").strip())
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        network = ipaddress.IPv6Network((parsed, IPV6_LOCKOUT_PREFIX), strict=False)
        return str(network.network_address)
    return str(parsed)


def client_ip_address(request: HttpRequest) -> str | None:
    """Return the address a sign-in is counted by: the client's (``REMOTE_ADDR``, or the one
    the trusted proxies saw), an IPv6 one as its /64 network."""
    remote = request.META.get("REMOTE_ADDR")
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies <= 0 or not forwarded:
        return lockout_address(remote)
    addresses = [part.strip() for part in forwarded.split(",")]
    candidate = addresses[-min(proxies, len(addresses))]
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return lockout_address(remote)
    return lockout_address(candidate)


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
