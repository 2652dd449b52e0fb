"""Reads of the task's score cube (``leaderboards.cubes``) and the version of its data.

``score_cube`` returns the cube a leaderboard page reads, rebuilt from the models and
scores (``score_cube_build``) when the data version (``leaderboard_data_version``) moved.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
from django.db import DatabaseError, transaction
from django.db.models import BinaryField, Case, F, Q, TextField, Value, When
from django.db.models.functions import Cast

from leaderboards.cubes import (
    CUBE_FORMAT,
    CubeFormatError,
    CubeModel,
    ScoreCube,
    cube_build,
    cube_decode,
    cube_encode,
)
from leaderboards.models import BoardCube, Score
from leaderboards.scoring import resamples_decode
from leaderboards.sql import board_data_stamp
from leaderboards.tables.records import ScoreColumns
from models_hub.models import RegisteredModel
from tasks.models import Task

logger = logging.getLogger(__name__)

# The order ``score_cube_build`` unpacks; the job-metric columns come last.
SCORE_FIELDS = (
    "model_id",
    "dataset_id",
    "metrics_text",
    "main_per_tag_board",
    "per_tag_text",
    "main_value",
    "ci_low",
    "ci_high",
    "covered_count",
    "example_count",
    "examples_per_second",
    "latency_p50_ms",
    "latency_p95_ms",
    "memory_gb",
)


def leaderboard_data_version(task: Task) -> str:
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


def score_cube(task: Task, version: str | None = None) -> ScoreCube:
    """Return the score cube of ``task`` (``leaderboards.cubes``) for data ``version``.

    One query when the stored cube is current (``version`` defaults to the current data
    version: one more); otherwise the cube is rebuilt from the models and scores (two
    queries) and stored (one upsert), for the next page. The evaluation rebuilds it as
    soon as it writes a Score (``evaluation.board_cube_refresh``), so pages rarely do.
    """
    if version is None:
        version = leaderboard_data_version(task)
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
    cube = score_cube_build(task)
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


def score_cube_build(task: Task) -> ScoreCube:
    """Build the cube of every model of ``task`` and every Score on its original datasets."""
    config = task.config
    metric_specs = config.metrics() if config is not None else ()
    main_metric = next((spec.name for spec in metric_specs if spec.is_main), "")
    models = _cube_models(task)
    rows = _cube_score_rows(task, main_metric) if models else []
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
        covered_counts,
        example_counts,
        *job_columns,
    ) = columns
    score_columns = ScoreColumns(
        model_ids=model_ids,
        dataset_slugs=list(map(str, dataset_ids)),
        metrics=json_texts_decode(metrics_texts),
        main_per_tag=json_texts_decode(main_per_tag_texts),
        per_tag=json_texts_decode(per_tag_texts),
        main_values=main_values,
        ci_lows=ci_lows,
        ci_highs=ci_highs,
        columns=dict(zip(SCORE_FIELDS[10:], job_columns, strict=True)),
        covered=covered_counts,
        totals=example_counts,
    )
    return cube_build(models, score_columns, [spec.name for spec in metric_specs], main_metric)


def _cube_models(task: Task) -> list[CubeModel]:
    """Return every model of ``task`` by id, with its owner's name: one query."""
    return [
        CubeModel(model_id, name, owner_id, owner_name or "", is_anonymous, is_published)
        for model_id, name, owner_id, owner_name, is_anonymous, is_published in (
            RegisteredModel.objects.filter(task=task)
            .order_by("pk")
            .values_list(
                "pk", "name", "owner_id", "owner__username", "is_anonymous", "is_published"
            )
        )
    ]


def _cube_score_rows(task: Task, main_metric: str) -> list[tuple]:
    """Return the ``SCORE_FIELDS`` of every Score on the original datasets of ``task``.

    Plain tuples, the JSON fields as text decoded by the caller in one call per field: a
    1000-model board has thousands of scores, and per-row objects and decoding cost more
    than the query itself. The best model per tag needs only the main metric of each tag:
    the small ``main_per_tag``; the whole ``per_tag`` is read only for scores without it
    (written before it existed, or for another main metric).
    """
    has_main_per_tag = Q(main_metric=main_metric) & ~Q(main_per_tag_text="{}")
    # ``metrics_text`` and ``main_per_tag_text`` are the database's text copies of the
    # JSON fields (generated columns): read as they are stored.
    return list(
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


def score_resamples(
    model_ids: Sequence[int], dataset_ids: Sequence[int]
) -> dict[tuple[int, int], np.ndarray]:
    """Return the stored bootstrap resamples of the Scores of ``model_ids`` on ``dataset_ids``
    by (model id, dataset id), in one query; pairs without any are left out."""
    if not model_ids or not dataset_ids:
        return {}
    rows = Score.objects.filter(
        model_id__in=list(model_ids),
        dataset_id__in=list(dataset_ids),
        main_resamples__isnull=False,
    ).values_list("model_id", "dataset_id", "main_resamples")
    found = {}
    for model_id, dataset_id, payload in rows:
        values = resamples_decode(payload)
        if values is not None:
            found[(model_id, dataset_id)] = values
    return found


def json_texts_decode(texts: Sequence[str | None]) -> list[Any]:
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
