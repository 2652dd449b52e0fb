"""REST API URLs of the models_hub app (models and the model-in-the-loop of a round).

Included by ``api.urls`` under ``/api/v1/`` in the ``api`` namespace; views in ``models_hub.api``.
"""

from django.urls import path

from models_hub import api as models_api

urlpatterns = [
    path(
        "tasks/<slug:code>/rounds/<int:number>/models/",
        models_api.RoundLoopView.as_view(),
        name="round-loop",
    ),
    path("tasks/<slug:code>/models/", models_api.TaskModelListView.as_view(), name="model-list"),
    path("models/<int:pk>/", models_api.ModelDetailView.as_view(), name="model-detail"),
    path("models/<int:pk>/publish/", models_api.ModelPublishView.as_view(), name="model-publish"),
    path("models/<int:pk>/rounds/", models_api.ModelRoundsView.as_view(), name="model-rounds"),
]
