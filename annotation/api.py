"""REST API of the annotation app: context samples, examples, validations and the export.

The same selectors and services as the create, validate and export pages: the task is
resolved with ``bundle_for_actor`` (visibility and ``can_contribute``), examples with
``example_get_for_actor``, and every write goes through ``annotation.services``.
The API acts for signed-in users (token or session); crowd campaign links use the pages.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.campaigns.actors import Actor
from annotation.export import example_export_lines
from annotation.live.queue import live_job_id, wait_for_job
from annotation.models import Example, ExampleStatus
from annotation.selectors.examples import example_get_for_actor
from annotation.selectors.tasks import (
    bundle_for_actor,
    context_get,
    context_sample,
    round_for_actor,
)
from annotation.selectors.validation import example_next_to_validate
from annotation.serializers import (
    ExampleAcceptedSerializer,
    ExampleCreateSerializer,
    ExampleFlagSerializer,
    ExampleMetadataSerializer,
    ExampleRetrySerializer,
    ExampleSerializer,
    ExampleVerdictSerializer,
    ExportQuerySerializer,
    NextToValidateSerializer,
    SampledContextSerializer,
    ValidationCreateSerializer,
    ValidationSerializer,
)
from annotation.services import examples as services
from annotation.services.examples import context_mark_served
from annotation.services.validations import validation_submit
from annotation.stats.summaries import round_by_number
from annotation.views.access import slow_model_seconds
from api.permissions import require
from api.throttles import ExampleCreateThrottle, WriteRateThrottle
from core.errors import Conflict, NotFound
from tasks.permissions import can_export_examples
from tasks.selectors import task_get_visible

# The status page of the site waits this long per poll; the API's GET accepts ?wait= up to it.
MAX_POLL_WAIT_SECONDS = 10.0


def actor_of(request) -> Actor | None:
    """The signed-in user as an ``Actor`` (None for anonymous calls)."""
    return Actor(user=request.user) if request.user.is_authenticated else None


def _example_with_relations(task, example_id: int, actor: Actor) -> Example:
    return example_get_for_actor(task, example_id, actor)


def wait_for_answer(task, example: Example, actor: Actor, seconds: float) -> Example:
    """Wait up to ``seconds`` for the live model job of ``example`` (the create page's wait)."""
    if example.status != ExampleStatus.AWAITING_MODEL or seconds <= 0:
        return example
    if wait_for_job(live_job_id(example.pk, example.model_attempts), seconds):
        return _example_with_relations(task, example.pk, actor)
    return example


def _task_and_example(request, pk: int):
    actor = actor_of(request)
    code = Example.objects.filter(pk=pk).values_list("task__code", flat=True).first()
    if code is None:
        raise NotFound("no such example")
    task = bundle_for_actor(code, actor).task
    return actor, task, _example_with_relations(task, pk, actor)


def _render_example(request, task, example, actor, status_code=status.HTTP_200_OK) -> Response:
    example = _example_with_relations(task, example.pk, actor)
    return Response(ExampleSerializer(example, context={"request": request}).data, status_code)


class ContextSampleView(APIView):
    @extend_schema(
        tags=["contexts"],
        summary="Sample a context to write about (the task's strategy and tag)",
        parameters=[
            OpenApiParameter(
                "tag", str, description="Only contexts with this tag (default: the task's tag)."
            )
        ],
        responses=SampledContextSerializer,
    )
    def get(self, request, code: str):
        actor = actor_of(request)
        bundle = bundle_for_actor(code, actor)
        task, round_ = bundle.task, round_for_actor(bundle, actor)
        if round_ is None:
            raise Conflict("no round is open", code="round.closed")
        tag = (request.query_params.get("tag") or task.context_sampling_tag)[:100]
        context = context_sample(round_, task.context_sampling, tag)
        if context is None:
            raise NotFound("no context to write about", code="context.none")
        context_mark_served(context)
        return Response(SampledContextSerializer(context).data)


class TaskExampleListView(generics.GenericAPIView):
    throttle_classes = [ExampleCreateThrottle, WriteRateThrottle]
    serializer_class = ExampleSerializer

    @extend_schema(
        tags=["examples"],
        summary="List your own examples of a task (newest first)",
        responses=ExampleSerializer(many=True),
    )
    def get(self, request, code: str):
        actor = actor_of(request)
        task = bundle_for_actor(code, actor).task
        examples = (
            Example.objects.filter(task=task, **actor.filter_kwargs())
            .select_related("task", "round", "config_version", "model")
            .order_by("-id")
        )
        page = self.paginate_queryset(examples)
        data = ExampleSerializer(page, many=True, context={"request": request}).data
        return self.get_paginated_response(data)

    @extend_schema(
        tags=["examples"],
        summary="Write an example; the model in the loop answers live",
        description="The example is saved at once. In `sync` mode the call waits up to "
        "`timeout` seconds (at most 10) for the model and returns 201 with the answer and "
        "the verdict (`model_wrong`); if the model is slower, `status` is still "
        "`awaiting_model`: poll `status_url`. In `async` mode the call returns 202 with "
        "`status_url` at once. Throttled per user (scope `examples`).",
        request=ExampleCreateSerializer,
        responses={201: ExampleSerializer, 202: ExampleAcceptedSerializer},
    )
    def post(self, request, code: str):
        actor = actor_of(request)
        bundle = bundle_for_actor(code, actor)
        task, round_ = bundle.task, round_for_actor(bundle, actor)
        serializer = ExampleCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        context = None
        if data.get("context_id") and round_ is not None:
            context = context_get(round_, data["context_id"])
            if context is None:
                raise NotFound("no such context in the open round", code="context.missing")
        example = services.example_submit(
            task=task,
            round_=round_,
            actor=actor,
            context=context,
            data=data["input"],
            goal_label=data.get("goal_label", ""),
            time_spent_ms=data.get("time_spent_ms"),
            model=bundle.pick_model(round_) if round_ is not None else None,
        )
        if data["mode"] == "async":
            body = {
                "id": example.pk,
                "status": example.status,
                "status_url": ExampleSerializer(context={"request": request}).get_status_url(
                    example
                ),
            }
            return Response(body, status=status.HTTP_202_ACCEPTED)
        example = wait_for_answer(task, example, actor, data["timeout"])
        return _render_example(request, task, example, actor, status.HTTP_201_CREATED)


class ExampleDetailView(APIView):
    @extend_schema(
        tags=["examples"],
        summary="Read one of your examples (poll it for the model's answer)",
        parameters=[
            OpenApiParameter(
                "wait",
                float,
                description="Wait up to this many seconds (at most 10) for the model's answer.",
            )
        ],
        responses=ExampleSerializer,
    )
    def get(self, request, pk: int):
        actor, task, example = _task_and_example(request, pk)
        try:
            wait = float(request.query_params.get("wait") or 0)
        except ValueError:
            wait = 0.0
        wait = min(max(wait, 0.0), MAX_POLL_WAIT_SECONDS) if wait == wait else 0.0
        example = wait_for_answer(task, example, actor, wait)
        return _render_example(request, task, example, actor)

    @extend_schema(
        tags=["examples"],
        summary="Save the metadata of your example (its `metadata.create` answers)",
        request=ExampleMetadataSerializer,
        responses=ExampleSerializer,
    )
    def patch(self, request, pk: int):
        actor, task, example = _task_and_example(request, pk)
        serializer = ExampleMetadataSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        example = services.example_save_metadata(
            example, actor, serializer.validated_data["metadata"]
        )
        return _render_example(request, task, example, actor)


class ExampleRetractView(APIView):
    @extend_schema(
        tags=["examples"],
        summary="Retract your example",
        request=None,
        responses=ExampleSerializer,
    )
    def post(self, request, pk: int):
        actor, task, example = _task_and_example(request, pk)
        example = services.example_retract(example, actor)
        return _render_example(request, task, example, actor)


class ExampleFlagView(APIView):
    @extend_schema(
        tags=["examples"],
        summary="Flag your example for the owners' review",
        request=ExampleFlagSerializer,
        responses=ExampleSerializer,
    )
    def post(self, request, pk: int):
        actor, task, example = _task_and_example(request, pk)
        serializer = ExampleFlagSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        example = services.example_flag(example, actor, serializer.validated_data["reason"])
        return _render_example(request, task, example, actor)


class ExampleVerdictView(APIView):
    @extend_schema(
        tags=["examples"],
        summary="Say whether the model was wrong (tasks whose metric is `ask_user`)",
        request=ExampleVerdictSerializer,
        responses=ExampleSerializer,
    )
    def post(self, request, pk: int):
        actor, task, example = _task_and_example(request, pk)
        serializer = ExampleVerdictSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        example = services.example_set_worker_verdict(
            example, actor, serializer.validated_data["model_wrong"]
        )
        return _render_example(request, task, example, actor)


class ExampleRetryView(APIView):
    @extend_schema(
        tags=["examples"],
        summary="Ask a model again after a failure",
        request=ExampleRetrySerializer,
        responses=ExampleSerializer,
    )
    def post(self, request, pk: int):
        actor, task, example = _task_and_example(request, pk)
        serializer = ExampleRetrySerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        example = services.example_request_model(example, actor, stale_after=slow_model_seconds())
        example = wait_for_answer(task, example, actor, serializer.validated_data["timeout"])
        return _render_example(request, task, example, actor)


class NextToValidateView(APIView):
    @extend_schema(
        tags=["validations"],
        summary="The next example for you to validate (least validated first)",
        description="`example` is null when nothing is left for you.",
        responses=NextToValidateSerializer,
    )
    def get(self, request, code: str):
        actor = actor_of(request)
        task = bundle_for_actor(code, actor).task
        example = example_next_to_validate(task, actor)
        return Response(NextToValidateSerializer({"example": example}).data)


class ValidationCreateView(APIView):
    @extend_schema(
        tags=["validations"],
        summary="Validate an example: correct, incorrect or flagged",
        description="An owner's verdict settles the example at once.",
        request=ValidationCreateSerializer,
        responses={201: ValidationSerializer},
    )
    def post(self, request, code: str):
        actor = actor_of(request)
        task = bundle_for_actor(code, actor).task
        serializer = ValidationCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        validation = validation_submit(
            example_id=data["example_id"],
            actor=actor,
            label=data["label"],
            metadata=data["metadata"],
            time_spent_ms=data.get("time_spent_ms"),
            task=task,  # an example of another task is NotFound
        )
        validation.example.refresh_from_db(fields=["validation_state"])
        return Response(ValidationSerializer(validation).data, status=status.HTTP_201_CREATED)


class JSONLinesRenderer(JSONRenderer):
    """``application/x-ndjson``: the export streams lines; an error is one JSON line."""

    media_type = "application/x-ndjson"
    format = "jsonl"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return super().render(data, accepted_media_type, renderer_context) + b"\n"


class JSONLinesBytesRenderer(JSONLinesRenderer):
    """The same lines labelled ``application/octet-stream``, for clients that keep only bytes.

    Code generators keep a response only in a media type they know; JSON Lines is rarely one
    of them, raw bytes nearly always are. A client that asks for ``application/octet-stream``
    gets the export's lines unchanged.
    """

    media_type = "application/octet-stream"
    format = "jsonl-bytes"


class ExportView(APIView):
    renderer_classes = [JSONRenderer, JSONLinesRenderer, JSONLinesBytesRenderer]

    @extend_schema(
        tags=["exports"],
        summary="Export a task's (or a round's) examples as JSON Lines (owners)",
        description="Streamed: one JSON object per line, oldest first, with anonymised worker "
        "ids. Served as `application/x-ndjson`; a client that sends `Accept: "
        "application/octet-stream` gets the same lines under that media type.",
        parameters=[ExportQuerySerializer],
        responses={
            (200, JSONLinesRenderer.media_type): OpenApiResponse(
                OpenApiTypes.BINARY, description="JSON Lines, one example per line."
            ),
            (200, JSONLinesBytesRenderer.media_type): OpenApiResponse(
                OpenApiTypes.BINARY, description="JSON Lines, one example per line."
            ),
        },
    )
    def get(self, request, code: str):
        task = task_get_visible(code, request.user)
        require(request, can_export_examples, task, "only the task's owners export its examples")
        query = ExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        round_ = round_by_number(task, query.validated_data.get("round"))
        name = f"{task.code}-round-{round_.number}" if round_ else f"{task.code}-all-rounds"
        if isinstance(request.accepted_renderer, JSONLinesBytesRenderer):
            content_type = JSONLinesBytesRenderer.media_type
        else:
            content_type = f"{JSONLinesRenderer.media_type}; charset=utf-8"
        response = StreamingHttpResponse(
            example_export_lines(task, round_), content_type=content_type
        )
        response["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
        response["Cache-Control"] = "no-store"
        return response
