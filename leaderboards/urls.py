"""Every route of the leaderboards app: leaderboards, models, datasets, runs, predictions."""

from django.urls import path

from leaderboards.views import boards, datasets, models, predictions, runs

app_name = "leaderboards"

urlpatterns = [
    # leaderboards, forks and snapshots
    path("tasks/<slug:code>/leaderboard/", boards.LeaderboardView.as_view(), name="task"),
    path(
        "tasks/<slug:code>/leaderboard.json", boards.LeaderboardJsonView.as_view(), name="task_json"
    ),
    path("tasks/<slug:code>/leaderboard.csv", boards.LeaderboardCsvView.as_view(), name="task_csv"),
    path(
        "tasks/<slug:code>/leaderboard/forks/<slug:slug>/",
        boards.LeaderboardView.as_view(),
        name="fork",
    ),
    path("tasks/<slug:code>/leaderboard/forks/", boards.fork_create_view, name="fork_create"),
    path(
        "tasks/<slug:code>/leaderboard/snapshots/<int:snapshot_id>/",
        boards.SnapshotView.as_view(),
        name="snapshot",
    ),
    path(
        "tasks/<slug:code>/leaderboard/snapshots/",
        boards.snapshot_create_view,
        name="snapshot_create",
    ),
    # models
    path("models/<int:pk>/results/", models.ModelResultsView.as_view(), name="model"),
    path(
        "models/<int:pk>/runs/progress",
        models.ModelRunsProgressView.as_view(),
        name="model_runs_progress",
    ),
    path(
        "models/<int:pk>/predictions/upload",
        predictions.PredictionsUploadView.as_view(),
        name="predictions_upload",
    ),
    # datasets
    path("tasks/<slug:code>/datasets/", datasets.DatasetListView.as_view(), name="dataset_list"),
    path(
        "tasks/<slug:code>/datasets/upload",
        datasets.DatasetUploadView.as_view(),
        name="dataset_upload",
    ),
    path(
        "tasks/<slug:code>/datasets/<slug:slug>/",
        datasets.DatasetDetailView.as_view(),
        name="dataset_detail",
    ),
    path(
        "tasks/<slug:code>/datasets/<slug:slug>/inputs.jsonl",
        datasets.DatasetInputsView.as_view(),
        name="dataset_inputs",
    ),
    path(
        "tasks/<slug:code>/datasets/<slug:slug>/perturb",
        datasets.DatasetPerturbView.as_view(),
        name="dataset_perturb",
    ),
    # evaluation runs
    path("runs/<int:run_id>/", runs.RunDetailView.as_view(), name="run_detail"),
    path("runs/<int:run_id>/progress", runs.RunProgressView.as_view(), name="run_progress"),
    path("runs/<int:run_id>/retry", runs.RunRetryView.as_view(), name="run_retry"),
]
