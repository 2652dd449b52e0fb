"""URLs of the models hub pages."""

from django.urls import path

from models_hub import views

app_name = "models_hub"

urlpatterns = [
    path("tasks/<slug:code>/models/register", views.ModelRegisterView.as_view(), name="register"),
    path("tasks/<slug:code>/models/loop", views.ModelLoopView.as_view(), name="loop"),
    path(
        "tasks/<slug:code>/models/loop/health",
        views.LoopHealthView.as_view(),
        name="loop_health",
    ),
    path("models/<int:pk>/", views.ModelDetailView.as_view(), name="detail"),
    path("models/<int:pk>/edit", views.ModelEditView.as_view(), name="edit"),
    path("models/<int:pk>/health", views.ModelHealthView.as_view(), name="health"),
]
