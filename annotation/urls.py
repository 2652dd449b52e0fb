"""URLs of the create, validate and review pages (mounted at the site root)."""

from django.urls import path

from annotation import views
from annotation.urls_extra import urlpatterns as extra_urlpatterns

app_name = "annotation"

urlpatterns = [
    path("tasks/<slug:code>/create", views.create, name="create"),
    path("tasks/<slug:code>/validate", views.validate, name="validate"),
    path("tasks/<slug:code>/review", views.review, name="review"),
    path("tasks/<slug:code>/review/<int:pk>", views.review_submit, name="review_submit"),
    path("tasks/<slug:code>/examples/<int:pk>/", views.example_detail, name="example"),
    path("tasks/<slug:code>/examples/<int:pk>/status", views.example_status, name="example_status"),
    path("tasks/<slug:code>/examples/<int:pk>/retry", views.example_retry, name="example_retry"),
    path(
        "tasks/<slug:code>/examples/<int:pk>/verdict", views.example_verdict, name="example_verdict"
    ),
    path(
        "tasks/<slug:code>/examples/<int:pk>/metadata",
        views.example_metadata,
        name="example_metadata",
    ),
    path(
        "tasks/<slug:code>/examples/<int:pk>/retract", views.example_retract, name="example_retract"
    ),
    path("tasks/<slug:code>/examples/<int:pk>/flag", views.example_flag, name="example_flag"),
    path(
        "tasks/<slug:code>/sandbox/<str:job_id>/status",
        views.sandbox_status,
        name="sandbox_status",
    ),
]


urlpatterns += extra_urlpatterns
