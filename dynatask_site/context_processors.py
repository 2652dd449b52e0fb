"""Template context that every page shares."""

from __future__ import annotations

from functools import lru_cache

from django.urls import get_script_prefix, reverse

# The navbar's links: views without arguments, so their URLs change only with the script
# prefix (the path the site is mounted at).
NAV_VIEWS = {
    "home": "tasks:home",
    "leaderboards": "tasks:leaderboards",
    "profile": "tasks:profile",
    "admin": "admin:index",
    "login": "login",
    "logout": "logout",
    "signup": "tasks:signup",
}


@lru_cache(maxsize=16)
def _nav_urls(script_prefix: str) -> dict[str, str]:
    # ``reverse`` prepends the current script prefix, the key of this cache.
    return {name: reverse(view) for name, view in NAV_VIEWS.items()}


def site_urls(request) -> dict:
    """``site_urls``: the navbar's links, reversed once per script prefix instead of four
    ``{% url %}`` tags on every page."""
    return {"site_urls": _nav_urls(get_script_prefix())}
