#!/usr/bin/env python
"""Measure the leaderboard page at 10 and 1,000 models: queries and render time.

In the configured database (``DATABASE_URL``; migrated first), inside one transaction that
is rolled back at the end so nothing is left behind, for boards of 10 and 1,000 models:

1. create a throwaway task (the sentiment demo config), two scoring datasets and the
   models with a Score on each dataset (``bulk_create``), with every metric and tags
   (``per_tag`` and its ``main_per_tag``, as the evaluation writes them);
2. render ``GET /tasks/<code>/leaderboard/?page_size=50`` with ``django.test.Client``,
   count its queries with ``CaptureQueriesContext`` and time it: the median of
   ``--repeats`` renders, alternating between the two boards so that load changes on the
   machine hit both alike.

Prints one JSON object. The headline, ``queries_10``, ``queries_1000``,
``render_ratio_1000_vs_10`` (target at most 2), ``render_ms_10`` and ``render_ms_1000``,
is the *cold* page, what a new weighting costs: the page cache is cleared before every
render, so each one reads the task's score cube (``leaderboards.cubes``: every model's
scores as arrays, which the evaluation rebuilds when it writes a Score, as
``build_board`` does here), computes the Dynascore of every model (one numpy pass) and
builds and renders the 50 page rows. The ``_new_scores`` fields are the page right after
scores changed behind the evaluation's back, the cube deleted before every render, so
that the page rebuilds it from the 2,000 Score rows; ``cube_build_ms_{10,1000}`` is that
rebuild alone (what the evaluation's finalize job spends after writing a Score). The
``_cached`` fields are repeated views of the same page, as most visitors see it, served
by the leaderboard's data-versioned page cache.

    DATABASE_URL=postgres://... .venv/bin/python bench/leaderboard.py [--repeats N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynatask_site.settings.test")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402
import numpy as np  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402

from leaderboards.models import BoardCube, Dataset, Score, main_per_tag_of  # noqa: E402
from leaderboards.scoring import BOOTSTRAP_RESAMPLES, resamples_encode  # noqa: E402
from leaderboards.selectors.cubes import score_cube_build  # noqa: E402
from leaderboards.services.scores import board_cube_refresh  # noqa: E402
from models_hub.models import RegisteredModel  # noqa: E402
from tasks import services  # noqa: E402
from tasks.models import Task  # noqa: E402

PAGE_SIZE = 50
MAIN = "macro_f1"
TAGS = ["negation", "sarcasm", "emoji"]
# Field suffix -> what each render may reuse: the cube (cold), nothing (new scores), the
# whole page (cached).
SUFFIXES = {"": "cold", "_new_scores": "new_scores", "_cached": "cached"}


class Rollback(Exception):
    """Raised to leave the transaction, so the throwaway data is rolled back."""


def build_board(count: int, owner) -> str:
    """Create a task with ``count`` scored models; return its code."""
    yaml_text = (ROOT / "tasks" / "demo_data" / "sentiment.yaml").read_text()
    code = f"bench-{uuid.uuid4().hex[:10]}"
    task = services.task_create(yaml_text=yaml_text, owners=[owner], code=code, name=code)
    datasets = [
        Dataset.objects.create(
            task=task, name=f"Set {index}", slug=f"set-{index}", config_version=task.current_config
        )
        for index in range(2)
    ]
    models = RegisteredModel.objects.bulk_create(
        RegisteredModel(
            task=task,
            owner=owner,
            name=f"bench-model-{index:05d}",
            protocol="none",
            is_published=True,
            is_anonymous=index % 10 == 0,
        )
        for index in range(count)
    )
    # The resamples a Score keeps: one fixed spread per dataset, as paired resamples give.
    spread = {
        dataset.pk: np.random.default_rng(dataset.pk).normal(0.0, 1.5, BOOTSTRAP_RESAMPLES)
        for dataset in datasets
    }
    scores = []
    for index, model in enumerate(models):
        for dataset in datasets:
            main = 40.0 + (index * 37 % 600) / 10
            per_tag = {tag: {MAIN: main - position} for position, tag in enumerate(TAGS)}
            scores.append(
                Score(
                    model=model,
                    dataset=dataset,
                    config_version=task.current_config,
                    main_metric=MAIN,
                    main_value=main,
                    ci_low=main - 2,
                    ci_high=main + 2,
                    main_resamples=resamples_encode(main + spread[dataset.pk]),
                    metrics={
                        MAIN: main,
                        "robustness": 70.0 + index % 13,
                        "fairness": 75.0 + index % 7,
                        "examples_per_second": 5.0 + index % 29,
                        "latency_p95_ms": 80.0 + index % 41,
                        "memory_utilization": 1.0 + index % 9,
                    },
                    per_tag=per_tag,
                    # As ``leaderboards.services.scores.score_refresh`` writes it.
                    main_per_tag=main_per_tag_of(per_tag, MAIN),
                    example_count=500,
                )
            )
    Score.objects.bulk_create(scores, batch_size=2000)
    # As the evaluation does once it has written a Score.
    board_cube_refresh(task.pk)
    return code


def forget(state: str) -> None:
    """Clear what a render in ``state`` (cold, new scores, cached) may not reuse."""
    if state != "cached":
        cache.clear()
    if state == "new_scores":
        BoardCube.objects.all().delete()


def count_queries(client: Client, url: str, state: str) -> int:
    """Return the number of queries of one render (after a warm-up render)."""
    assert client.get(url).status_code == 200
    forget(state)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.status_code
    # Read the count now: ``captured_queries`` slices the live log, which later requests reset.
    return len(captured.captured_queries)


def median_render_ms(client: Client, urls: dict[int, str], repeats: int, state: str) -> dict:
    """Return the median render time of each URL in milliseconds.

    The URLs are rendered in turn (10, 1000, 10, 1000...), so that a change in the load of
    the machine during the run weighs on both sides of the ratio alike; ``forget(state)``
    runs before every render, outside the timing.
    """
    timings: dict[int, list[float]] = {count: [] for count in urls}
    for _ in range(repeats):
        for count, url in urls.items():
            forget(state)
            started = time.perf_counter()
            client.get(url)
            timings[count].append((time.perf_counter() - started) * 1000)
    return {count: statistics.median(values) for count, values in timings.items()}


def median_build_ms(codes: dict[int, str], repeats: int) -> dict:
    """Return the median time to build each board's score cube from its scores."""
    timings: dict[int, list[float]] = {count: [] for count in codes}
    tasks = {
        count: Task.objects.select_related("current_config").get(code=code)
        for count, code in codes.items()
    }
    for _ in range(repeats):
        for count, task in tasks.items():
            started = time.perf_counter()
            score_cube_build(task)
            timings[count].append((time.perf_counter() - started) * 1000)
    return {count: statistics.median(values) for count, values in timings.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="fewer renders (bench/run.py)")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.repeats = min(arguments.repeats, 7)

    setup_test_environment()  # lets the test client's host through ALLOWED_HOSTS
    call_command("migrate", verbosity=0, interactive=False)
    result: dict[str, float | int] = {}
    try:
        with transaction.atomic():
            owner = get_user_model().objects.create(username=f"bench-{uuid.uuid4().hex[:8]}")
            client = Client()
            codes = {count: build_board(count, owner) for count in (10, 1000)}
            urls = {
                count: reverse("leaderboards:task", args=[code]) + f"?page_size={PAGE_SIZE}"
                for count, code in codes.items()
            }
            for suffix, state in SUFFIXES.items():
                for count, url in urls.items():
                    result[f"queries_{count}{suffix}"] = count_queries(client, url, state)
                medians = median_render_ms(client, urls, arguments.repeats, state)
                for count, milliseconds in medians.items():
                    result[f"render_ms_{count}{suffix}"] = round(milliseconds, 2)
            for count, milliseconds in median_build_ms(codes, arguments.repeats).items():
                result[f"cube_build_ms_{count}"] = round(milliseconds, 2)
            raise Rollback
    except Rollback:
        pass
    for suffix in SUFFIXES:
        result[f"render_ratio_1000_vs_10{suffix}"] = round(
            result[f"render_ms_1000{suffix}"] / result[f"render_ms_10{suffix}"], 3
        )
    ordered = {
        key: result[key]
        for suffix in SUFFIXES
        for key in (
            f"queries_10{suffix}",
            f"queries_1000{suffix}",
            f"render_ratio_1000_vs_10{suffix}",
            f"render_ms_10{suffix}",
            f"render_ms_1000{suffix}",
        )
    }
    ordered["cube_build_ms_10"] = result["cube_build_ms_10"]
    ordered["cube_build_ms_1000"] = result["cube_build_ms_1000"]
    print(json.dumps(ordered))


if __name__ == "__main__":
    main()
