"""Accounts: self-sign-up and the site switch that turns it on or off.

- ``site_settings_get()`` reads the single ``SiteSettings`` row from the cache (every save
  forgets it: ``site_settings_forget`` runs on ``post_save``); ``signup_is_open()`` asks it.
- ``signup_allowed(request)`` says whether a visitor may sign up now: sign-up is open, the
  visitor's address is not locked out by the login throttling (django-axes) and has not
  created ``SIGNUP_RATE_LIMIT`` accounts within the hour.
- ``user_sign_up(request, form)`` creates the account from a valid ``SignUpForm`` (Django's
  password validators ran in it) and signs the new user in through ``authenticate``, so the
  login throttling applies as on the login page.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import authenticate, login
from django.core.cache import cache
from django.db import transaction

from core.errors import PermissionDenied, ServiceError
from tasks.models import SiteSettings

SITE_SETTINGS_CACHE_KEY = "tasks:site-settings:1"
SIGNUP_COUNT_KEY = "tasks:signups:{address}"
SIGNUP_WINDOW_SECONDS = 3600


class SignUpClosed(PermissionDenied):
    code = "signup.closed"


class SignUpThrottled(ServiceError):
    code = "signup.throttled"
    status = 429


def site_settings_get() -> SiteSettings:
    """Return the site settings row (created with the settings' defaults when missing)."""
    row = cache.get(SITE_SETTINGS_CACHE_KEY)
    if row is None:
        row, _ = SiteSettings.objects.get_or_create(
            pk=SiteSettings.SINGLETON_PK,
            defaults={"signup_open": getattr(settings, "SIGNUP_OPEN_DEFAULT", True)},
        )
        cache.set(SITE_SETTINGS_CACHE_KEY, row, None)
    return row


def site_settings_forget(**_kwargs) -> None:
    """Drop the cached row after the commit (a ``post_save`` receiver of ``SiteSettings``)."""
    transaction.on_commit(lambda: cache.delete(SITE_SETTINGS_CACHE_KEY))


def signup_is_open() -> bool:
    return site_settings_get().signup_open


def _address(request) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


def signup_allowed(request) -> None:
    """Raise ``SignUpClosed`` or ``SignUpThrottled`` when ``request`` may not sign up now."""
    if not signup_is_open():
        raise SignUpClosed("Sign-up is closed on this site: ask an admin for an account.")
    from axes.handlers.proxy import AxesProxyHandler  # axes reads settings on import

    if not AxesProxyHandler.is_allowed(request):
        raise SignUpThrottled("Too many failed attempts from your address: try again later.")
    limit = getattr(settings, "SIGNUP_RATE_LIMIT", 10)
    if limit and (cache.get(SIGNUP_COUNT_KEY.format(address=_address(request))) or 0) >= limit:
        raise SignUpThrottled("Too many new accounts from your address: try again later.")


def _count_signup(request) -> None:
    key = SIGNUP_COUNT_KEY.format(address=_address(request))
    if not cache.add(key, 1, SIGNUP_WINDOW_SECONDS):
        try:
            cache.incr(key)
        except ValueError:  # expired between the two calls
            cache.add(key, 1, SIGNUP_WINDOW_SECONDS)


def user_sign_up(request, form):
    """Create the account of a valid ``SignUpForm`` and sign it in; return the user.

    Raises ``SignUpClosed`` / ``SignUpThrottled`` as ``signup_allowed`` does (checked again:
    an admin may close sign-up while the form is being filled in).
    """
    signup_allowed(request)
    with transaction.atomic():
        user = form.save()
    _count_signup(request)
    signed_in = authenticate(
        request, username=user.get_username(), password=form.cleaned_data["password1"]
    )
    if signed_in is None:  # locked out meanwhile: the account stands, the login page works
        raise SignUpThrottled("Your account is created, but signing in is blocked for now.")
    login(request, signed_in)
    return signed_in
