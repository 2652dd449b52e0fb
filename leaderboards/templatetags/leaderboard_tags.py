"""Template helpers of the leaderboard pages: query strings, sort links, number formats."""

from __future__ import annotations

import json
import math
from urllib.parse import urlencode

from django import template

from leaderboards.tables import DEFAULT_PAGE_SIZE, LOWER

register = template.Library()


@register.simple_tag
def leaderboard_query(table, sort=None, page=None) -> str:
    """Return the query string of ``table``'s weighting, with ``sort``/``page`` replaced."""
    query = table.weights.as_query()
    query["sort"] = sort if sort is not None else table.sort
    query["page"] = str(page if page is not None else table.page)
    if table.page_size != DEFAULT_PAGE_SIZE:
        query["page_size"] = str(table.page_size)
    return urlencode(query)


def _first_direction(table, key: str) -> str:
    # Best first on a first click: descending for higher-is-better, ascending otherwise.
    if key == "name":
        return key
    for column in table.metrics:
        if column.name == key and column.direction == LOWER:
            return key
    return f"-{key}"


@register.simple_tag
def sort_toggle(table, key: str) -> str:
    """Return the sort a header link should ask for: reverse the current one, or best first."""
    if table.sort == key:
        return f"-{key}"
    if table.sort == f"-{key}":
        return key
    return _first_direction(table, key)


@register.simple_tag
def sort_indicator(table, key: str) -> str:
    """Return ▲ or ▼ on the column the table is sorted by, else nothing."""
    if table.sort == key:
        return "▲"
    if table.sort == f"-{key}":
        return "▼"
    return ""


@register.filter
def number(value, digits: int = 2) -> str:
    """Format a metric value; an em dash for a missing one."""
    if value is None or value == "":
        return "—"
    try:
        number_value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number_value):
        return "—"
    return f"{number_value:,.{int(digits)}f}"


@register.filter
def cell(mapping, key):
    """Return ``mapping[key]`` or None (templates cannot index with a variable)."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def arrow(direction: str) -> str:
    """Return ↑ for higher-is-better and ↓ for lower-is-better metrics."""
    return "↓" if direction == LOWER else "↑"


@register.filter
def compact_json(value) -> str:
    """Show a JSON value on one line (the template escapes it)."""
    if value is None:
        return "—"
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)[:2000]
    except (TypeError, ValueError):
        return str(value)[:2000]
