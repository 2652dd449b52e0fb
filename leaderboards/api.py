"""REST API of the leaderboards: datasets, evaluation runs, scores, the table, forks, snapshots.

The leaderboard endpoint runs the page's code path (``leaderboards.selectors.boards``):
``leaderboard_query`` parses the same query string (``w_<metric>``, ``d_<dataset>``,
``sort``, ``page``, ``page_size``) and ``leaderboard_table`` builds the same table,
rendered with ``as_dict()``.
"""

from __future__ import annotations

from django.http import QueryDict
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.permissions import require
from api.throttles import HEAVY_WRITES
from leaderboards.models import RunTrigger
from leaderboards.selectors.boards import (
    leaderboard_fork_get,
    leaderboard_forks,
    leaderboard_query,
    leaderboard_snapshot_get,
    leaderboard_snapshots,
    leaderboard_table_for_query,
)
from leaderboards.selectors.datasets import (
    dataset_examples_page,
    dataset_get_visible,
    datasets_for_task,
)
from leaderboards.selectors.models import model_results
from leaderboards.selectors.runs import (
    run_get_visible,
    run_progress,
    run_visible_score,
    runs_for_model,
)
from leaderboards.serializers import (
    DatasetExamplePageSerializer,
    DatasetSerializer,
    DatasetUploadSerializer,
    ForkCreateSerializer,
    ForkDetailSerializer,
    ForkSerializer,
    LeaderboardTableSerializer,
    PredictionsUploadSerializer,
    RunCreateSerializer,
    RunSerializer,
    ScoreSerializer,
    SnapshotCreateSerializer,
    SnapshotDetailSerializer,
    SnapshotSerializer,
)
from leaderboards.services.boards import fork_create, snapshot_create
from leaderboards.services.dataset_uploads import dataset_upload
from leaderboards.services.predictions import predictions_import
from leaderboards.services.runs import evaluation_run_create, evaluation_run_retry
from leaderboards.tables.results import DATASET_PARAMETER_PREFIX, METRIC_PARAMETER_PREFIX
from models_hub.selectors import model_can_edit, model_get_visible
from tasks.models import UploadJob
from tasks.permissions import can_manage_task
from tasks.selectors import task_get_visible, upload_progress
from tasks.serializers import UploadJobSerializer, upload_job_body

LEADERBOARD_PARAMETERS = [
    OpenApiParameter(
        "sort",
        str,
        description="`-dynascore` (default), `name`, a metric name "
        "or `dataset:<slug>`; prefix `-` for descending.",
    ),
    OpenApiParameter("page", int, description="Page number (from 1)."),
    OpenApiParameter("page_size", int, description="Rows per page (1-1000, default 50)."),
    OpenApiParameter(
        "weights",
        {"type": "object", "additionalProperties": {"type": "number"}},
        style="form",
        explode=True,
        description="`w_<metric>=<0-100>` per metric and `d_<dataset slug>=<0-100>` per "
        "dataset, exactly as on the leaderboard page. Bad values are ignored and explained "
        "in `messages`.",
    ),
]


# -- datasets ----------------------------------------------------------------------------------


class DatasetListView(APIView):
    throttle_scope = HEAVY_WRITES  # registrations, runs, forks, uploads
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        tags=["datasets"],
        summary="List a task's datasets (hidden ones: owners only)",
        responses=DatasetSerializer(many=True),
    )
    def get(self, request, code: str):
        task = task_get_visible(code, request.user)
        datasets = datasets_for_task(task, request.user)
        return Response(DatasetSerializer(datasets, many=True).data)

    @extend_schema(
        tags=["datasets"],
        summary="Upload a dataset (owners): JSON Lines or CSV, all or nothing",
        description="Every bad line is reported in `error.details.errors`. Uploading to an "
        "existing slug replaces the dataset. Every model with an endpoint is then evaluated "
        "on it: follow the runs with `GET /api/v1/models/{id}/runs/`. A file over the "
        "inline size (`UPLOAD_INLINE_MAX_BYTES`) is imported by a job: the answer is `202` "
        "with the upload job to poll (`GET /api/v1/uploads/{id}/`).",
        request={"multipart/form-data": DatasetUploadSerializer},
        responses={201: DatasetSerializer, 202: UploadJobSerializer},
    )
    def post(self, request, code: str):
        task = task_get_visible(code, request.user)
        require(request, can_manage_task, task, "only the task's owners upload datasets")
        serializer = DatasetUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = dataset_upload(
            task,
            data["file"],
            fmt=data.get("format"),
            name=data["name"],
            slug=data.get("slug", ""),
            access_type=data["access_type"],
            round_number=data.get("round"),
            description=data["description"],
            source_url=data["source_url"],
            weight=data.get("weight"),
            perturbation_of=data["perturbation_of"] or None,
            perturbation_kind=data.get("perturbation_kind", ""),
            inputs_to_others=data.get("inputs_to_others"),
            user=request.user,
        )
        if isinstance(result, UploadJob):
            body = upload_job_body(result, upload_progress(result))
            return Response(body, status=status.HTTP_202_ACCEPTED)
        dataset = dataset_get_visible(task, result.slug, request.user)
        return Response(DatasetSerializer(dataset).data, status=status.HTTP_201_CREATED)


class DatasetDetailView(APIView):
    @extend_schema(tags=["datasets"], summary="Read a dataset", responses=DatasetSerializer)
    def get(self, request, code: str, slug: str):
        task = task_get_visible(code, request.user)
        dataset = dataset_get_visible(task, slug, request.user)
        return Response(DatasetSerializer(dataset).data)


class DatasetExamplesView(APIView):
    @extend_schema(
        tags=["datasets"],
        summary="Page through a dataset's examples (gold: public datasets, or the task's owners)",
        parameters=[OpenApiParameter("page", int, description="Page number (from 1).")],
        responses=DatasetExamplePageSerializer,
    )
    def get(self, request, code: str, slug: str):
        task = task_get_visible(code, request.user)
        dataset = dataset_get_visible(task, slug, request.user)
        page, rows = dataset_examples_page(
            dataset, request.user, request.query_params.get("page") or 1
        )
        return Response(
            {
                "count": page.paginator.count,
                "page": page.number,
                "page_count": page.paginator.num_pages,
                "results": [
                    {
                        "position": row.position,
                        "uid": row.uid,
                        "inputs": row.inputs,
                        "tags": row.tags,
                        "gold": row.gold,
                        "input_id": row.input_id,
                    }
                    for row in rows
                ],
            }
        )


# -- runs, predictions and scores ------------------------------------------------------------


def run_body(run, user, progress=None) -> dict:
    """The run page's facts: progress, and the score unless the dataset is sealed for you.

    ``run`` comes from the run selectors, masked for ``user`` on a sealed dataset: then the
    body names no dataset and holds no score and no failed count (``sealed`` is true).
    """
    can_manage = model_can_edit(run.model, user)
    sealed = getattr(run, "sealed", False)
    score = None if sealed else run_visible_score(run, user)
    return {
        "id": run.pk,
        "model": run.model_id,
        "model_name": run.model.name,
        "dataset": None if sealed else run.dataset.slug,
        "sealed": sealed,
        "status": run.status,
        "trigger": run.trigger,
        "total": run.total,
        "done": run.done,
        "failed_count": run.failed_count,
        "error_code": run.error_code,
        "error_message": run.error_message if can_manage else "",
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "progress": vars(progress or run_progress(run)),
        "can_manage": can_manage,
        "score": ScoreSerializer(score).data if score is not None else None,
    }


def _edits_model(user, model) -> bool:
    return model_can_edit(model, user)


class ModelRunListView(APIView):
    throttle_scope = HEAVY_WRITES  # registrations, runs, forks, uploads

    @extend_schema(
        tags=["evaluations"],
        summary="A model's latest run per dataset, with progress",
        responses=RunSerializer(many=True),
    )
    def get(self, request, pk: int):
        model = model_get_visible(pk, request.user)
        runs = runs_for_model(model, request.user)
        return Response([run_body(run, request.user, progress) for run, progress in runs])

    @extend_schema(
        tags=["evaluations"],
        summary="Evaluate a model on a dataset (the model's owner, the task's owners)",
        description="Perturbed copies of the dataset are evaluated too.",
        request=RunCreateSerializer,
        responses={201: RunSerializer},
    )
    def post(self, request, pk: int):
        model = model_get_visible(pk, request.user)
        require(request, _edits_model, model, "only the model's owner can run it")
        serializer = RunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        dataset = dataset_get_visible(
            model.task, serializer.validated_data["dataset"], request.user
        )
        run = evaluation_run_create(model, dataset, trigger=RunTrigger.RERUN, user=request.user)
        run = run_get_visible(run.pk, request.user)
        return Response(run_body(run, request.user), status=status.HTTP_201_CREATED)


class RunDetailView(APIView):
    @extend_schema(
        tags=["evaluations"], summary="A run's status and progress", responses=RunSerializer
    )
    def get(self, request, pk: int):
        run = run_get_visible(pk, request.user)
        return Response(run_body(run, request.user))


class RunRetryView(APIView):
    throttle_scope = HEAVY_WRITES  # registrations, runs, forks, uploads

    @extend_schema(
        tags=["evaluations"],
        summary="Retry a failed run (stored predictions are kept)",
        request=None,
        responses=RunSerializer,
    )
    def post(self, request, pk: int):
        run = run_get_visible(pk, request.user)
        require(request, _edits_model, run.model, "only the model's owner can retry its runs")
        evaluation_run_retry(run, user=request.user)
        run = run_get_visible(pk, request.user)
        return Response(run_body(run, request.user))


class PredictionsUploadView(APIView):
    throttle_scope = HEAVY_WRITES  # registrations, runs, forks, uploads
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        tags=["evaluations"],
        summary="Score a model from a predictions file (the model's owner)",
        description="A file that misses examples of the dataset is refused (`400`, "
        "`upload.E024`, naming the first missing uids and their count) unless `partial` is "
        "true: the missing examples then count as wrong and the score carries its coverage "
        "(`covered` of `total`, `partial: true`).",
        request={"multipart/form-data": PredictionsUploadSerializer},
        responses={201: RunSerializer},
    )
    def post(self, request, pk: int):
        model = model_get_visible(pk, request.user)
        require(request, _edits_model, model, "only the model's owner uploads its predictions")
        serializer = PredictionsUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        dataset = dataset_get_visible(model.task, data["dataset"], request.user)
        upload = data["file"]
        run = predictions_import(
            model,
            dataset,
            upload.file,
            filename=upload.name,
            fmt=data.get("format"),
            user=request.user,
            partial=data["partial"],
        )
        run = run_get_visible(run.pk, request.user)
        return Response(run_body(run, request.user), status=status.HTTP_201_CREATED)


class ModelScoreListView(APIView):
    @extend_schema(
        tags=["evaluations"],
        summary="A model's scores per dataset (hidden datasets: owners only)",
        responses=ScoreSerializer(many=True),
    )
    def get(self, request, pk: int):
        model = model_get_visible(pk, request.user)
        results = model_results(model, request.user)
        return Response(ScoreSerializer(results.scores, many=True).data)


# -- the leaderboard ---------------------------------------------------------------------------


def _table(request, task, fork=None):
    return leaderboard_table_for_query(task, request.query_params, request.user, fork=fork)


def _posted_weighting(request, task, data: dict):
    """Parse posted ``weights`` with the page's parser (``w_``/``d_`` keys, same checks)."""
    flat = QueryDict(mutable=True)
    weights = data.get("weights") or {}
    for name, weight in (weights.get("metrics") or {}).items():
        flat[f"{METRIC_PARAMETER_PREFIX}{name}"] = str(weight)
    for slug, weight in (weights.get("datasets") or {}).items():
        flat[f"{DATASET_PARAMETER_PREFIX}{slug}"] = str(weight)
    if data.get("sort"):
        flat["sort"] = data["sort"]
    query, _ = leaderboard_query(task, flat, request.user)
    return query


class LeaderboardView(APIView):
    @extend_schema(
        tags=["leaderboards"],
        summary="The leaderboard: the page's table, weights, sorting and paging",
        parameters=LEADERBOARD_PARAMETERS,
        responses=LeaderboardTableSerializer,
    )
    def get(self, request, code: str):
        task = task_get_visible(code, request.user)
        return Response(_table(request, task).as_dict())


class ForkListView(APIView):
    throttle_scope = HEAVY_WRITES  # registrations, runs, forks, uploads

    @extend_schema(
        tags=["leaderboards"],
        summary="Saved weightings (forks) of a leaderboard",
        responses=ForkSerializer(many=True),
    )
    def get(self, request, code: str):
        task = task_get_visible(code, request.user)
        return Response(ForkSerializer(leaderboard_forks(task), many=True).data)

    @extend_schema(
        tags=["leaderboards"],
        summary="Save a weighting of the leaderboard (signed-in users)",
        request=ForkCreateSerializer,
        responses={201: ForkSerializer},
    )
    def post(self, request, code: str):
        task = task_get_visible(code, request.user)
        serializer = ForkCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        query = _posted_weighting(request, task, data)
        fork = fork_create(
            task,
            user=request.user,
            name=data["name"],
            description=data["description"],
            weights=query.weights,
        )
        return Response(ForkSerializer(fork).data, status=status.HTTP_201_CREATED)


class ForkDetailView(APIView):
    @extend_schema(
        tags=["leaderboards"],
        summary="A saved weighting and its leaderboard (query parameters refine it)",
        parameters=LEADERBOARD_PARAMETERS,
        responses=ForkDetailSerializer,
    )
    def get(self, request, code: str, slug: str):
        task = task_get_visible(code, request.user)
        fork = leaderboard_fork_get(task, slug)
        body = dict(ForkSerializer(fork).data)
        body["table"] = _table(request, task, fork).as_dict()
        return Response(body)


class SnapshotListView(APIView):
    throttle_scope = HEAVY_WRITES  # registrations, runs, forks, uploads

    @extend_schema(
        tags=["leaderboards"],
        summary="Snapshots (frozen tables) of a leaderboard",
        responses=SnapshotSerializer(many=True),
    )
    def get(self, request, code: str):
        task = task_get_visible(code, request.user)
        return Response(SnapshotSerializer(leaderboard_snapshots(task), many=True).data)

    @extend_schema(
        tags=["leaderboards"],
        summary="Freeze the public leaderboard (owners)",
        request=SnapshotCreateSerializer,
        responses={201: SnapshotDetailSerializer},
    )
    def post(self, request, code: str):
        task = task_get_visible(code, request.user)
        serializer = SnapshotCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        query = _posted_weighting(request, task, data)
        snapshot = snapshot_create(
            task, user=request.user, weights=query.weights, sort=query.sort, name=data["name"]
        )
        body = dict(SnapshotSerializer(snapshot).data)
        body["table"] = snapshot.table
        return Response(body, status=status.HTTP_201_CREATED)


class SnapshotDetailView(APIView):
    @extend_schema(
        tags=["leaderboards"],
        summary="A snapshot and its table",
        responses=SnapshotDetailSerializer,
    )
    def get(self, request, code: str, pk: int):
        task = task_get_visible(code, request.user)
        snapshot = leaderboard_snapshot_get(task, pk)
        body = dict(SnapshotSerializer(snapshot).data)
        body["table"] = snapshot.table
        return Response(body)
