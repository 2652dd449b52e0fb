"""URLs of the leaderboard pages (the run pages are appended from ``urls_runs``)."""

from django.urls import path

from leaderboards import views

app_name = "leaderboards"

urlpatterns: list = [
    path("tasks/<slug:code>/leaderboard/", views.LeaderboardView.as_view(), name="task"),
    path(
        "tasks/<slug:code>/leaderboard.json", views.LeaderboardJsonView.as_view(), name="task_json"
    ),
    path("tasks/<slug:code>/leaderboard.csv", views.LeaderboardCsvView.as_view(), name="task_csv"),
    path(
        "tasks/<slug:code>/leaderboard/forks/<slug:slug>/",
        views.LeaderboardView.as_view(),
        name="fork",
    ),
    path("tasks/<slug:code>/leaderboard/forks/", views.fork_create_view, name="fork_create"),
    path(
        "tasks/<slug:code>/leaderboard/snapshots/<int:snapshot_id>/",
        views.SnapshotView.as_view(),
        name="snapshot",
    ),
    path(
        "tasks/<slug:code>/leaderboard/snapshots/",
        views.snapshot_create_view,
        name="snapshot_create",
    ),
    path("models/<int:pk>/results/", views.ModelResultsView.as_view(), name="model"),
]

from leaderboards.urls_runs import urlpatterns as run_urlpatterns  # noqa: E402

urlpatterns += run_urlpatterns
