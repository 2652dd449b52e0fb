"""Root URL configuration: every app's URLs, included by name (this module imports no app)."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView

urlpatterns = [
    path("", include("core.urls")),  # /readyz, the load balancer's health check
    # Browsers ask for /favicon.ico when a page names no icon (a JSON or file response); the
    # icon's URL is read at request time (the manifest storage needs collectstatic first).
    path(
        "favicon.ico",
        RedirectView.as_view(url=lazy(static, str)("favicon.svg"), permanent=True),
    ),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("tasks.urls")),
    path("", include("models_hub.urls")),
    path("", include("annotation.urls")),
    path("", include("leaderboards.urls")),
    path("", include("api.urls")),
    path("", include("tasks.token_urls")),
]
