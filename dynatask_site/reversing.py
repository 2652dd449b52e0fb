"""``reverse`` for the URLs a hot page builds many times: resolved once per shape.

Django's ``reverse`` walks the URL resolver and its converters on every call, about 40 µs
each; a create or verdict page links to its example six times. ``reverse_filled(name, *args)``
reverses ``name`` once per script prefix with placeholder arguments, keeps the result as a
pattern, and fills the real arguments in by string replacement. Only arguments that appear in
the URL unchanged qualify: integers, and slugs (ASCII letters, digits, ``-`` and ``_``, which
URL-quoting leaves alone). Any other argument goes through ``reverse`` itself, so the result is
always what ``reverse`` would give.
"""

from __future__ import annotations

import re
from functools import lru_cache

from django.urls import NoReverseMatch, get_script_prefix, reverse

_SLUG = re.compile(r"[-a-zA-Z0-9_]+\Z")
# Placeholders that a URL holds only where an argument was put: integers near the top of an
# int column's range, and a slug that no code or name takes.
_INT_BASE = 2_147_480_000


def _placeholder(kind: type, position: int) -> str | int:
    if kind is int:
        return _INT_BASE + position
    return f"zzreversedarg{position}zz"


@lru_cache(maxsize=256)
def _pattern(viewname: str, kinds: tuple[type, ...], script_prefix: str):
    # ``reverse`` prepends the current script prefix, part of this cache's key.
    placeholders = [str(_placeholder(kind, position)) for position, kind in enumerate(kinds)]
    try:
        url = reverse(viewname, args=[_placeholder(k, p) for p, k in enumerate(kinds)])
    except NoReverseMatch:  # e.g. a digit string for an int converter: reverse decides
        return None
    if any(url.count(placeholder) != 1 for placeholder in placeholders):
        return None  # an argument is not in the URL exactly once: never fill this one in
    return url, tuple(placeholders)


def _kind(value) -> type | None:
    if type(value) is int and 0 <= value < _INT_BASE:
        return int
    if type(value) is str and _SLUG.match(value) and "zzreversedarg" not in value:
        return str
    return None


def reverse_filled(viewname: str, *args) -> str:
    """``reverse(viewname, args=args)``, reversing each shape of URL only once."""
    kinds = tuple(_kind(value) for value in args)
    found = None if None in kinds else _pattern(viewname, kinds, get_script_prefix())
    if found is None:
        return reverse(viewname, args=args)
    url, placeholders = found
    for placeholder, value in zip(placeholders, args, strict=True):
        url = url.replace(placeholder, str(value))
    return url
