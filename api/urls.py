"""URLs of the REST API (/api/v1/), its schema and docs.

Included at the root by ``dynatask_site.urls``. Each app lists its own endpoints in its
``api_urls`` module, included here by name (so this package imports no app); all of them share
the ``api`` URL namespace. Any other path under ``/api/`` answers a JSON 404.
"""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.errors import json_not_found

v1 = [
    path("", include("tasks.api_urls")),
    path("", include("models_hub.api_urls")),
    path("", include("annotation.api_urls")),
    path("", include("leaderboards.api_urls")),
]

urlpatterns = [
    path("api/v1/", include((v1, "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    re_path(r"^api/", json_not_found),
]
