"""URLs of the annotation pages (mounted at the site root)."""

from django.urls import path

from annotation.arena.urls import urlpatterns as arena_urlpatterns
from annotation.chat.urls import urlpatterns as chat_urlpatterns
from annotation.views import campaigns, create, examples, export, review, stats, validate
from annotation.views.pages import EXAMPLE_ACTIONS

app_name = "annotation"

EXAMPLE = "tasks/<slug:code>/examples/<int:pk>/"

urlpatterns = [
    *chat_urlpatterns,
    *arena_urlpatterns,
    path("tasks/<slug:code>/create", create.create, name="create"),
    path(
        "tasks/<slug:code>/sandbox/<str:job_id>/status",
        create.sandbox_status,
        name="sandbox_status",
    ),
    path(EXAMPLE, examples.example_detail, name="example"),
    *(
        path(f"{EXAMPLE}{action}", getattr(examples, f"example_{action}"), name=f"example_{action}")
        for action in EXAMPLE_ACTIONS
    ),
    path("tasks/<slug:code>/validate", validate.validate, name="validate"),
    path("tasks/<slug:code>/review", review.review, name="review"),
    path("tasks/<slug:code>/review/<int:pk>", review.review_submit, name="review_submit"),
    path("tasks/<slug:code>/stats/", stats.TaskStatsView.as_view(), name="stats"),
    path("tasks/<slug:code>/workers/", stats.WorkerLeaderboardView.as_view(), name="workers"),
    path("tasks/<slug:code>/export.jsonl", export.TaskExportView.as_view(), name="export"),
    path("tasks/<slug:code>/campaigns/", campaigns.CampaignListView.as_view(), name="campaigns"),
    path(
        "tasks/<slug:code>/campaigns/<int:campaign_id>/",
        campaigns.CampaignDetailView.as_view(),
        name="campaign_detail",
    ),
    path(
        "tasks/<slug:code>/campaigns/<int:campaign_id>/release/",
        campaigns.CampaignReleaseView.as_view(),
        name="campaign_release",
    ),
    path(
        "tasks/<slug:code>/campaigns/<int:campaign_id>/signed-links/",
        campaigns.CampaignSignedLinksView.as_view(),
        name="campaign_signed_links",
    ),
    path(
        "tasks/<slug:code>/campaigns/<int:campaign_id>/links.csv",
        campaigns.CampaignLinksCsvView.as_view(),
        name="campaign_links_csv",
    ),
    path(
        "tasks/<slug:code>/campaigns/<int:campaign_id>/toggle/",
        campaigns.CampaignToggleView.as_view(),
        name="campaign_toggle",
    ),
    path(
        "tasks/<slug:code>/campaigns/<int:campaign_id>/workers.csv",
        campaigns.CampaignCsvView.as_view(),
        name="campaign_csv",
    ),
    # "done" before the signed token, which would otherwise match it.
    path("c/done/", campaigns.CampaignDoneView.as_view(), name="campaign_done"),
    path("c/<str:signed>/", campaigns.CampaignEnterView.as_view(), name="campaign_enter"),
]
