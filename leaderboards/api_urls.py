"""REST API URLs of the leaderboards app (datasets, evaluation runs, scores and leaderboards).

Included by ``api.urls`` under ``/api/v1/`` in the ``api`` namespace; views in ``leaderboards.api``.
"""

from django.urls import path

from leaderboards import api as boards_api

urlpatterns = [
    path("tasks/<slug:code>/datasets/", boards_api.DatasetListView.as_view(), name="dataset-list"),
    path(
        "tasks/<slug:code>/datasets/<slug:slug>/",
        boards_api.DatasetDetailView.as_view(),
        name="dataset-detail",
    ),
    path(
        "tasks/<slug:code>/datasets/<slug:slug>/examples/",
        boards_api.DatasetExamplesView.as_view(),
        name="dataset-examples",
    ),
    path("models/<int:pk>/runs/", boards_api.ModelRunListView.as_view(), name="model-runs"),
    path(
        "models/<int:pk>/predictions/",
        boards_api.PredictionsUploadView.as_view(),
        name="model-predictions",
    ),
    path("models/<int:pk>/scores/", boards_api.ModelScoreListView.as_view(), name="model-scores"),
    path("runs/<int:pk>/", boards_api.RunDetailView.as_view(), name="run-detail"),
    path("runs/<int:pk>/retry/", boards_api.RunRetryView.as_view(), name="run-retry"),
    path(
        "tasks/<slug:code>/leaderboard/", boards_api.LeaderboardView.as_view(), name="leaderboard"
    ),
    path(
        "tasks/<slug:code>/leaderboard/forks/",
        boards_api.ForkListView.as_view(),
        name="fork-list",
    ),
    path(
        "tasks/<slug:code>/leaderboard/forks/<slug:slug>/",
        boards_api.ForkDetailView.as_view(),
        name="fork-detail",
    ),
    path(
        "tasks/<slug:code>/leaderboard/snapshots/",
        boards_api.SnapshotListView.as_view(),
        name="snapshot-list",
    ),
    path(
        "tasks/<slug:code>/leaderboard/snapshots/<int:pk>/",
        boards_api.SnapshotDetailView.as_view(),
        name="snapshot-detail",
    ),
]
