"""Root URL configuration."""

from django.contrib import admin
from django.urls import include, path

from dynatask_site.readiness import readyz

urlpatterns = [
    # The load balancer's health check (docs/deploy.md): no sign-in, no secrets.
    path("readyz", readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("tasks.urls")),
    path("", include("models_hub.urls")),
    path("", include("annotation.urls")),
    path("", include("leaderboards.urls")),
    path("", include("dynatask_site.api_urls")),
]
