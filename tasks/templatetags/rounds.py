"""Template tags about a task's rounds, for pages whose view does not read them itself (the
admin's change page): ``{% load rounds %}{% round_warnings task admin=True %}``."""

from django import template

from tasks.selectors import round_warnings as read_round_warnings

register = template.Library()


@register.inclusion_tag("tasks/_round_warnings.html")
def round_warnings(task, admin: bool = False) -> dict:
    """Render the warnings of ``task``'s open rounds (``tasks.selectors.round_warnings``),
    in the admin's message style when ``admin``."""
    warnings = read_round_warnings(task) if task is not None else []
    return {"round_warnings": warnings, "admin": admin}
