"""REST API of the models hub: register, read, update the card, publish, the loop.

The services check who may act (``tasks.permissions`` underneath) and raise
``core.errors.PermissionDenied``; the API's exception handler renders it. The views only
add the visibility checks of the pages (``task_get_visible``, ``model_get_visible``).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from api.permissions import require, require_signed_in
from api.throttles import HEAVY_WRITES
from core.errors import NotFound, ServiceError
from models_hub import selectors, services
from models_hub.models import RegisteredModel
from models_hub.serializers import (
    LoopSerializer,
    ModelPublishSerializer,
    ModelRegisterSerializer,
    ModelRoundsSerializer,
    ModelSerializer,
    ModelUpdateSerializer,
    RoundLoopSerializer,
)
from tasks import selectors as task_selectors
from tasks.permissions import can_manage_task, can_register_model


def _model_for(request, pk: int) -> RegisteredModel:
    return selectors.model_get_visible(pk, request.user)


def _render(request, model: RegisteredModel, status_code: int = status.HTTP_200_OK) -> Response:
    # Re-read through the selector so that ``owner`` is labelled as the pages label it.
    model = selectors.model_get_visible(model.pk, request.user)
    return Response(ModelSerializer(model, context={"request": request}).data, status=status_code)


class TaskModelListView(APIView):
    throttle_scope = HEAVY_WRITES  # registrations, runs, forks, uploads

    @extend_schema(
        tags=["models"],
        summary="List a task's models you can see",
        description="Everyone sees published models; you also see your own; owners see all.",
        responses=ModelSerializer(many=True),
    )
    def get(self, request, code: str):
        task = task_selectors.task_get_visible(code, request.user)
        models = selectors.model_list_for_task(task, request.user)
        return Response(ModelSerializer(models, many=True, context={"request": request}).data)

    @extend_schema(
        tags=["models"],
        summary="Register a model",
        description="The endpoint URL is checked against the SSRF rules, then a health check "
        "is queued. `protocol: none` registers a predictions-file-only model.",
        request=ModelRegisterSerializer,
        responses={201: ModelSerializer},
    )
    def post(self, request, code: str):
        task = task_selectors.task_get_visible(code, request.user)
        require(request, can_register_model, task, "this task does not accept models from you")
        serializer = ModelRegisterSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        model = services.model_register(task=task, owner=request.user, **serializer.validated_data)
        return _render(request, model, status.HTTP_201_CREATED)


class ModelDetailView(APIView):
    @extend_schema(tags=["models"], summary="Read a model's card", responses=ModelSerializer)
    def get(self, request, pk: int):
        return _render(request, _model_for(request, pk))

    @extend_schema(
        tags=["models"],
        summary="Update a model's card, endpoint or token (its owner, the task's owners)",
        description="A blank or missing `auth_token` keeps the stored token; "
        "`clear_auth_token: true` removes it. Only the model's owner may move the endpoint "
        "to another scheme, host or port while a token is stored (`403`, "
        "`model.token_owner_only`); anyone else clears the token in the same request.",
        request=ModelUpdateSerializer,
        responses=ModelSerializer,
    )
    def patch(self, request, pk: int):
        model = _model_for(request, pk)
        require_signed_in(request)
        serializer = ModelUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        fields = dict(serializer.validated_data)
        if "clear_auth_token" not in request.data:
            fields.pop("clear_auth_token", None)
        services.model_update_card(model, request.user, **fields)
        return _render(request, model)


class ModelPublishView(APIView):
    @extend_schema(
        tags=["models"],
        summary="Publish or unpublish a model",
        request=ModelPublishSerializer,
        responses=ModelSerializer,
    )
    def post(self, request, pk: int):
        model = _model_for(request, pk)
        require_signed_in(request)
        serializer = ModelPublishSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.model_set_published(model, request.user, serializer.validated_data["published"])
        return _render(request, model)


class ModelRoundsView(APIView):
    @extend_schema(
        tags=["models"],
        summary="Put a model in the loop of these rounds (task owners)",
        request=ModelRoundsSerializer,
        responses=ModelRoundsSerializer,
    )
    def put(self, request, pk: int):
        model = _model_for(request, pk)
        require(request, can_manage_task, model.task, "only the task's owners choose the loop")
        serializer = ModelRoundsSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        numbers = sorted(set(serializer.validated_data["rounds"]))
        rounds = list(model.task.rounds.filter(number__in=numbers).order_by("number"))
        missing = sorted(set(numbers) - {round_.number for round_ in rounds})
        if missing:
            raise NotFound(f"no round {missing[0]} in task {model.task.code}")
        services.model_set_rounds(model, rounds, request.user)
        return Response({"rounds": numbers})


class RoundLoopView(APIView):
    """The models in the loop of one round (the loop page's table, per round)."""

    def _round(self, request, code: str, number: int):
        task = task_selectors.task_get_visible(code, request.user)
        round_ = task.rounds.filter(number=number).first()
        if round_ is None:
            raise NotFound(f"no round {number} in task {code}")
        return task, round_

    @staticmethod
    def _body(round_, models) -> dict:
        # The models' health comes along: the loop's owners watch it here (write-only token
        # and endpoint settings stay out).
        return RoundLoopSerializer(
            {"round": round_.number, "is_open": round_.is_open, "models": models}
        ).data

    @extend_schema(
        tags=["models"],
        summary="The models in the loop of a round (task owners)",
        responses=RoundLoopSerializer,
    )
    def get(self, request, code: str, number: int):
        task, round_ = self._round(request, code, number)
        require(request, can_manage_task, task, "only the task's owners see the loop")
        return Response(self._body(round_, selectors.models_in_loop(round_)))

    @extend_schema(
        tags=["models"],
        summary="Set the models in the loop of a round (task owners)",
        request=LoopSerializer,
        responses=RoundLoopSerializer,
    )
    def put(self, request, code: str, number: int):
        task, round_ = self._round(request, code, number)
        require(request, can_manage_task, task, "only the task's owners choose the loop")
        serializer = LoopSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        ids = set(serializer.validated_data["models"])
        models = list(RegisteredModel.objects.filter(pk__in=ids, task=task))
        if len(models) != len(ids):
            raise ServiceError(
                "some models are unknown or belong to another task", code="model.wrong_task"
            )
        services.model_set_in_loop(round_, models, request.user)
        return Response(self._body(round_, selectors.models_in_loop(round_)))
