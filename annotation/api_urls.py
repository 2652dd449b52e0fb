"""REST API URLs of the annotation app (contexts to write on, examples, validations and exports).

Included by ``api.urls`` under ``/api/v1/`` in the ``api`` namespace; views in ``annotation.api``.
"""

from django.urls import path

from annotation import api as annotation_api
from annotation.arena import api as arena_api
from annotation.chat import api as chat_api

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
        "conversations/<int:pk>/turns/stream/",
        chat_api.TurnStreamView.as_view(),
        name="turn-stream",
    ),
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
]
