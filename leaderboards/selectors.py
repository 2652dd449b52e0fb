"""Reads of the leaderboards: the leaderboard table, forks, snapshots and model results.

``leaderboard_table`` is the one code path behind the leaderboard page, its CSV and JSON
exports, snapshots and the REST API: the same weights, sorting, paging and results. It
runs a fixed number of queries whatever the number of models (datasets, the data version,
the task's score cube: ``score_cube``, rebuilt from the models and scores when they
changed), takes the viewer's models and datasets from the cube, computes the Dynascore
over every model in one numpy pass (``leaderboards.tables``) and builds rows for the
requested page only.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.db import DatabaseError, transaction
from django.db.models import BinaryField, Case, F, Q, TextField, Value, When
from django.db.models.functions import Cast

from leaderboards.cubes import (
    CUBE_FORMAT,
    CubeFormatError,
    CubeModel,
    ScoreCube,
    cube_board,
    cube_build,
    cube_decode,
    cube_encode,
)
from leaderboards.models import (
    AccessType,
    BoardCube,
    Dataset,
    EvaluationRun,
    LeaderboardFork,
    LeaderboardSnapshot,
    Prediction,
    Score,
)
from leaderboards.sql import board_data_stamp
from leaderboards.tables import (
    DEFAULT_INSTANCE_MEMORY_GB,
    DEFAULT_PAGE_SIZE,
    DEFAULT_SORT,
    DatasetRecord,
    LeaderboardQuery,
    LeaderboardTable,
    LeaderboardWeights,
    ScoreColumns,
    build_leaderboard_table,
    parse_leaderboard_query,
)
from models_hub.models import Model
from tasks.errors import NotFound
from tasks.metrics import MetricError, get_metric
from tasks.models import Task
from tasks.permissions import can_manage_task

__all__ = [
    "LeaderboardQuery",
    "LeaderboardTable",
    "LeaderboardWeights",
    "leaderboard_datasets",
    "leaderboard_fork_get",
    "leaderboard_forks",
    "leaderboard_query",
    "leaderboard_snapshot_get",
    "leaderboard_snapshots",
    "leaderboard_table",
    "model_example_browser",
    "model_results",
    "parse_leaderboard_query",
]

logger = logging.getLogger(__name__)

DEFAULT_CACHE_SECONDS = 300
# Bump when the cached table's shape changes, so old entries are never read back.
CACHE_FORMAT = 1
# The order ``_compute_table`` unpacks; the job-metric columns come last.
SCORE_FIELDS = (
    "model_id",
    "dataset_id",
    "metrics_text",
    "main_per_tag_board",
    "per_tag_text",
    "main_value",
    "ci_low",
    "ci_high",
    "examples_per_second",
    "latency_p50_ms",
    "latency_p95_ms",
    "memory_gb",
)


def instance_memory_gb() -> float:
    """Return the configured instance memory (``LEADERBOARD_INSTANCE_MEMORY_GB``, default 16)."""
    return float(getattr(settings, "LEADERBOARD_INSTANCE_MEMORY_GB", DEFAULT_INSTANCE_MEMORY_GB))


def leaderboard_datasets(task: Task, user) -> list[Dataset]:
    """Return the original (not perturbed) datasets of ``task`` that ``user`` may see.

    Hidden datasets are for the task's owners only. One query.
    """
    datasets = Dataset.objects.filter(task=task, perturbation_of__isnull=True).select_related(
        "round"
    )
    if not can_manage_task(user, task):
        datasets = datasets.exclude(access_type=AccessType.HIDDEN)
    return list(datasets.order_by("round__number", "name", "pk"))


def leaderboard_query(
    task: Task, querydict, user, *, fork: LeaderboardFork | None = None
) -> tuple[LeaderboardQuery, list[Dataset]]:
    """Return the parsed query string (defaults from ``fork`` if given) and the datasets."""
    datasets = leaderboard_datasets(task, user)
    query = parse_leaderboard_query(
        querydict,
        task.config,
        datasets,
        base_weights=fork.weights if fork is not None else None,
    )
    return query, datasets


def leaderboard_table_for_query(task: Task, querydict, user, *, fork=None) -> LeaderboardTable:
    """Return the leaderboard page that a GET query asks for (the page and the API both)."""
    query, datasets = leaderboard_query(task, querydict, user, fork=fork)
    return leaderboard_table(
        task,
        weights=query.weights,
        sort=query.sort,
        page=query.page,
        page_size=query.page_size,
        user=user,
        datasets=datasets,
        messages=query.messages,
    )


def leaderboard_table(
    task: Task,
    *,
    weights: LeaderboardWeights,
    sort: str = DEFAULT_SORT,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
    user=None,
    datasets: Sequence[Dataset] | None = None,
    messages: Iterable[str] = (),
) -> LeaderboardTable:
    """Return one page of the leaderboard of ``task`` as ``user`` may see it.

    Everyone sees published models; a user also sees their own; the task's owners see
    every model and the hidden datasets. Someone else's anonymous model is shown as
    "Anonymous". Pass ``datasets`` (from ``leaderboard_datasets``) to save a query.

    Queries: datasets (unless passed), the data version, then, unless the same page of the
    same data was computed recently (see ``cache_seconds``), the task's score cube (see
    ``score_cube``; rebuilt from the models and scores if they changed since it was built).
    """
    user = user if user is not None else AnonymousUser()
    if datasets is None:
        datasets = leaderboard_datasets(task, user)
    manages = can_manage_task(user, task)
    version = _data_version(task)
    seconds = cache_seconds()
    key = None
    if seconds > 0:
        key = _cache_key(task, user, manages, datasets, weights, sort, page, page_size, version)
        cached = cache.get(key)
        if cached is not None:
            return replace(cached, messages=tuple(messages) + cached.messages)
    table = _compute_table(task, user, manages, datasets, weights, sort, page, page_size, version)
    if key is not None:
        cache.set(key, table, seconds)
    return replace(table, messages=tuple(messages) + table.messages)


def cache_seconds() -> int:
    """Return how long a computed page is reused (``LEADERBOARD_CACHE_SECONDS``, default 300).

    A cached page is keyed by the data version (``_data_version``), so new or changed
    scores and models show at once (the score cube is kept by the same version: code that
    changes them with a raw ``.update()`` must set ``updated_at``). 0 turns it off.
    """
    return int(getattr(settings, "LEADERBOARD_CACHE_SECONDS", DEFAULT_CACHE_SECONDS))


def _data_version(task: Task) -> str:
    """Return the version of the data of ``task``'s leaderboards, in one query.

    The cube format, the task's config version and its metrics, and the count and last
    change of the task's models and of the scores on its datasets
    (``leaderboards.sql.board_data_stamp``): a new, changed or deleted model or score
    changes it. Renaming a user who owns models deletes the cubes that hold the name
    (``leaderboards.receivers``).
    """
    row = board_data_stamp(task.pk)
    config = task.config
    specs = config.metrics() if config is not None else ()
    # A config version edited in place (while no data refers to it) keeps its id.
    metrics = ",".join(f"{spec.name}{'*' if spec.is_main else ''}" for spec in specs)
    return "/".join([str(CUBE_FORMAT), str(task.current_config_id), metrics, *map(str, row)])


def _cache_key(task, user, manages, datasets, weights, sort, page, page_size, version) -> str:
    # Who is looking decides which models, datasets and names appear.
    if manages:
        scope = "owners"
    elif user.is_authenticated:
        scope = f"user:{user.pk}"
    else:
        scope = "public"
    signature = repr(
        (
            CACHE_FORMAT,
            task.pk,
            scope,
            [
                (d.pk, d.slug, d.name, str(d.access_type), d.weight, d.round_id, str(d.updated_at))
                for d in datasets
            ],
            sorted(weights.metrics.items()),
            sorted(weights.datasets.items()),
            sort,
            page,
            page_size,
            instance_memory_gb(),
            version,
        )
    )
    return "leaderboard:" + hashlib.sha256(signature.encode()).hexdigest()


def _compute_table(task, user, manages, datasets, weights, sort, page, page_size, version):
    """Take the viewer's board from the task's score cube and build the page."""
    config = task.config
    metric_specs = config.metrics() if config is not None else ()
    cube = score_cube(task, version)
    board = cube_board(
        cube,
        datasets=[(dataset.pk, dataset.slug) for dataset in datasets],
        manages=manages,
        user_id=user.pk if user.is_authenticated else None,
    )
    return build_leaderboard_table(
        task_code=task.code,
        metric_specs=metric_specs,
        datasets=[
            DatasetRecord(
                slug=dataset.slug,
                name=dataset.name,
                access_type=str(dataset.access_type),
                round_number=dataset.round.number if dataset.round_id else None,
                default_weight=float(dataset.weight),
            )
            for dataset in datasets
        ],
        board=board,
        weights=weights,
        sort=sort,
        page=page,
        page_size=page_size,
        instance_memory_gb=instance_memory_gb(),
    )


def score_cube(task: Task, version: str | None = None) -> ScoreCube:
    """Return the score cube of ``task`` (``leaderboards.cubes``) for data ``version``.

    One query when the stored cube is current (``version`` defaults to the current data
    version: one more); otherwise the cube is rebuilt from the models and scores (two
    queries) and stored (one upsert), for the next page. The evaluation rebuilds it as
    soon as it writes a Score (``evaluation.board_cube_refresh``), so pages rarely do.
    """
    if version is None:
        version = _data_version(task)
    # The payload only if it is current: an old one is not worth its transfer.
    stored = (
        BoardCube.objects.filter(task_id=task.pk)
        .annotate(
            current=Case(
                When(version=version, then=F("payload")),
                default=Value(None),
                output_field=BinaryField(),
            )
        )
        .values_list("current", flat=True)
        .first()
    )
    if stored is not None:
        try:
            return cube_decode(stored)
        except CubeFormatError as error:
            logger.warning("board cube of task %s unreadable, rebuilt: %s", task.pk, error)
    cube = _cube_from_scores(task)
    payload = cube_encode(cube)
    try:
        with transaction.atomic():
            BoardCube.objects.bulk_create(
                [BoardCube(task_id=task.pk, version=version, payload=payload)],
                update_conflicts=True,
                unique_fields=["task"],
                update_fields=["version", "payload", "built_at"],
            )
    except DatabaseError as error:  # e.g. the task deleted meanwhile: the page still shows
        logger.warning("board cube of task %s not stored: %s", task.pk, error)
    return cube


def _cube_from_scores(task: Task) -> ScoreCube:
    """Build the cube of every model of ``task`` and every Score on its original datasets."""
    config = task.config
    metric_specs = config.metrics() if config is not None else ()
    main_metric = next((spec.name for spec in metric_specs if spec.is_main), "")
    models = [
        CubeModel(model_id, name, owner_id, owner_name or "", is_anonymous, is_published)
        for model_id, name, owner_id, owner_name, is_anonymous, is_published in (
            Model.objects.filter(task=task)
            .order_by("pk")
            .values_list(
                "pk", "name", "owner_id", "owner__username", "is_anonymous", "is_published"
            )
        )
    ]
    rows: list[tuple] = []
    if models:
        # Plain tuples, the JSON fields as text decoded below in one call per field: a
        # 1000-model board has thousands of scores, and per-row objects and decoding cost
        # more than the query itself. The best model per tag needs only the main metric of
        # each tag: the small ``main_per_tag``; the whole ``per_tag`` is read only for
        # scores without it (written before it existed, or for another main metric).
        has_main_per_tag = Q(main_metric=main_metric) & ~Q(main_per_tag_text="{}")
        # ``metrics_text`` and ``main_per_tag_text`` are the database's text copies of the
        # JSON fields (generated columns): read as they are stored.
        rows = list(
            Score.objects.filter(dataset__task=task, dataset__perturbation_of__isnull=True)
            .annotate(
                main_per_tag_board=Case(
                    When(has_main_per_tag, then=F("main_per_tag_text")),
                    default=Value(None),
                    output_field=TextField(),
                ),
                per_tag_text=Case(
                    When(has_main_per_tag, then=Value(None)),
                    default=Cast("per_tag", TextField()),
                    output_field=TextField(),
                ),
            )
            .values_list(*SCORE_FIELDS)
        )
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(SCORE_FIELDS)
    (
        model_ids,
        dataset_ids,
        metrics_texts,
        main_per_tag_texts,
        per_tag_texts,
        main_values,
        ci_lows,
        ci_highs,
        *job_columns,
    ) = columns
    score_columns = ScoreColumns(
        model_ids=model_ids,
        dataset_slugs=list(map(str, dataset_ids)),
        metrics=_json_values(metrics_texts),
        main_per_tag=_json_values(main_per_tag_texts),
        per_tag=_json_values(per_tag_texts),
        main_values=main_values,
        ci_lows=ci_lows,
        ci_highs=ci_highs,
        columns=dict(zip(SCORE_FIELDS[8:], job_columns, strict=True)),
    )
    return cube_build(models, score_columns, [spec.name for spec in metric_specs], main_metric)


def _json_values(texts: Sequence[str | None]) -> list[Any]:
    """Decode JSON texts as ``JSONField`` does (None stays None), in one call.

    Each text is one JSON document (jsonb output on PostgreSQL; the JSON_VALID check of
    JSONField on SQLite), so joining them with commas makes one array, decoded by orjson
    (five times faster than ``json`` on a 1,000-model board). What orjson refuses and
    ``json`` reads (NaN, integers beyond 64 bits) is decoded by ``json``; should the count
    not match, each is decoded on its own, and one that is not JSON stays text, as
    ``JSONField.from_db_value`` leaves it.
    """
    if not texts:
        return []
    # SQL NULL (no JSON at all) decodes as None, like JSON null.
    parts = ["null" if text is None else text for text in texts] if None in texts else texts
    document = "[" + ",".join(parts) + "]"
    try:
        values = orjson.loads(document)
    except orjson.JSONDecodeError:
        try:
            values = json.loads(document)
        except ValueError:
            values = None
    if isinstance(values, list) and len(values) == len(texts):
        return values
    decoded: list[Any] = []
    for text in texts:
        try:
            decoded.append(None if text is None else json.loads(text))
        except ValueError:
            decoded.append(text)
    return decoded


def leaderboard_forks(task: Task) -> list[LeaderboardFork]:
    """Return the saved weightings of ``task``, newest first (one query)."""
    return list(task.forks.order_by("-created_at")[:50])


def leaderboard_fork_get(task: Task, slug: str) -> LeaderboardFork:
    """Return fork ``slug`` of ``task`` or raise NotFound."""
    fork = LeaderboardFork.objects.filter(task=task, slug=slug).select_related("created_by").first()
    if fork is None:
        raise NotFound(f"no saved weighting {slug!r}")
    return fork


def leaderboard_snapshots(task: Task) -> list[LeaderboardSnapshot]:
    """Return the snapshots of ``task``, newest first, without their tables (one query)."""
    return list(
        task.snapshots.select_related("created_by").defer("table").order_by("-created_at")[:50]
    )


def leaderboard_snapshot_get(task: Task, snapshot_id: int) -> LeaderboardSnapshot:
    """Return snapshot ``snapshot_id`` of ``task`` or raise NotFound."""
    snapshot = (
        LeaderboardSnapshot.objects.filter(task=task, pk=snapshot_id)
        .select_related("created_by")
        .first()
    )
    if snapshot is None:
        raise NotFound(f"no snapshot {snapshot_id}")
    return snapshot


# -- the model page -------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelResults:
    """What the model page shows besides the card."""

    scores: list[Score]
    runs: list[EvaluationRun]
    shows_hidden: bool


def model_results(model: Model, user) -> ModelResults:
    """Return ``model``'s scores per dataset and its evaluation runs (two queries).

    Scores and runs on hidden datasets are for the task's owners only.
    """
    manages = can_manage_task(user, model.task)
    scores = Score.objects.filter(model=model).select_related("dataset", "dataset__round")
    runs = EvaluationRun.objects.filter(model=model).select_related("dataset")
    if not manages:
        scores = scores.exclude(dataset__access_type=AccessType.HIDDEN)
        runs = runs.exclude(dataset__access_type=AccessType.HIDDEN)
    return ModelResults(
        scores=list(scores.order_by("dataset__round__number", "dataset__name")),
        runs=list(runs.order_by("-created_at")[:50]),
        shows_hidden=manages,
    )


@dataclass(frozen=True)
class BrowsedExample:
    """One example of the per-example browser: the inputs, the gold, the predictions."""

    uid: str
    inputs: dict
    gold: Any
    prediction: Any
    correct: bool | None
    compare_prediction: Any = None
    compare_correct: bool | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExampleBrowser:
    dataset: Dataset | None
    datasets: list[Dataset]
    compare_model: Model | None
    compare_choices: list[Model]
    examples: list[BrowsedExample]
    wrong_only: bool
    page: int
    page_count: int
    total: int
    message: str = ""


BROWSER_PAGE_SIZE = 25


def _latest_predictions(model_id: int, dataset: Dataset) -> dict[int, Any]:
    """Return ``{example id: output}`` of the newest run of the model on ``dataset``."""
    run = (
        EvaluationRun.objects.filter(model_id=model_id, dataset=dataset, predictions__isnull=False)
        .order_by("-created_at", "-pk")
        .values_list("pk", flat=True)
        .first()
    )
    if run is None:
        return {}
    return dict(Prediction.objects.filter(run_id=run).values_list("example_id", "output"))


def model_example_browser(
    model: Model,
    user,
    *,
    dataset_slug: str | None = None,
    compare_model_id: Any = None,
    wrong_only: bool = False,
    page: Any = 1,
) -> ExampleBrowser:
    """Return a page of ``model``'s predictions on one dataset with the gold labels.

    For those who may see gold (``tasks.permissions.can_browse_predictions``; the view
    checks). An example is wrong when the main perf metric scores it below 100, or when
    the model gave no output. ``compare_model_id`` adds another model's predictions on
    the same examples. Bad parameters fall back to defaults.
    """
    task = model.task
    config = task.config
    datasets = list(
        Dataset.objects.filter(task=task, perturbation_of__isnull=True).order_by("name", "pk")
    )
    compare_choices = list(
        Model.objects.filter(task=task).exclude(pk=model.pk).order_by("name", "pk")
    )
    dataset = next((item for item in datasets if item.slug == dataset_slug), None)
    if dataset is None and datasets:
        dataset = datasets[0]
    compare_model = next(
        (item for item in compare_choices if str(item.pk) == str(compare_model_id)), None
    )
    empty = ExampleBrowser(
        dataset, datasets, compare_model, compare_choices, [], wrong_only, 1, 1, 0
    )
    if dataset is None or config is None:
        return empty

    predictions = _latest_predictions(model.pk, dataset)
    compared = _latest_predictions(compare_model.pk, dataset) if compare_model else {}
    perf = config.main_perf_metric
    try:
        metric = get_metric(perf.type)
    except MetricError:
        metric = None

    def correct(output: Any, gold: Any) -> bool | None:
        if output is None or not isinstance(output, dict):
            return False
        if metric is None or metric.example_score is None or not isinstance(gold, dict):
            return None
        try:
            score = metric.example_score(
                output.get(perf.reference_name), gold.get(perf.reference_name), perf.options
            )
        except (MetricError, TypeError, ValueError):
            return None
        return float(score) >= 100.0

    examples = []
    rows = _dataset_example_rows(dataset)
    for example_id, uid, inputs, gold, tags in rows:
        if example_id not in predictions:
            continue
        output = predictions[example_id]
        is_correct = correct(output, gold)
        if wrong_only and is_correct is not False:
            continue
        compare_output = compared.get(example_id)
        examples.append(
            BrowsedExample(
                uid=uid,
                inputs=inputs,
                gold=gold,
                prediction=output,
                correct=is_correct,
                compare_prediction=compare_output,
                compare_correct=correct(compare_output, gold) if example_id in compared else None,
                tags=tuple(tags or ()),
            )
        )
    total = len(examples)
    page_count = max(1, -(-total // BROWSER_PAGE_SIZE))
    try:
        page_number = min(max(1, int(str(page))), page_count)
    except ValueError:
        page_number = 1
    start = (page_number - 1) * BROWSER_PAGE_SIZE
    message = "" if predictions else "This model has no predictions on this dataset yet."
    return ExampleBrowser(
        dataset=dataset,
        datasets=datasets,
        compare_model=compare_model,
        compare_choices=compare_choices,
        examples=examples[start : start + BROWSER_PAGE_SIZE],
        wrong_only=wrong_only,
        page=page_number,
        page_count=page_count,
        total=total,
        message=message,
    )


def _dataset_example_rows(dataset: Dataset) -> list[tuple]:
    """Return ``(id, uid, inputs, gold, tags)`` of the dataset's examples by position."""
    return list(
        dataset.examples.order_by("position").values_list("pk", "uid", "inputs", "gold", "tags")
    )
