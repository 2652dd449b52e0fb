#!/usr/bin/env python
"""Measure the arena board page at 5 and 50 models: queries and render time.

In the configured database (``DATABASE_URL``; migrated first), inside one transaction that is
rolled back at the end so nothing is left behind, for arenas of 5 and 50 models:

1. create a throwaway arena task (``tasks/demo_data/arena.yaml``), the models, and
   ``--battles`` synthetic voted battles (the same number for both arenas, default 10,000:
   ``annotation.arena.synthetic``, the demo's own code);
2. render ``GET /tasks/<code>/arena/board/`` with ``django.test.Client``, count its queries
   with ``CaptureQueriesContext`` and time it: the median of ``--repeats`` renders,
   alternating between the two arenas so that load changes on the machine hit both alike.

Three states:

- ``_cached``: the page as visitors see it between two votes (its HTML cached with the board);
- ``_after_vote``: the page just after a vote (the board's generation bumped before every
  render, as ``board_page.board_changed`` does), while the refresh job refits the board: it
  shows the last board it rendered;
- ``_cold``: the cache cleared before every render (no board ever computed, or the refresh
  job missing for ``REFRESH_SECONDS``): the page reads the counted battles and refits the
  board itself (point fit, 1,000 bootstrap refits, pair shares, Elo, matrices).

``refresh_ms_{5,50}`` is the refresh job alone (``arena_board_refresh_job``: what a vote
costs the live queue). Prints one JSON object; the target (issue 34) is
``render_ratio_50_vs_5`` at most 2 for the page as visitors get it (cached, after a vote).

    DATABASE_URL=postgres://... .venv/bin/python bench/arena_page.py [--repeats N] [--quick]
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

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402

from annotation.arena.board_page import arena_board_refresh_job  # noqa: E402
from annotation.arena.selectors import board_generation_bump  # noqa: E402
from annotation.arena.synthetic import synthetic_battles  # noqa: E402
from models_hub.models import RegisteredModel  # noqa: E402
from tasks import services  # noqa: E402

SIZES = (5, 50)
STATES = {"_cached": "cached", "_after_vote": "after_vote", "_cold": "cold"}
TASK_IDS: dict[str, int] = {}


class Rollback(Exception):
    """Raised to leave the transaction, so the throwaway data is rolled back."""


def build_arena(count: int, battles: int, owner, voters) -> str:
    """Create an arena task with ``count`` models and ``battles`` votes; return its code."""
    yaml_text = (ROOT / "tasks" / "demo_data" / "arena.yaml").read_text()
    code = f"bench-arena-{uuid.uuid4().hex[:8]}"
    task = services.task_create(yaml_text=yaml_text, owners=[owner], code=code, name=code)
    models = RegisteredModel.objects.bulk_create(
        RegisteredModel(
            task=task,
            owner=owner,
            name=f"bench-chat-{index:03d}",
            protocol="none",
            is_published=True,
        )
        for index in range(count)
    )
    strengths = {model.pk: 1000.0 + 600.0 * index / count for index, model in enumerate(models)}
    round_ = task.rounds.get(number=1)
    synthetic_battles(task, round_, models, voters, strengths, battles, seed=count)
    TASK_IDS[code] = task.pk
    return code


def forget(state: str) -> None:
    """Before a render in ``state``: a vote's effect (without queueing the job), or no cache."""
    if state == "cold":
        cache.clear()
    elif state == "after_vote":
        for task_id in TASK_IDS.values():
            board_generation_bump(task_id)
            cache.set(f"arena-board-changed:{task_id}", time.time())


def median_refresh_ms(codes: dict[int, str], repeats: int) -> dict:
    """The refresh job's time (the board refitted and rendered), alternating the arenas."""
    timings: dict[int, list[float]] = {count: [] for count in codes}
    for _ in range(repeats):
        for count, code in codes.items():
            cache.clear()
            started = time.perf_counter()
            arena_board_refresh_job(TASK_IDS[code])
            timings[count].append((time.perf_counter() - started) * 1000)
    return {count: statistics.median(values) for count, values in timings.items()}


def count_queries(client: Client, url: str, state: str) -> int:
    assert client.get(url).status_code == 200
    forget(state)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.status_code
    return len(captured.captured_queries)


def median_render_ms(client: Client, urls: dict[int, str], repeats: int, state: str) -> dict:
    """The median render time of each URL (in turn: 5, 50, 5, 50...), ``forget`` untimed."""
    timings: dict[int, list[float]] = {count: [] for count in urls}
    for _ in range(repeats):
        for count, url in urls.items():
            forget(state)
            started = time.perf_counter()
            client.get(url)
            timings[count].append((time.perf_counter() - started) * 1000)
    return {count: statistics.median(values) for count, values in timings.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--battles", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="fewer renders and battles")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.repeats = min(arguments.repeats, 5)
        arguments.battles = min(arguments.battles, 3000)

    setup_test_environment()
    call_command("migrate", verbosity=0, interactive=False)
    result: dict[str, float | int] = {"battles": arguments.battles}
    try:
        with transaction.atomic():
            users = get_user_model().objects
            owner = users.create(username=f"bench-{uuid.uuid4().hex[:8]}")
            voters = [users.create(username=f"bench-voter-{uuid.uuid4().hex[:8]}") for _ in "abcd"]
            codes = {n: build_arena(n, arguments.battles, owner, voters) for n in SIZES}
            urls = {n: reverse("annotation:arena_board", args=[code]) for n, code in codes.items()}
            client = Client()
            for suffix, state in STATES.items():
                for count, url in urls.items():
                    result[f"queries_{count}{suffix}"] = count_queries(client, url, state)
                medians = median_render_ms(client, urls, arguments.repeats, state)
                for count, milliseconds in medians.items():
                    result[f"render_ms_{count}{suffix}"] = round(milliseconds, 2)
            for count, milliseconds in median_refresh_ms(codes, arguments.repeats).items():
                result[f"refresh_ms_{count}"] = round(milliseconds, 2)
            raise Rollback
    except Rollback:
        pass
    for suffix in STATES:
        result[f"render_ratio_50_vs_5{suffix}"] = round(
            result[f"render_ms_50{suffix}"] / result[f"render_ms_5{suffix}"], 3
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
