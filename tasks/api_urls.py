"""REST API URLs of the tasks app (tasks, rounds, context uploads).

Included by ``api.urls`` under ``/api/v1/`` in the ``api`` namespace; views in ``tasks.api``.
"""

from django.urls import path

from tasks import api as tasks_api

urlpatterns = [
    path("tasks/", tasks_api.TaskListView.as_view(), name="task-list"),
    path("tasks/<slug:code>/", tasks_api.TaskDetailView.as_view(), name="task-detail"),
    path("tasks/<slug:code>/rounds/", tasks_api.RoundListView.as_view(), name="round-list"),
    path(
        "tasks/<slug:code>/contexts/", tasks_api.ContextUploadView.as_view(), name="context-upload"
    ),
    path("uploads/<int:pk>/", tasks_api.UploadJobDetailView.as_view(), name="upload-detail"),
    # the task-config format (JSON Schema, both formats)
    path(
        "schemas/task-config.json",
        tasks_api.TaskConfigSchemaView.as_view(),
        name="task-config-schema",
    ),
]
