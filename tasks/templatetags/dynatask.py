"""Template filters shared by every app's pages."""

from django import template
from django.utils.safestring import mark_safe

from tasks.accounts import signup_is_open
from tasks.markdown import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str) -> str:
    return mark_safe(render_markdown(text))  # noqa: S308 - sanitised by nh3


@register.filter
def get_item(mapping, key):
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def percent(value, digits: int = 1):
    if value is None:
        return "—"
    return f"{float(value) * 100:.{digits}f}%"


@register.simple_tag
def signup_open() -> bool:
    """Whether self-sign-up is open (``{% signup_open as open %}``; cached, no query)."""
    return signup_is_open()


@register.filter
def latency(milliseconds) -> str:
    """Format a latency for people: "0.42 ms", "3.1 ms", "87 ms", "1.2 s" (blank for none)."""
    if milliseconds is None or milliseconds == "":
        return ""
    try:
        value = float(milliseconds)
    except (TypeError, ValueError):
        return ""
    # Each bound is where the finer format would round up to the coarser one's first value.
    if value >= 999.5:
        return f"{value / 1000:.1f} s"
    if value >= 9.95:
        return f"{value:.0f} ms"
    if value >= 0.995:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"
