"""Template helpers of the leaderboard pages: query strings, sort links, number formats."""

from __future__ import annotations

import json
import math
from urllib.parse import urlencode

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

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


def _interval(low, high) -> str:
    if low is None or high is None:
        return ""
    return f"{number(low, 1)}–{number(high, 1)}"


@register.simple_tag
def metric_cells(table, row) -> str:
    """Return a row's metric cells (and the main metric's CI) as ``<td>`` elements.

    One Python call per row instead of a template loop: the page renders 50 rows, and
    per-cell template filters were most of its cost.
    """
    parts = []
    for column in table.metrics:
        parts.append(f"<td>{escape(number(row.metrics.get(column.name)))}</td>")
        if column.is_main:
            interval = _interval(row.ci_low, row.ci_high) or "—"
            parts.append(f'<td class="small text-muted">{escape(interval)}</td>')
    return mark_safe("".join(parts))  # noqa: S308 - every value above is escaped


@register.simple_tag
def breakdown_cells(table, row) -> str:
    """Return a row's per-dataset cells: the main metric and its CI on each dataset."""
    parts = []
    for dataset in table.datasets:
        cell_value = row.datasets.get(dataset.slug)
        value = cell_value.value if cell_value is not None else None
        interval = _interval(cell_value.ci_low, cell_value.ci_high) if cell_value else ""
        note = f' <span class="small text-muted">({escape(interval)})</span>' if interval else ""
        parts.append(f"<td>{escape(number(value))}{note}</td>")
    return mark_safe("".join(parts))  # noqa: S308 - every value above is escaped
