"""Enumerate every URL pattern of the site and build a concrete path for each one."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver


@dataclass(frozen=True)
class Route:
    key: str  # "namespace:name", or "namespace:<pattern>" for unnamed patterns
    pattern: str  # the full pattern, for messages
    callback: object
    admin_model: str = ""  # "app_label.model" for a ModelAdmin's URL


def _walk(resolver: URLResolver, prefix: str, namespace: str | None):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = namespace
            if entry.namespace:
                inner = f"{namespace}:{entry.namespace}" if namespace else entry.namespace
            yield from _walk(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            full = prefix + str(entry.pattern)
            name = entry.name or f"<{full}>"
            key = f"{namespace}:{name}" if namespace else name
            yield full, key, entry


def admin_model_urls() -> dict[str, str]:
    """Map each ModelAdmin URL name (``admin:app_model_view``) to ``app_label.model``."""
    names = {}
    for model in admin.site._registry:
        label = f"{model._meta.app_label}_{model._meta.model_name}"
        for view in ("changelist", "add", "history", "delete", "change"):
            names[f"admin:{label}_{view}"] = f"{model._meta.app_label}.{model._meta.model_name}"
    return names


def all_routes() -> list[Route]:
    """Every URL pattern of the root URLconf, each once."""
    admin_names = admin_model_urls()
    routes: dict[str, Route] = {}
    for full, key, entry in _walk(get_resolver(), "", None):
        if key.startswith("admin:<admin/") and "<path:object_id>/" in key and key.endswith("/>"):
            # The admin's bare "<object_id>/" redirect to the change view: one rule covers all.
            key = "admin:<object redirect>"
        routes.setdefault(key, Route(key, full, entry.callback, admin_names.get(key, "")))
    return list(routes.values())
