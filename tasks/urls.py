from django.urls import path

from tasks.views import accounts, docs, uploads
from tasks.views import pages as views

app_name = "tasks"

urlpatterns = [
    path("", views.TaskListView.as_view(), name="home"),
    path("leaderboards/", views.LeaderboardIndexView.as_view(), name="leaderboards"),
    path("tasks/<slug:code>/", views.TaskDetailView.as_view(), name="detail"),
    path("propose/", views.TaskProposalView.as_view(), name="propose"),
    path("profile/", views.ProfileView.as_view(), name="profile"),
    path("accounts/signup/", accounts.SignUpView.as_view(), name="signup"),
    path("docs/<slug:slug>/", docs.DocumentationView.as_view(), name="documentation"),
    path("uploads/<int:pk>/", uploads.UploadJobView.as_view(), name="upload"),
    path(
        "uploads/<int:pk>/progress", uploads.UploadJobProgressView.as_view(), name="upload_progress"
    ),
]
