"""Template helpers of the leaderboard pages: query strings, sort links, number formats."""

from __future__ import annotations

import json
import math
from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe

from leaderboards.dynascore import LOWER
from leaderboards.intervals import TIE_BELOW
from leaderboards.scoring import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from leaderboards.tables.results import DEFAULT_PAGE_SIZE

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


@register.filter
def field_items(value, first=None) -> list[tuple[str, str]]:
    """Return ``(name, text)`` for each field of a JSON object (the ``uid`` left out),
    strings as they are and other values as one-line JSON; the fields that the mapping
    ``first`` names come first (a prediction's gold fields before its probabilities). A
    value that is not an object is one nameless item, and None none. The template escapes
    both."""
    if value is None:
        return []
    if not isinstance(value, dict):
        return [("", compact_json(value))]
    leading = set(first) if isinstance(first, dict) else set()
    names = sorted((name for name in value if name != "uid"), key=lambda name: name not in leading)
    return [
        (str(name), value[name] if isinstance(value[name], str) else compact_json(value[name]))
        for name in names
    ]


def probability_bars(value) -> list[dict]:
    """Return ``{"label", "value", "percent"}`` per label of a probabilities object (labels
    to numbers between 0 and 1), the likeliest first, or [] for any other value."""
    if not isinstance(value, dict) or not value:
        return []
    numbers = list(value.values())
    if not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        return []
    if not all(math.isfinite(n) and 0 <= n <= 1 for n in numbers):
        return []
    return [
        {"label": str(label), "value": f"{p:.2f}", "percent": f"{100 * p:.1f}"}
        for label, p in sorted(value.items(), key=lambda item: -item[1])
    ]


@register.filter
def answer_items(value, first=None) -> list[dict]:
    """Return ``{"name", "text", "bars"}`` per field of a model's answer, in the order of
    ``field_items``: a probabilities field has ``bars`` (``probability_bars``), shown as small
    bars with their numbers rather than as JSON."""
    items = []
    for name, text in field_items(value, first):
        bars = probability_bars(value.get(name)) if isinstance(value, dict) else []
        items.append({"name": name, "text": text, "bars": bars})
    return items


@register.simple_tag
def bootstrap_settings() -> dict[str, str]:
    """Return the resampling settings the page's help states: count, seed, tie cut-off."""
    return {
        "resamples": f"{BOOTSTRAP_RESAMPLES:,}",
        "seed": str(BOOTSTRAP_SEED),
        "tie_below": f"{100 * TIE_BELOW:.0f}%",
    }


def _interval(low, high) -> str:
    if low is None or high is None:
        return ""
    return f"{number(low, 1)}–{number(high, 1)}"


def _share_text(share) -> str:
    return f"{100 * share:.0f}%"


TIE_BADGE = (
    ' <span class="badge text-bg-secondary" data-tie="1" title="Neither model is ahead in '
    '95% of resamples: a statistical tie">tie</span>'
)


def _comparison_cell(table, row) -> str:
    """Return the "ahead of the next model" cell: shares of resamples, ties marked.

    Two-sided: a tie when neither model is ahead in 95% of resamples; when the next model
    is, the cell says so instead.
    """
    comparison = row.next_comparison
    if comparison is None:
        return '<td class="small text-muted lb-next">—</td>'
    parts = []
    for label, where, share, tie, next_ahead in (
        (
            "Dynascore",
            "the Dynascore",
            comparison.dynascore_share,
            comparison.dynascore_tie,
            comparison.dynascore_next_ahead,
        ),
        (
            table.main_metric,
            "the main metric",
            comparison.main_share,
            comparison.main_tie,
            comparison.main_next_ahead,
        ),
    ):
        if share is None:
            continue
        text = f"{escape(label)}: ahead in {escape(_share_text(share))} of resamples"
        if next_ahead:
            text += (
                f' <span class="badge text-bg-warning" data-next-ahead="1">the next model is '
                f"ahead on {where}</span>"
            )
        elif tie:
            text += TIE_BADGE
        parts.append(f"<div>{text}</div>")
    if not parts:
        return '<td class="small text-muted lb-next">—</td>'
    return f'<td class="small lb-next">{"".join(parts)}</td>'


def _model_url_parts() -> tuple[str, str]:
    # The model page's URL around its id, reversed once per table rather than per row.
    marker = 987654321
    url = reverse("leaderboards:model", args=[marker])
    before, _, after = url.partition(str(marker))
    return before, after


PREDICTIONS_FILE_CELL = "n/a (predictions file)"
# One colour per metric column, in the table's order, for the share bars and their legend
# (Okabe-Ito: told apart with the common colour-vision deficiencies).
SHARE_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")


def _share_colour(position: int) -> str:
    return SHARE_COLOURS[position % len(SHARE_COLOURS)]


def _percent(share: float) -> str:
    return f"{share * 100:.0f}%"


def _share_bar(table, row) -> str:
    """Return an inline SVG bar of each metric's share of the row's Dynascore, or ""."""
    if not row.shares:
        return ""
    rects = []
    described = []
    left = 0.0
    for position, column in enumerate(table.metrics):
        share = row.shares.get(column.name, 0.0)
        if share <= 0:
            continue
        described.append(f"{column.label} {_percent(share)}")
        rects.append(
            f'<rect x="{left:.2f}" y="0" width="{share * 100:.2f}" height="8" '
            f'fill="{_share_colour(position)}"></rect>'
        )
        left += share * 100
    text = escape("Share of the Dynascore: " + ", ".join(described))
    return (
        '<svg class="lb-shares d-block" width="100" height="8" viewBox="0 0 100 8" '
        f'preserveAspectRatio="none" role="img" aria-label="{text}" data-testid="share-bar">'
        f"<title>{text}</title>{''.join(rects)}</svg>"
    )


def _share_warning(table, row) -> str:
    if row.dominant_metric is None:
        return ""
    label = next(
        (column.label for column in table.metrics if column.name == row.dominant_metric),
        row.dominant_metric,
    )
    share = row.shares.get(row.dominant_metric, 0.0)
    return (
        '<div class="small fw-normal text-danger-emphasis" data-testid="share-warning">'
        f"{escape(label)} makes up {_percent(share)} of this score</div>"
    )


@register.simple_tag
def share_legend(table) -> str:
    """Return the legend of the share bars: a swatch and the label of each metric."""
    items = []
    for position, column in enumerate(table.metrics):
        items.append(
            '<span class="me-2 text-nowrap"><svg width="10" height="10" aria-hidden="true">'
            f'<rect width="10" height="10" fill="{_share_colour(position)}"></rect></svg> '
            f"{escape(column.label)}</span>"
        )
    return mark_safe("".join(items))  # noqa: S308 - constants and escaped labels


def _metric_cells(table, row) -> str:
    parts = []
    for column in table.metrics:
        if row.predictions_file and column.kind == "job":
            parts.append(f'<td class="small text-muted">{PREDICTIONS_FILE_CELL}</td>')
        else:
            parts.append(f"<td>{escape(number(row.metrics.get(column.name)))}</td>")
        if column.is_main:
            interval = _interval(row.ci_low, row.ci_high) or "—"
            parts.append(f'<td class="small text-muted">{escape(interval)}</td>')
    return "".join(parts)


@register.simple_tag
def leaderboard_rows(table) -> str:
    """Return the ``<tr>`` of each row of the table's page, or its empty-table line.

    One Python pass instead of a template loop: the page shows 50 rows and the template
    engine's per-row tags, lookups and URL reversing were most of its rendering time.
    """
    if not table.rows:
        return mark_safe(  # noqa: S308 - a constant and a number
            f'<tr><td colspan="{len(table.metrics) + 5}" class="text-muted">'
            "No models on this leaderboard yet.</td></tr>"
        )
    url_before, url_after = _model_url_parts()
    lines = []
    for row in table.rows:
        name = escape(row.model_name)
        if not row.is_anonymous:
            name = f'<a href="{url_before}{int(row.model_id)}{url_after}">{name}</a>'
        badge = ""
        if row.incomplete:
            missing = escape(", ".join(row.missing_metrics))
            badge = (
                f'<span class="badge text-bg-warning" title="Missing: {missing}">incomplete</span>'
            )
        if row.partial:
            note = escape(row.coverage_note)
            badge += (
                f' <span class="badge text-bg-warning" data-partial="1" title="Partial: {note}'
                f' (examples without a prediction counted as wrong)">partial: {note}</span>'
            )
        if row.predictions_file:
            badge += (
                ' <span class="badge text-bg-light border" title="Scored from uploaded '
                'predictions files: no throughput, latency or memory">predictions file</span>'
            )
        marker = ' class="table-light text-muted" data-incomplete="1"' if row.incomplete else ""
        rank = "" if row.rank is None else escape(row.rank)
        interval = _interval(row.dynascore_ci_low, row.dynascore_ci_high)
        dynascore_interval = (
            f'<div class="small text-muted fw-normal">{escape(interval)}</div>' if interval else ""
        )
        lines.append(
            f'<tr{marker}><td class="lb-rank">{rank}</td>'
            f'<td class="lb-model">{name}'
            f'<div class="small text-muted">{escape(row.owner_name)}</div>{badge}</td>'
            f'<td class="fw-semibold">{escape(number(row.dynascore))}{dynascore_interval}'
            f"{_share_bar(table, row)}{_share_warning(table, row)}</td>"
            f"{_comparison_cell(table, row)}"
            f"{_metric_cells(table, row)}</tr>"
        )
    return mark_safe("\n".join(lines))  # noqa: S308 - every value above is escaped


@register.simple_tag
def breakdown_rows(table) -> str:
    """Return the per-dataset breakdown's ``<tr>`` of each row: name, then each dataset's
    main metric and its CI."""
    lines = []
    for row in table.rows:
        parts = [f'<tr><td class="lb-model">{escape(row.model_name)}</td>']
        for dataset in table.datasets:
            cell_value = row.datasets.get(dataset.slug)
            value = cell_value.value if cell_value is not None else None
            interval = _interval(cell_value.ci_low, cell_value.ci_high) if cell_value else ""
            note = (
                f' <span class="small text-muted">({escape(interval)})</span>' if interval else ""
            )
            if cell_value is not None and cell_value.partial:
                note += (
                    ' <span class="badge text-bg-warning" data-partial="1">'
                    f"partial: {escape(cell_value.coverage)}</span>"
                )
            parts.append(f"<td>{escape(number(value))}{note}</td>")
        parts.append("</tr>")
        lines.append("".join(parts))
    return mark_safe("\n".join(lines))  # noqa: S308 - every value above is escaped
