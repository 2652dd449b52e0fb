"""URLs of the REST API (/api/v1/), its schema and docs, and the API tokens page.

Included at the root by ``dynatask_site.urls``; every path here names its full prefix.
"""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from dynatask_site.api import json_not_found
from models_hub import api as models_api
from tasks import api as tasks_api
from tasks import views_tokens

v1 = [
    # tasks
    path("tasks/", tasks_api.TaskListView.as_view(), name="task-list"),
    path("tasks/<slug:code>/", tasks_api.TaskDetailView.as_view(), name="task-detail"),
    path("tasks/<slug:code>/rounds/", tasks_api.RoundListView.as_view(), name="round-list"),
    path(
        "tasks/<slug:code>/rounds/<int:number>/models/",
        models_api.RoundLoopView.as_view(),
        name="round-loop",
    ),
    path(
        "tasks/<slug:code>/contexts/", tasks_api.ContextUploadView.as_view(), name="context-upload"
    ),
    # models
    path("tasks/<slug:code>/models/", models_api.TaskModelListView.as_view(), name="model-list"),
    path("models/<int:pk>/", models_api.ModelDetailView.as_view(), name="model-detail"),
    path("models/<int:pk>/publish/", models_api.ModelPublishView.as_view(), name="model-publish"),
    path("models/<int:pk>/rounds/", models_api.ModelRoundsView.as_view(), name="model-rounds"),
]

urlpatterns = [
    path("api/v1/", include((v1, "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    re_path(r"^api/", json_not_found),
    path("profile/tokens/", views_tokens.ApiTokensView.as_view(), name="api_tokens"),
]
