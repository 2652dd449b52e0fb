"""REST API of the tasks app: tasks, task settings, rounds and context uploads.

Thin views: they parse with ``tasks.serializers``, check ``tasks.permissions`` through
``api.permissions.require`` and call ``tasks.selectors`` / ``tasks.services``, the same
code the pages and the admin builder use.
"""

from __future__ import annotations

from functools import cache

from django.db import transaction
from django.db.models import Max
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.permissions import require
from api.throttles import HEAVY_WRITES
from tasks import selectors, services
from tasks.config.json_schema import task_config_schema
from tasks.models import Round, Task, UploadJob
from tasks.permissions import can_manage_task
from tasks.serializers import (
    ContextUploadSerializer,
    ImportResultSerializer,
    RoundOpenSerializer,
    RoundSerializer,
    TaskSerializer,
    TaskSettingsSerializer,
    UploadJobSerializer,
    upload_job_body,
)


@cache
def _config_schema() -> dict:
    return task_config_schema()


@extend_schema(
    tags=["tasks"],
    summary="The JSON Schema (draft 2020-12) of task configs, v1 and v2",
    description="Generated from the config parser's own tables; point an editor at it "
    "(docs/task-config.md). It checks structure; the parser also checks relations.",
    responses={200: OpenApiTypes.OBJECT},
)
class TaskConfigSchemaView(APIView):
    """Serve the task-config JSON Schema, with its own address as ``$id``."""

    def get(self, request):
        schema = {"$id": request.build_absolute_uri(), **_config_schema()}
        return Response(schema)


def task_for(request, code: str) -> Task:
    """The task ``code`` if ``request.user`` may see it, else a 404 (the pages' rule)."""
    return selectors.task_get_visible(code, request.user)


@extend_schema(tags=["tasks"], summary="List the tasks you can see")
class TaskListView(generics.ListAPIView):
    serializer_class = TaskSerializer

    def get_queryset(self):
        return selectors.task_list_visible(self.request.user).order_by("name", "pk")

    def get_serializer_context(self):
        context = super().get_serializer_context()
        user = self.request.user
        context["current_rounds"] = dict(
            Round.objects.filter(is_open=True)
            .values("task_id")
            .annotate(number=Max("number"))
            .values_list("task_id", "number")
        )
        if user.is_authenticated and user.is_superuser:
            context["owned_task_ids"] = set(Task.objects.values_list("pk", flat=True))
        elif user.is_authenticated:
            context["owned_task_ids"] = set(user.owned_tasks.values_list("pk", flat=True))
        else:
            context["owned_task_ids"] = set()
        return context


class TaskDetailView(APIView):
    @extend_schema(tags=["tasks"], summary="Read a task", responses=TaskSerializer)
    def get(self, request, code: str):
        task = task_for(request, code)
        return Response(TaskSerializer(task, context={"request": request}).data)

    @extend_schema(
        tags=["tasks"],
        summary="Update a task's settings (owners)",
        description="Changing `config_yaml` checks the config and, when data was already "
        "collected under the current version, creates a new config version.",
        request=TaskSettingsSerializer,
        responses=TaskSerializer,
    )
    def patch(self, request, code: str):
        task = task_for(request, code)
        require(request, can_manage_task, task, "only the task's owners change its settings")
        serializer = TaskSettingsSerializer(task, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        fields = dict(serializer.validated_data)
        yaml_text = fields.pop("config_yaml", None)
        with transaction.atomic():
            if yaml_text is not None:
                services.task_update_config(task, yaml_text, user=request.user)
            if fields:
                for name, value in fields.items():
                    setattr(task, name, value)
                task.save(update_fields=list(fields))
        task = task_for(request, code)
        return Response(TaskSerializer(task, context={"request": request}).data)


class RoundListView(APIView):
    @extend_schema(
        tags=["tasks"], summary="List a task's rounds", responses=RoundSerializer(many=True)
    )
    def get(self, request, code: str):
        task = task_for(request, code)
        return Response(RoundSerializer(task.rounds.order_by("number"), many=True).data)

    @extend_schema(
        tags=["tasks"],
        summary="Open the next round (owners)",
        request=RoundOpenSerializer,
        responses={201: RoundSerializer},
    )
    def post(self, request, code: str):
        task = task_for(request, code)
        require(request, can_manage_task, task, "only the task's owners open rounds")
        serializer = RoundOpenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        round_ = services.round_open(task, **serializer.validated_data)
        return Response(RoundSerializer(round_).data, status=status.HTTP_201_CREATED)


class ContextUploadView(APIView):
    throttle_scope = HEAVY_WRITES  # registrations, runs, forks, uploads
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        tags=["contexts"],
        summary="Upload contexts (owners): JSON Lines or CSV, all or nothing",
        description="Every bad line is reported in `error.details.errors` "
        "(`{line, path, code, message}`); nothing of a bad file is imported. A file over "
        "the inline size (`UPLOAD_INLINE_MAX_BYTES`) is imported by a job: the answer is "
        "`202` with the upload job to poll (`GET /api/v1/uploads/{id}/`).",
        request={"multipart/form-data": ContextUploadSerializer},
        responses={201: ImportResultSerializer, 202: UploadJobSerializer},
    )
    def post(self, request, code: str):
        task = task_for(request, code)
        require(request, can_manage_task, task, "only the task's owners upload contexts")
        serializer = ContextUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = services.contexts_upload(
            task,
            data["file"],
            user=request.user,
            fmt=data.get("format"),
            round_number=data.get("round"),
            tag=data.get("tag", ""),
        )
        if isinstance(result, UploadJob):
            body = upload_job_body(result, selectors.upload_progress(result))
            return Response(body, status=status.HTTP_202_ACCEPTED)
        return Response({"imported": result}, status=status.HTTP_201_CREATED)


class UploadJobDetailView(APIView):
    @extend_schema(
        tags=["contexts"],
        summary="A big upload's import: state, progress (bytes read), outcome (owners)",
        responses=UploadJobSerializer,
    )
    def get(self, request, pk: int):
        upload = selectors.upload_job_get_visible(pk, request.user)
        return Response(upload_job_body(upload, selectors.upload_progress(upload)))
