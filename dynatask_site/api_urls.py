"""URLs of the REST API (/api/v1/), its schema and docs, and the API tokens page.

Included at the root by ``dynatask_site.urls``; every path here names its full prefix.
"""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation import api as annotation_api
from annotation.arena import api as arena_api
from annotation.chat import api as chat_api
from dynatask_site.api import json_not_found
from leaderboards import api as boards_api
from models_hub import api as models_api
from tasks import api as tasks_api
from tasks.views import tokens as views_tokens

v1 = [
    # the task-config format (JSON Schema, both formats)
    path(
        "schemas/task-config.json",
        tasks_api.TaskConfigSchemaView.as_view(),
        name="task-config-schema",
    ),
    # tasks
    path("tasks/", tasks_api.TaskListView.as_view(), name="task-list"),
    path("tasks/<slug:code>/", tasks_api.TaskDetailView.as_view(), name="task-detail"),
    path("tasks/<slug:code>/rounds/", tasks_api.RoundListView.as_view(), name="round-list"),
    path(
        "tasks/<slug:code>/rounds/<int:number>/models/",
        models_api.RoundLoopView.as_view(),
        name="round-loop",
    ),
    path(
        "tasks/<slug:code>/contexts/", tasks_api.ContextUploadView.as_view(), name="context-upload"
    ),
    path("uploads/<int:pk>/", tasks_api.UploadJobDetailView.as_view(), name="upload-detail"),
    path(
        "tasks/<slug:code>/contexts/sample/",
        annotation_api.ContextSampleView.as_view(),
        name="context-sample",
    ),
    # examples and validations
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
    # conversations (chat tasks)
    path(
        "tasks/<slug:code>/conversations/",
        chat_api.ConversationStartView.as_view(),
        name="conversation-start",
    ),
    path(
        "tasks/<slug:code>/conversations/export/",
        chat_api.ChatExportView.as_view(),
        name="conversation-export",
    ),
    path(
        "conversations/<int:pk>/",
        chat_api.ConversationDetailView.as_view(),
        name="conversation-detail",
    ),
    path("conversations/<int:pk>/turns/", chat_api.TurnCreateView.as_view(), name="turn-create"),
    path(
        "conversations/<int:pk>/turns/<int:turn_id>/choice/",
        chat_api.TurnChoiceView.as_view(),
        name="turn-choice",
    ),
    path(
        "conversations/<int:pk>/replies/<int:reply_id>/",
        chat_api.ReplyDetailView.as_view(),
        name="reply-detail",
    ),
    path(
        "conversations/<int:pk>/replies/<int:reply_id>/stream/",
        chat_api.ReplyStreamView.as_view(),
        name="reply-stream",
    ),
    path(
        "conversations/<int:pk>/replies/<int:reply_id>/retry/",
        chat_api.ReplyRetryView.as_view(),
        name="reply-retry",
    ),
    path(
        "conversations/<int:pk>/replies/<int:reply_id>/cancel/",
        chat_api.ReplyCancelView.as_view(),
        name="reply-cancel",
    ),
    path(
        "conversations/<int:pk>/finish/",
        chat_api.ConversationFinishView.as_view(),
        name="conversation-finish",
    ),
    path(
        "examples/<int:pk>/transcript/",
        chat_api.ExampleTranscriptView.as_view(),
        name="example-transcript",
    ),
    # the arena (battles are conversations: their turns go through the conversations API)
    path(
        "tasks/<slug:code>/arena/battles/", arena_api.BattleStartView.as_view(), name="battle-start"
    ),
    path(
        "tasks/<slug:code>/arena/battles/export/",
        arena_api.BattleExportView.as_view(),
        name="battle-export",
    ),
    path("arena/battles/<int:pk>/", arena_api.BattleDetailView.as_view(), name="battle-detail"),
    path("arena/battles/<int:pk>/vote/", arena_api.BattleVoteView.as_view(), name="battle-vote"),
    path("tasks/<slug:code>/arena/board/", arena_api.BoardView.as_view(), name="arena-board"),
    path(
        "tasks/<slug:code>/arena/snapshots/",
        arena_api.SnapshotListView.as_view(),
        name="arena-snapshots",
    ),
    path(
        "tasks/<slug:code>/arena/snapshots/<int:snapshot_id>/",
        arena_api.SnapshotDetailView.as_view(),
        name="arena-snapshot",
    ),
    path("tasks/<slug:code>/arena/raters/", arena_api.RaterListView.as_view(), name="arena-raters"),
    path(
        "tasks/<slug:code>/arena/exclusions/",
        arena_api.ExclusionListView.as_view(),
        name="arena-exclusions",
    ),
    # models
    path("tasks/<slug:code>/models/", models_api.TaskModelListView.as_view(), name="model-list"),
    path("models/<int:pk>/", models_api.ModelDetailView.as_view(), name="model-detail"),
    path("models/<int:pk>/publish/", models_api.ModelPublishView.as_view(), name="model-publish"),
    path("models/<int:pk>/rounds/", models_api.ModelRoundsView.as_view(), name="model-rounds"),
    # datasets, evaluations and scores
    path("tasks/<slug:code>/datasets/", boards_api.DatasetListView.as_view(), name="dataset-list"),
    path(
        "tasks/<slug:code>/datasets/<slug:slug>/",
        boards_api.DatasetDetailView.as_view(),
        name="dataset-detail",
    ),
    path(
        "tasks/<slug:code>/datasets/<slug:slug>/examples/",
        boards_api.DatasetExamplesView.as_view(),
        name="dataset-examples",
    ),
    path("models/<int:pk>/runs/", boards_api.ModelRunListView.as_view(), name="model-runs"),
    path(
        "models/<int:pk>/predictions/",
        boards_api.PredictionsUploadView.as_view(),
        name="model-predictions",
    ),
    path("models/<int:pk>/scores/", boards_api.ModelScoreListView.as_view(), name="model-scores"),
    path("runs/<int:pk>/", boards_api.RunDetailView.as_view(), name="run-detail"),
    path("runs/<int:pk>/retry/", boards_api.RunRetryView.as_view(), name="run-retry"),
    # leaderboards
    path(
        "tasks/<slug:code>/leaderboard/", boards_api.LeaderboardView.as_view(), name="leaderboard"
    ),
    path(
        "tasks/<slug:code>/leaderboard/forks/",
        boards_api.ForkListView.as_view(),
        name="fork-list",
    ),
    path(
        "tasks/<slug:code>/leaderboard/forks/<slug:slug>/",
        boards_api.ForkDetailView.as_view(),
        name="fork-detail",
    ),
    path(
        "tasks/<slug:code>/leaderboard/snapshots/",
        boards_api.SnapshotListView.as_view(),
        name="snapshot-list",
    ),
    path(
        "tasks/<slug:code>/leaderboard/snapshots/<int:pk>/",
        boards_api.SnapshotDetailView.as_view(),
        name="snapshot-detail",
    ),
]

urlpatterns = [
    path("api/v1/", include((v1, "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    re_path(r"^api/", json_not_found),
    path("profile/tokens/", views_tokens.ApiTokensView.as_view(), name="api_tokens"),
]
