"""Template filters shared by every app's pages."""

from django import template
from django.utils.safestring import mark_safe

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
