"""The blank forms of the hot pages, laid out once per config version and kept.

Crispy takes a millisecond or more to lay out a form; a blank form (nothing typed in yet)
depends only on the config version and a few flags, so its HTML is rendered once per key and
the per-request values are filled in through markers.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from crispy_forms.utils import render_crispy_form
from django.utils.html import escape
from django.utils.safestring import mark_safe

from annotation.forms import CreateForm, MetadataForm, ValidateForm, sign_started_at
from tasks.config.types import FieldSpec, TaskConfig

# Crispy takes a millisecond or more to lay out a form, and the blank forms of the hot pages
# (the create form of a fresh page, the metadata form of a new example) depend only on the
# config version and a few flags: their HTML is rendered once per key and kept, bounded.
# Keys carry the config version's id and text (like ``tasks.models.parsed_config_cached``).
BLANK_FORM_CACHE_SIZE = 256
_blank_form_html: dict[tuple, str] = {}
# Per-request values go into the cached HTML through markers no config can contain.
_MARKER = f"dynatask-{secrets.token_hex(8)}"
CONTEXT_MARKER = f"{_MARKER}-context"
STARTED_MARKER = f"{_MARKER}-started"
EXAMPLE_MARKER = f"{_MARKER}-example"


def _cached_form_html(key: tuple, render: Callable[[], str]) -> str:
    html = _blank_form_html.get(key)
    if html is None:
        html = render()
        while len(_blank_form_html) >= BLANK_FORM_CACHE_SIZE:
            _blank_form_html.pop(next(iter(_blank_form_html)), None)
        _blank_form_html[key] = html
    return html


def _with_start_time(html: str) -> str:
    """Fill a fresh signed ``started_at`` into cached form HTML (safe: the value is escaped)."""
    return mark_safe(html.replace(STARTED_MARKER, escape(sign_started_at())))  # noqa: S308


def blank_metadata_html(key: tuple, specs: Iterable[FieldSpec]) -> str:
    """Return the HTML of an unbound ``MetadataForm(specs, prefix="metadata")``, once per key."""
    return _cached_form_html(
        ("metadata", *key),
        lambda: render_crispy_form(MetadataForm(specs=specs, prefix="metadata")),
    )


def blank_create_html(
    key: tuple,
    config: TaskConfig,
    *,
    goal_label: str,
    retain: bool,
    context_id: int | None,
    template_context: Mapping[str, Any],
) -> str:
    """Return the HTML of a blank ``CreateForm`` (nothing typed in yet), rendered once per key.

    ``key`` names the config version; the goal label and the retain switch are part of the
    cache key, the context id and a fresh signed ``started_at`` are filled in per call.
    ``template_context`` feeds the layout's included templates (the next-context link).
    """

    def render() -> str:
        form = CreateForm(
            config=config,
            goal_label=goal_label,
            initial={
                "context_id": CONTEXT_MARKER,
                "started_at": STARTED_MARKER,
                "retain_input": retain,
            },
        )
        return render_crispy_form(form, context=dict(template_context))

    html = _cached_form_html(
        ("create", *key, goal_label, retain, bool(template_context.get("needs_context"))), render
    )
    context_value = f' value="{int(context_id)}"' if context_id is not None else ""
    return _with_start_time(html.replace(f' value="{CONTEXT_MARKER}"', context_value))


def blank_validate_html(key: tuple, config: TaskConfig, *, example_id: int) -> str:
    """Return the HTML of a blank ``ValidateForm`` for ``example_id``, laid out once per key.

    ``key`` starts with the id of the config version the example was written under; the
    example id and a fresh signed ``started_at`` are filled in per call.
    """

    def render() -> str:
        form = ValidateForm(
            config=config,
            initial={
                "example_id": EXAMPLE_MARKER,
                "config_version": key[0],
                "started_at": STARTED_MARKER,
            },
        )
        return render_crispy_form(form)

    html = _cached_form_html(("validate", *key), render)
    return _with_start_time(html.replace(EXAMPLE_MARKER, str(int(example_id))))
