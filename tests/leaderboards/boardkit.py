"""Shared helpers of the leaderboard tests: boards of scored models and the table a page shows.

Not a test module: import what you need (``tests/leaderboards/conftest.py`` holds the fixtures).
"""

from __future__ import annotations

import numpy as np
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.http import QueryDict
from django.urls import reverse

from leaderboards.models import BoardCube, Score
from leaderboards.scoring import BOOTSTRAP_RESAMPLES, resamples_encode
from leaderboards.selectors.boards import leaderboard_datasets, leaderboard_table
from leaderboards.tables.query import parse_leaderboard_query
from models_hub.models import RegisteredModel
from tests.factories import DatasetFactory, ModelFactory, UserFactory

MAIN = "macro_f1"


def dataset_noise(dataset) -> np.ndarray:
    """Return the fixed resample offsets of ``dataset`` (the same for every model on it)."""
    return np.random.default_rng(dataset.pk).normal(0.0, 1.0, BOOTSTRAP_RESAMPLES)


def stored_resamples(value, dataset) -> bytes | None:
    """Return what a Score of main metric ``value`` on ``dataset`` stores as its resamples."""
    if value is None:
        return None
    return resamples_encode(value + dataset_noise(dataset))


def make_models(
    task, count: int, datasets, *, metrics_of=None, owner=None, prefix="model", **model_fields
):
    """Create ``count`` published models with a Score on each dataset, in bulk.

    ``metrics_of(index, dataset)`` returns the Score metrics; the default gives model
    ``i`` a main metric of ``50 + i % 50`` and slower, bigger models as ``i`` grows. Each
    Score keeps resamples of its main metric: the value plus ``dataset_noise``.
    """
    owner = owner or UserFactory()
    models = RegisteredModel.objects.bulk_create(
        RegisteredModel(
            task=task,
            owner=owner,
            name=f"{prefix}-{index:04d}",
            protocol="none",
            endpoint_url="",
            is_published=model_fields.get("is_published", True),
            is_anonymous=model_fields.get("is_anonymous", False),
        )
        for index in range(count)
    )

    def default_metrics(index, dataset):
        return {
            MAIN: 50.0 + index % 50,
            "examples_per_second": 10.0 + index % 7,
            "latency_p95_ms": 100.0 + index % 11,
            "memory_utilization": 2.0 + index % 5,
        }

    metrics_of = metrics_of or default_metrics
    scores = []
    for index, model in enumerate(models):
        for dataset in datasets:
            metrics = metrics_of(index, dataset)
            if metrics is None:
                continue
            scores.append(
                Score(
                    model=model,
                    dataset=dataset,
                    config_version=dataset.config_version,
                    metrics=metrics,
                    main_metric=MAIN,
                    main_value=metrics.get(MAIN),
                    ci_low=(metrics.get(MAIN) or 0) - 2,
                    ci_high=(metrics.get(MAIN) or 0) + 2,
                    per_tag={"negation": {MAIN: metrics.get(MAIN)}},
                    main_resamples=stored_resamples(metrics.get(MAIN), dataset),
                )
            )
    Score.objects.bulk_create(scores)
    return models


def forget_computed_boards():
    """Drop the computed pages and score cubes: for data changed behind the ORM's back
    (``bulk_update`` leaves ``updated_at`` as it was, so the data version cannot see it)."""
    cache.clear()
    BoardCube.objects.all().delete()


def table_for(task, user=None, querydict="", **overrides):
    """Return the table the page would show for ``querydict`` (a query string)."""
    user = user or AnonymousUser()
    datasets = leaderboard_datasets(task, user)
    query = parse_leaderboard_query(QueryDict(querydict), task.config, datasets)
    arguments = {
        "weights": query.weights,
        "sort": query.sort,
        "page": query.page,
        "page_size": query.page_size,
        "user": user,
        "datasets": datasets,
        "messages": query.messages,
    }
    arguments.update(overrides)
    return leaderboard_table(task, **arguments)


def scored(task, dataset, model_metrics: dict[str, dict]):
    """Create one model per entry with the given metrics on ``dataset``."""
    created = {}
    for name, metrics in model_metrics.items():
        model = ModelFactory(task=task, name=name)
        Score.objects.create(
            model=model,
            dataset=dataset,
            config_version=dataset.config_version,
            metrics=metrics,
            main_metric=MAIN,
            main_value=metrics.get(MAIN),
        )
        created[name] = model
    return created


def board_with(task, count):
    """Give ``task`` ``count`` published models and two hidden anonymous ones on three
    datasets (one hidden)."""
    datasets = [
        DatasetFactory(task=task, slug="alpha"),
        DatasetFactory(task=task, slug="beta"),
        DatasetFactory(task=task, slug="secret", access_type="hidden"),
    ]
    make_models(task, count, datasets)
    make_models(task, 2, datasets, prefix="hidden", is_published=False, is_anonymous=True)
    return task


def url(name, *args):
    """Return the path of the leaderboards URL ``name``."""
    return reverse(f"leaderboards:{name}", args=args)


def assert_same_cube(first, second) -> None:
    """Assert that two score cubes hold the same names and arrays."""
    for name, value in vars(first).items():
        other = getattr(second, name)
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and value.shape == other.shape, name
            assert np.array_equal(value, other, equal_nan=value.dtype.kind == "f"), name
        else:
            assert value == other, name


def endpoint(f1, speed, latency, memory):
    """The metrics of an evaluated endpoint: its main metric and its three job metrics."""
    return {
        MAIN: f1,
        "examples_per_second": speed,
        "latency_p95_ms": latency,
        "memory_utilization": memory,
    }
