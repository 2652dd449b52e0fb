"""REST API of the arena: start a battle, read it, vote; the board (same JSON as the page's
``board.json``), snapshots, exclusions (owners) and the battles' JSON Lines.

A battle's turns go through the conversations API (``conversation_id``): a battle is a
conversation. Same selectors and services as the pages; the API acts for signed-in users.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api import JSONLinesBytesRenderer, JSONLinesRenderer, actor_of
from annotation.arena import services
from annotation.arena.export import battle_lines
from annotation.arena.selectors import (
    arena_board_for,
    arena_config,
    battle_for_actor,
    exclusions,
    rater_flags,
    snapshot_board_for,
    snapshot_get,
    snapshots,
)
from annotation.arena.serializers import (
    UNLISTED_NAME,
    ArenaBattleSerializer,
    ArenaBoardQuerySerializer,
    ArenaBoardSerializer,
    ArenaExclusionCreateSerializer,
    ArenaExclusionSerializer,
    ArenaRaterSerializer,
    ArenaSnapshotCreateSerializer,
    ArenaSnapshotDetailSerializer,
    ArenaSnapshotSerializer,
    ArenaVoteSerializer,
    shown_void_reason,
)
from annotation.chat.models import ConversationStatus
from annotation.chat.selectors import unlisted_positions
from annotation.selectors.tasks import bundle_for_actor, round_for_actor
from api.permissions import require
from core.errors import Conflict
from models_hub.selectors import model_ids_hidden_from
from tasks.permissions import can_manage_task
from tasks.selectors import task_get_visible

TAGS = ["arena"]
EXPORT_DESCRIPTION = (
    "One voted battle per line: both models, the vote, void and exclusion reasons, each "
    "side's conversation in the OpenAI messages format, chat's metadata, and `preference` "
    "(prompt/chosen/rejected, TRL's DPO layout) when the vote chose a side."
)


def battle_body(battle) -> dict:
    revealed = bool(battle.revealed_at) or battle.conversation.status != ConversationStatus.ACTIVE
    names, unlisted = ["Model A", "Model B"], frozenset()
    if revealed:
        conversation = battle.conversation
        unlisted = unlisted_positions(conversation, list(conversation.seats.all()))
        names = [
            UNLISTED_NAME if position in unlisted else name
            for position, name in enumerate((battle.model_a_name, battle.model_b_name))
        ]
    return ArenaBattleSerializer(
        {
            "id": battle.pk,
            "task": battle.task.code,
            "conversation_id": battle.conversation_id,
            "model_a": names[0],
            "model_b": names[1],
            "revealed": revealed,
            "vote": battle.vote,
            "void_reason": shown_void_reason(battle.void_reason, unlisted),
            "voted_at": battle.voted_at,
        }
    ).data


def _arena_task(request, code: str):
    task = task_get_visible(code, request.user)
    arena_config(task)
    return task


class BattleAPIView(APIView):
    """A battle endpoint: for signed-in users only (401 for anonymous calls, reads included:
    a battle is its worker's alone, as a conversation is)."""

    permission_classes = [IsAuthenticated]


class BattleStartView(BattleAPIView):
    @extend_schema(
        tags=TAGS,
        summary="Start a battle: a conversation with two anonymous, drawn models",
        request=None,
        responses={201: ArenaBattleSerializer},
    )
    def post(self, request, code: str):
        actor = actor_of(request)
        bundle = bundle_for_actor(code, actor)
        round_ = round_for_actor(bundle, actor)
        if round_ is None:
            raise Conflict("no round is open", code="round.closed")
        battle = services.battle_start(task=bundle.task, round_=round_, actor=actor)
        battle = battle_for_actor(battle.pk, actor)
        return Response(battle_body(battle), status=status.HTTP_201_CREATED)


class BattleDetailView(BattleAPIView):
    @extend_schema(tags=TAGS, summary="Your battle", responses=ArenaBattleSerializer)
    def get(self, request, pk: int):
        return Response(battle_body(battle_for_actor(pk, actor_of(request))))


class BattleVoteView(BattleAPIView):
    @extend_schema(
        tags=TAGS,
        summary="Vote on your battle (a, b, tie, both_bad); the models are then shown",
        request=ArenaVoteSerializer,
        responses=ArenaBattleSerializer,
    )
    def post(self, request, pk: int):
        actor = actor_of(request)
        battle = battle_for_actor(pk, actor)
        body = ArenaVoteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.battle_vote(battle, actor, body.validated_data["vote"])
        return Response(battle_body(battle_for_actor(pk, actor)))


class BoardView(APIView):
    @extend_schema(
        tags=TAGS,
        summary="The arena board: ratings, 95% intervals, ahead shares, Elo, matrices",
        parameters=[ArenaBoardQuerySerializer],
        responses=ArenaBoardSerializer,
    )
    def get(self, request, code: str):
        task = _arena_task(request, code)
        query = ArenaBoardQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        style = query.validated_data.get("style")
        board = arena_board_for(task, request.user, style_control=style)
        return Response({"task": task.code, **board.as_dict()})


class SnapshotListView(APIView):
    @extend_schema(
        tags=TAGS, summary="Frozen arena boards", responses=ArenaSnapshotSerializer(many=True)
    )
    def get(self, request, code: str):
        task = _arena_task(request, code)
        return Response(ArenaSnapshotSerializer(snapshots(task), many=True).data)

    @extend_schema(
        tags=TAGS,
        summary="Freeze the arena board (owners)",
        request=ArenaSnapshotCreateSerializer,
        responses={201: ArenaSnapshotDetailSerializer},
    )
    def post(self, request, code: str):
        task = _arena_task(request, code)
        require(request, can_manage_task, task, "only the task's owners freeze the board")
        body = ArenaSnapshotCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        snapshot = services.snapshot_create(task, by=request.user, name=body.validated_data["name"])
        return Response(
            ArenaSnapshotDetailSerializer(snapshot).data, status=status.HTTP_201_CREATED
        )


class SnapshotDetailView(APIView):
    @extend_schema(
        tags=TAGS, summary="A frozen arena board", responses=ArenaSnapshotDetailSerializer
    )
    def get(self, request, code: str, snapshot_id: int):
        task = _arena_task(request, code)
        snapshot = snapshot_get(task, snapshot_id)
        body = ArenaSnapshotDetailSerializer(snapshot).data
        return Response({**body, "board": snapshot_board_for(task, snapshot, request.user)})


class RaterListView(APIView):
    @extend_schema(
        tags=TAGS,
        summary="Each rater's agreement with the others on the counted votes, flags first (owners)",
        responses=ArenaRaterSerializer(many=True),
    )
    def get(self, request, code: str):
        task = _arena_task(request, code)
        require(request, can_manage_task, task, "only the task's owners see the raters")
        return Response(ArenaRaterSerializer(rater_flags(task), many=True).data)


class ExclusionListView(APIView):
    @extend_schema(
        tags=TAGS,
        summary="Raters whose votes are left out, with reasons (owners)",
        responses=ArenaExclusionSerializer(many=True),
    )
    def get(self, request, code: str):
        task = _arena_task(request, code)
        require(request, can_manage_task, task, "only the task's owners see exclusions")
        return Response(ArenaExclusionSerializer(exclusions(task), many=True).data)

    @extend_schema(
        tags=TAGS,
        summary="Leave a rater's votes out of the board, with a reason (owners)",
        request=ArenaExclusionCreateSerializer,
        responses={201: ArenaExclusionSerializer},
    )
    def post(self, request, code: str):
        task = _arena_task(request, code)
        require(request, can_manage_task, task, "only the task's owners exclude votes")
        body = ArenaExclusionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        exclusion = services.exclusion_create(task, by=request.user, **body.validated_data)
        return Response(ArenaExclusionSerializer(exclusion).data, status=status.HTTP_201_CREATED)


class BattleExportView(APIView):
    renderer_classes = [JSONRenderer, JSONLinesRenderer, JSONLinesBytesRenderer]

    @extend_schema(
        tags=["exports"],
        summary="The arena's battles and conversations as JSON Lines (owners when sealed)",
        responses={
            (200, JSONLinesRenderer.media_type): OpenApiResponse(
                OpenApiTypes.BINARY, description=EXPORT_DESCRIPTION
            ),
            (200, JSONLinesBytesRenderer.media_type): OpenApiResponse(
                OpenApiTypes.BINARY, description=EXPORT_DESCRIPTION
            ),
        },
    )
    def get(self, request, code: str):
        task = _arena_task(request, code)
        config, _ = arena_config(task)
        if config.sealed:
            require(request, can_manage_task, task, "this arena's battles are sealed")
        if isinstance(request.accepted_renderer, JSONLinesBytesRenderer):
            content_type = JSONLinesBytesRenderer.media_type
        else:
            content_type = f"{JSONLinesRenderer.media_type}; charset=utf-8"
        hidden = model_ids_hidden_from(task, request.user)
        response = StreamingHttpResponse(battle_lines(task, hidden), content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{task.code}-arena-battles.jsonl"'
        response["Cache-Control"] = "no-store"
        return response
