"""Root URL configuration: every app's URLs, included by name (this module imports no app)."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("tasks.urls")),
    path("", include("models_hub.urls")),
    path("", include("annotation.urls")),
    path("", include("leaderboards.urls")),
    path("", include("api.urls")),
    path("", include("tasks.token_urls")),
]
