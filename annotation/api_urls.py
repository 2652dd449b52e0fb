"""REST API URLs of the annotation app (contexts to write on, examples, validations and exports).

Included by ``api.urls`` under ``/api/v1/`` in the ``api`` namespace; views in ``annotation.api``.
"""

from django.urls import path

from annotation import api as annotation_api

urlpatterns = [
    path(
        "tasks/<slug:code>/contexts/sample/",
        annotation_api.ContextSampleView.as_view(),
        name="context-sample",
    ),
    path(
        "tasks/<slug:code>/examples/",
        annotation_api.TaskExampleListView.as_view(),
        name="example-list",
    ),
    path("examples/<int:pk>/", annotation_api.ExampleDetailView.as_view(), name="example-detail"),
    path(
        "examples/<int:pk>/retract/",
        annotation_api.ExampleRetractView.as_view(),
        name="example-retract",
    ),
    path("examples/<int:pk>/flag/", annotation_api.ExampleFlagView.as_view(), name="example-flag"),
    path(
        "examples/<int:pk>/verdict/",
        annotation_api.ExampleVerdictView.as_view(),
        name="example-verdict",
    ),
    path(
        "examples/<int:pk>/retry/", annotation_api.ExampleRetryView.as_view(), name="example-retry"
    ),
    path(
        "tasks/<slug:code>/validations/next/",
        annotation_api.NextToValidateView.as_view(),
        name="validation-next",
    ),
    path(
        "tasks/<slug:code>/validations/",
        annotation_api.ValidationCreateView.as_view(),
        name="validation-create",
    ),
    path("tasks/<slug:code>/export/", annotation_api.ExportView.as_view(), name="export"),
]
