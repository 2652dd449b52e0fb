"""URLs of datasets, evaluation runs and predictions files (included by leaderboards.urls)."""

from django.urls import path

from leaderboards import views_runs

urlpatterns = [
    path(
        "tasks/<slug:code>/datasets/",
        views_runs.DatasetListView.as_view(),
        name="dataset_list",
    ),
    path(
        "tasks/<slug:code>/datasets/upload",
        views_runs.DatasetUploadView.as_view(),
        name="dataset_upload",
    ),
    path(
        "tasks/<slug:code>/datasets/<slug:slug>/",
        views_runs.DatasetDetailView.as_view(),
        name="dataset_detail",
    ),
    path(
        "tasks/<slug:code>/datasets/<slug:slug>/perturb",
        views_runs.DatasetPerturbView.as_view(),
        name="dataset_perturb",
    ),
    path("runs/<int:run_id>/", views_runs.RunDetailView.as_view(), name="run_detail"),
    path("runs/<int:run_id>/progress", views_runs.RunProgressView.as_view(), name="run_progress"),
    path("runs/<int:run_id>/retry", views_runs.RunRetryView.as_view(), name="run_retry"),
    path(
        "models/<int:pk>/runs/progress",
        views_runs.ModelRunsProgressView.as_view(),
        name="model_runs_progress",
    ),
    path(
        "models/<int:pk>/predictions/upload",
        views_runs.PredictionsUploadView.as_view(),
        name="predictions_upload",
    ),
]
