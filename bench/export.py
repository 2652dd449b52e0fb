#!/usr/bin/env python
"""Measure the streamed JSON Lines export: rows per second and memory growth.

In the configured database (``DATABASE_URL``; migrated first), inside one transaction that
is rolled back at the end so nothing is left behind:

1. create a task, 1,000 contexts, 200 workers and ``--rows`` examples (``bulk_create``),
   half of them with two validations, with realistic inputs, model answers and metadata,
   then ``ANALYZE`` the tables (PostgreSQL), as autovacuum does after a bulk load;
2. ask the owners' export view (``GET /tasks/<code>/export.jsonl``, a
   ``StreamingHttpResponse`` over ``annotation.export.example_export_lines``) and consume
   the stream, sampling the process RSS (psutil) after every streamed chunk (256 lines).

Prints one JSON line: ``rows_per_second``, ``memory_growth_mb`` (peak RSS during the export
minus RSS before it), ``rows``, plus ``seconds``, ``megabytes`` and ``database``. Targets:
at least 20,000 rows/s for 100k examples and at most 50 MB of growth.

    .venv/bin/python bench/export.py [--quick] [--rows N] [--chunk-size N]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynatask_site.settings.dev")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

import psutil  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import RequestFactory  # noqa: E402

from annotation import export  # noqa: E402
from annotation.models import Example, Validation  # noqa: E402
from annotation.views.export import TaskExportView  # noqa: E402
from tasks import services  # noqa: E402
from tasks.models import Context  # noqa: E402

BATCH = 5000
LABELS = ["negative", "positive", "neutral"]
WORDS = [
    "the",
    "movie",
    "was",
    "not",
    "bad",
    "at",
    "all",
    "but",
    "honestly",
    "I",
    "expected",
    "a",
    "lot",
    "more",
    "from",
    "it",
]


class Rollback(Exception):
    """Raised to undo everything the benchmark created."""


def create_data(rows: int, rng: random.Random):
    User = get_user_model()
    tag = uuid.uuid4().hex[:8]
    owner = User.objects.create_user(username=f"bench-owner-{tag}", password=None)
    yaml_text = (ROOT / "tasks" / "demo_data" / "sentiment.yaml").read_text()
    task = services.task_create(
        yaml_text=yaml_text, owners=[owner], code=f"bench-export-{tag}", name="Export benchmark"
    )
    round_ = task.rounds.get(number=1)
    version = task.current_config
    contexts = Context.objects.bulk_create(
        [
            Context(
                task=task,
                round=round_,
                config_version=version,
                data={"context": f"Prompt {n}: " + " ".join(rng.sample(WORDS, 8))},
            )
            for n in range(1000)
        ]
    )
    users = User.objects.bulk_create(
        [User(username=f"bench-{tag}-{n}", password="!") for n in range(200)]
    )
    made = 0
    while made < rows:
        size = min(BATCH, rows - made)
        batch = []
        for _ in range(size):
            label = rng.choice(LABELS)
            answer = rng.choice(LABELS)
            batch.append(
                Example(
                    task=task,
                    round=round_,
                    context=rng.choice(contexts),
                    config_version=version,
                    user=rng.choice(users),
                    input={"statement": " ".join(rng.sample(WORDS, 10)), "label": label},
                    goal_label=label,
                    status="model_answered",
                    model_version="v1",
                    model_output={
                        "label": answer,
                        "prob": {"negative": 0.2, "positive": 0.5, "neutral": 0.3},
                    },
                    model_latency_ms=rng.uniform(5, 50),
                    model_wrong=label != answer,
                    verdict_source="metric",
                    metadata={"example_explanation": "because"},
                    time_spent_ms=rng.randint(5_000, 90_000),
                )
            )
        created = Example.objects.bulk_create(batch, batch_size=BATCH)
        validations = []
        for example in created[::2]:
            first, second = rng.sample(users, 2)
            for user in (first, second):
                if user.pk != example.user_id:
                    validations.append(
                        Validation(example=example, user=user, label=rng.choice(LABELS[:2]))
                    )
        Validation.objects.bulk_create(validations, batch_size=BATCH)
        made += size
    return task, owner


def measure(task, owner) -> dict:
    request = RequestFactory().get(f"/tasks/{task.code}/export.jsonl")
    request.user = owner
    process = psutil.Process()
    gc.collect()
    before = process.memory_info().rss
    peak = before
    lines = 0
    size = 0
    start = time.perf_counter()
    response = TaskExportView.as_view()(request, code=task.code)
    assert response.status_code == 200, response.status_code
    for chunk in response.streaming_content:
        size += len(chunk)
        lines += chunk.count(b"\n")
        peak = max(peak, process.memory_info().rss)
    seconds = time.perf_counter() - start
    peak = max(peak, process.memory_info().rss)
    return {
        "rows_per_second": round(lines / seconds, 1),
        "memory_growth_mb": round((peak - before) / 2**20, 2),
        "rows": lines,
        "seconds": round(seconds, 3),
        "megabytes": round(size / 2**20, 2),
        "chunk_size": export.CHUNK_SIZE,
        "database": connection.vendor,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="20,000 rows")
    parser.add_argument("--chunk-size", type=int, default=None)
    options = parser.parse_args()
    rows = 20_000 if options.quick and options.rows == 100_000 else options.rows
    if options.chunk_size:
        export.CHUNK_SIZE = options.chunk_size
        export.example_export_lines.__kwdefaults__["chunk_size"] = options.chunk_size
    settings.DEBUG = False  # no query log growing in memory
    call_command("migrate", verbosity=0, interactive=False)
    rng = random.Random(20240501)
    result: dict = {}
    try:
        with transaction.atomic():
            started = time.perf_counter()
            task, owner = create_data(rows, rng)
            setup_seconds = time.perf_counter() - started
            # The planner needs statistics, as autovacuum would have gathered them after a
            # bulk load; inside the transaction it cannot, so gather them here (PostgreSQL
            # sees its own transaction's rows).
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    for table in ("annotation_example", "annotation_validation", "tasks_context"):
                        cursor.execute(f"ANALYZE {table}")
            result = measure(task, owner)
            result["setup_seconds"] = round(setup_seconds, 1)
            raise Rollback
    except Rollback:
        pass
    print(json.dumps(result))


if __name__ == "__main__":
    main()
