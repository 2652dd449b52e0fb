"""Root URL configuration."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("tasks.urls")),
    path("", include("models_hub.urls")),
    path("", include("annotation.urls")),
    path("", include("leaderboards.urls")),
    path("", include("dynatask_site.api_urls")),
]
