"""REST API of chat collection: everything the conversation page does.

Start a conversation, send a turn, read a reply's stream (server-sent events, or wait for
the reply as JSON), retry or cancel a reply, choose among the answers, finish; validators read
the transcript of the example they validate (then use the validations API); owners export.
The same selectors and services as the pages; the API acts for signed-in users.
"""

from __future__ import annotations

import time

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api import JSONLinesBytesRenderer, JSONLinesRenderer, actor_of
from annotation.chat import services, streams
from annotation.chat.export import messages_of_turns
from annotation.chat.models import ChatReply, ReplyStatus
from annotation.chat.selectors import (
    STALE_MARGIN_SECONDS,
    chat_config,
    conversation_for_actor,
    example_transcript,
    reply_for_actor,
    reveals,
    seat_label,
    transcript,
)
from annotation.chat.serializers import (
    ChoiceSerializer,
    ConversationSerializer,
    ExportKindSerializer,
    FinishSerializer,
    ReplySerializer,
    ReplyWaitSerializer,
    TranscriptSerializer,
    TurnCreateSerializer,
    TurnSerializer,
)
from annotation.chat.services import FinishForm
from annotation.chat.views import export_lines, reply_events, turn_events
from annotation.models import Example
from annotation.selectors.tasks import bundle_for_actor, round_for_actor
from annotation.selectors.validation import example_for_validation
from annotation.stats.summaries import round_by_number
from api.permissions import require
from core.errors import Conflict, NotFound
from tasks.permissions import can_export_examples
from tasks.selectors import task_get_visible

TAGS = ["conversations"]
EXPORT_DESCRIPTION = (
    "`conversations`: one conversation per line in the OpenAI messages format with its "
    "metadata; `preferences`: prompt/chosen/rejected pairs (TRL's DPO layout)."
)


def _serialized(conversation, request=None) -> dict:
    chat = chat_config(conversation)
    shown = transcript(conversation, reveal=reveals(conversation, chat))
    context = _context(shown, conversation)
    return ConversationSerializer(
        {
            "id": conversation.pk,
            "task": conversation.task.code,
            "status": conversation.status,
            "example_id": conversation.example_id,
            "min_turns": chat.min_turns,
            "max_turns": chat.max_turns,
            "turn_choice": list(chat.turn_choice),
            "seats": [
                {"position": s.position, "model": shown.labels[s.position], "fooled": s.fooled}
                for s in shown.seats
            ],
            "turns": shown.turns,
            "rating": conversation.rating,
            "model_wrong": conversation.model_wrong,
        },
        context=context,
    ).data


def _context(shown, conversation) -> dict:
    """The serializers' context: the seats' labels and whether identities show."""
    return {
        "labels": shown.labels,
        "conversation": conversation,
        "reveal": shown.revealed,
        "unlisted": shown.unlisted,
    }


def _conversation(request, pk: int):
    return conversation_for_actor(pk, actor_of(request))


def _reply_data(conversation, reply) -> dict:
    shown = transcript(conversation, reveal=reveals(conversation, chat_config(conversation)))
    return ReplySerializer(reply, context=_context(shown, conversation)).data


def _reply(conversation, reply_id: int) -> ChatReply:
    reply = ChatReply.objects.filter(pk=reply_id, turn__conversation=conversation).first()
    if reply is None:
        raise NotFound("no such reply")
    return reply


class ChatAPIView(APIView):
    """A conversation endpoint: for signed-in users only (401 for anonymous calls, reads
    included; a conversation is its worker's alone)."""

    permission_classes = [IsAuthenticated]


class ConversationStartView(ChatAPIView):
    @extend_schema(
        tags=TAGS,
        summary="Start a conversation with fairly drawn models (chat tasks)",
        request=None,
        responses={201: ConversationSerializer},
    )
    def post(self, request, code: str):
        actor = actor_of(request)
        bundle = bundle_for_actor(code, actor)
        round_ = round_for_actor(bundle, actor)
        if round_ is None:
            raise Conflict("no round is open", code="round.closed")
        conversation = services.conversation_start(task=bundle.task, round_=round_, actor=actor)
        conversation = conversation_for_actor(conversation.pk, actor)
        return Response(_serialized(conversation), status=status.HTTP_201_CREATED)


class ConversationDetailView(ChatAPIView):
    @extend_schema(tags=TAGS, summary="Your conversation", responses=ConversationSerializer)
    def get(self, request, pk: int):
        return Response(_serialized(_conversation(request, pk)))


class EventStreamRenderer(JSONRenderer):
    """``text/event-stream``: the reply's server-sent events (errors stay JSON)."""

    media_type = "text/event-stream"
    format = "sse"


class EventStreamBytesRenderer(JSONRenderer):
    """The same events as ``application/octet-stream``, for generated clients (which keep
    only bytes in a media type they know)."""

    media_type = "application/octet-stream"
    format = "sse-bytes"


STREAM_DESCRIPTION = (
    "`event: text` with a piece of the reply, then one of `event: done` / `error` / "
    "`cancelled` with the stored fields as JSON. `Accept: application/octet-stream` gets the "
    "same bytes under that media type."
)


def _new_turn_data(turn) -> dict:
    """The turn just sent, from the rows the send wrote and read (no other query)."""
    conversation = turn.conversation
    reveal = not chat_config(conversation).hide_model_identities
    labels = {seat.position: seat_label(seat, reveal) for seat in conversation.seats.all()}
    context = {"labels": labels, "conversation": conversation, "reveal": reveal}
    return {
        "id": turn.pk,
        "number": turn.number,
        "message": turn.message,
        "choice": turn.choice,
        "best_position": turn.best_position,
        "slider": turn.slider,
        "replies": ReplySerializer(turn.new_replies, many=True, context=context).data,
    }


def _send(request, pk: int):
    body = TurnCreateSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    return services.turn_send_to(pk, actor_of(request), body.validated_data["message"])


class TurnCreateView(ChatAPIView):
    @extend_schema(
        tags=TAGS,
        summary="Send a message: every model of the conversation answers it (streamed)",
        request=TurnCreateSerializer,
        responses={201: TurnSerializer},
    )
    def post(self, request, pk: int):
        turn = _send(request, pk)
        return Response(_new_turn_data(turn), status=status.HTTP_201_CREATED)


TURN_STREAM_DESCRIPTION = (
    "First `event: turn` with the turn as `POST .../turns/` answers it, then every reply's "
    "events as they come, each JSON with its `reply` id: `event: text` (`text`: a piece of "
    "the reply), then one of `event: done` / `error` / `cancelled` with the stored fields. "
    "The stream ends when every reply has ended; a reply's own stream (`stream_url`) can be "
    "read again. `Accept: application/octet-stream` gets the same bytes under that media type."
)


class TurnStreamView(ChatAPIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer, EventStreamBytesRenderer]

    @extend_schema(
        tags=TAGS,
        summary="Send a message and read every model's reply in the same response (events)",
        request=TurnCreateSerializer,
        responses={
            (201, EventStreamBytesRenderer.media_type): OpenApiResponse(
                OpenApiTypes.BINARY, description=TURN_STREAM_DESCRIPTION
            ),
            (201, EventStreamRenderer.media_type): OpenApiResponse(
                OpenApiTypes.BINARY, description=TURN_STREAM_DESCRIPTION
            ),
        },
    )
    def post(self, request, pk: int):
        turn = _send(request, pk)
        seconds = chat_config(turn.conversation).reply_timeout + STALE_MARGIN_SECONDS
        events = turn_events(_new_turn_data(turn), turn.new_replies, seconds)
        return _event_stream(request, events, status.HTTP_201_CREATED)


class ReplyDetailView(ChatAPIView):
    @extend_schema(
        tags=TAGS,
        summary="A reply; with ?wait=N, wait up to N seconds for it to finish",
        parameters=[ReplyWaitSerializer],
        responses=ReplySerializer,
    )
    def get(self, request, pk: int, reply_id: int):
        conversation = _conversation(request, pk)
        query = ReplyWaitSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        reply = _reply(conversation, reply_id)
        wait = query.validated_data["wait"]
        if reply.status == ReplyStatus.STREAMING and wait > 0:
            key = streams.reply_key(reply.pk, reply.attempt)
            deadline = time.monotonic() + wait
            for kind, _data in streams.follow(key, wait, poll_ms=500):
                if kind in streams.TERMINAL or time.monotonic() > deadline:
                    break
            reply.refresh_from_db()
        return Response(_reply_data(conversation, reply))


class ReplyStreamView(ChatAPIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer, EventStreamBytesRenderer]

    @extend_schema(
        tags=TAGS,
        summary="A reply as server-sent events: text pieces, then done, error or cancelled",
        parameters=[
            OpenApiParameter(
                "attempt", int, description="The attempt to follow (default: the latest)."
            )
        ],
        responses={
            (200, EventStreamBytesRenderer.media_type): OpenApiResponse(
                OpenApiTypes.BINARY, description=STREAM_DESCRIPTION
            ),
            (200, EventStreamRenderer.media_type): OpenApiResponse(
                OpenApiTypes.BINARY, description=STREAM_DESCRIPTION
            ),
        },
    )
    def get(self, request, pk: int, reply_id: int):
        reply = reply_for_actor(pk, reply_id, actor_of(request))
        attempt = request.query_params.get("attempt", "")
        attempt = int(attempt) if attempt.isdigit() else reply.attempt
        seconds = chat_config(reply.turn.conversation).reply_timeout + STALE_MARGIN_SECONDS
        return _event_stream(request, reply_events(reply, attempt, seconds))


def _event_stream(request, events, status_code: int = 200) -> StreamingHttpResponse:
    content_type = EventStreamRenderer.media_type
    if isinstance(request.accepted_renderer, EventStreamBytesRenderer):
        content_type = EventStreamBytesRenderer.media_type
    response = StreamingHttpResponse(events, content_type=content_type, status=status_code)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


class ReplyRetryView(ChatAPIView):
    @extend_schema(
        tags=TAGS,
        summary="Ask the model again for a failed reply",
        request=None,
        responses=ReplySerializer,
    )
    def post(self, request, pk: int, reply_id: int):
        conversation = _conversation(request, pk)
        reply = services.reply_retry(conversation, actor_of(request), reply_id)
        return Response(_reply_data(conversation, reply))


class ReplyCancelView(ChatAPIView):
    @extend_schema(
        tags=TAGS, summary="Stop a streaming reply", request=None, responses=ReplySerializer
    )
    def post(self, request, pk: int, reply_id: int):
        conversation = _conversation(request, pk)
        reply = services.reply_cancel(conversation, actor_of(request), reply_id)
        return Response(_reply_data(conversation, reply))


class TurnChoiceView(ChatAPIView):
    @extend_schema(
        tags=TAGS,
        summary="Choose among the answers of the last turn (best, tie or all_bad)",
        request=ChoiceSerializer,
        responses=TurnSerializer,
    )
    def post(self, request, pk: int, turn_id: int):
        conversation = _conversation(request, pk)
        body = ChoiceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        values = body.validated_data
        services.turn_choose(
            conversation,
            actor_of(request),
            turn_id,
            values["choice"],
            values.get("best_position"),
            values.get("slider"),
        )
        data = _serialized(conversation)
        return Response(next(item for item in data["turns"] if item["id"] == turn_id))


class ConversationFinishView(ChatAPIView):
    @extend_schema(
        tags=TAGS,
        summary="Finish: the verdict, rating and answers; the conversation becomes an example",
        request=FinishSerializer,
        responses=ConversationSerializer,
    )
    def post(self, request, pk: int):
        conversation = _conversation(request, pk)
        body = FinishSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        values = body.validated_data
        positions = values.get("fooled_positions")
        form = FinishForm(
            fooled_positions=tuple(positions) if positions is not None else None,
            rating=values.get("rating"),
            free_text=values.get("free_text", ""),
            metadata=values.get("metadata") or {},
            time_spent_ms=values.get("time_spent_ms"),
        )
        services.conversation_finish(conversation, actor_of(request), form)
        return Response(_serialized(_conversation(request, pk)))


class ExampleTranscriptView(ChatAPIView):
    @extend_schema(
        tags=TAGS,
        summary="The transcript of a chat example in your validation queue (or your own)",
        responses=TranscriptSerializer,
    )
    def get(self, request, pk: int):
        actor = actor_of(request)
        code = Example.objects.filter(pk=pk).values_list("task__code", flat=True).first()
        if code is None:
            raise NotFound("no such example")
        task = bundle_for_actor(code, actor).task
        example = example_for_validation(task, pk, actor)
        if example is None:
            example = Example.objects.filter(pk=pk, **actor.filter_kwargs()).first()
        shown = example_transcript(example) if example is not None else None
        if shown is None:
            raise NotFound("no conversation to read for this example")
        context = _context(shown, shown.conversation)
        return Response(
            TranscriptSerializer(
                {
                    "example_id": example.pk,
                    "conversation_id": shown.conversation.pk,
                    "messages": messages_of_turns(shown.turns),
                    "turns": shown.turns,
                },
                context=context,
            ).data
        )


class ChatExportView(ChatAPIView):
    renderer_classes = [JSONRenderer, JSONLinesRenderer, JSONLinesBytesRenderer]

    @extend_schema(
        tags=["exports"],
        summary="Export a chat task's conversations or preference pairs as JSON Lines (owners)",
        parameters=[ExportKindSerializer],
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
        task = task_get_visible(code, request.user)
        require(request, can_export_examples, task, "only the task's owners export its examples")
        query = ExportKindSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        values = query.validated_data
        round_ = round_by_number(task, values.get("round"))
        kind = values["kind"]
        if isinstance(request.accepted_renderer, JSONLinesBytesRenderer):
            content_type = JSONLinesBytesRenderer.media_type
        else:
            content_type = f"{JSONLinesRenderer.media_type}; charset=utf-8"
        response = StreamingHttpResponse(
            export_lines(task, round_, kind, values["metadata"]), content_type=content_type
        )
        response["Content-Disposition"] = f'attachment; filename="{task.code}-{kind}.jsonl"'
        response["Cache-Control"] = "no-store"
        return response
