"""URL patterns of the stats, campaign and export pages (merged into annotation.urls)."""

from django.urls import path

from annotation import views_campaigns, views_export, views_stats

urlpatterns = [
    path("tasks/<slug:code>/stats/", views_stats.TaskStatsView.as_view(), name="stats"),
    path("tasks/<slug:code>/workers/", views_stats.WorkerLeaderboardView.as_view(), name="workers"),
    path("tasks/<slug:code>/export.jsonl", views_export.TaskExportView.as_view(), name="export"),
    path(
        "tasks/<slug:code>/campaigns/",
        views_campaigns.CampaignListView.as_view(),
        name="campaigns",
    ),
    path(
        "tasks/<slug:code>/campaigns/<int:campaign_id>/toggle/",
        views_campaigns.CampaignToggleView.as_view(),
        name="campaign_toggle",
    ),
    path(
        "tasks/<slug:code>/campaigns/<int:campaign_id>/workers.csv",
        views_campaigns.CampaignCsvView.as_view(),
        name="campaign_csv",
    ),
    # "done" before the signed token, which would otherwise match it.
    path("c/done/", views_campaigns.CampaignDoneView.as_view(), name="campaign_done"),
    path("c/<str:signed>/", views_campaigns.CampaignEnterView.as_view(), name="campaign_enter"),
]
