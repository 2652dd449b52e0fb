#!/usr/bin/env python
"""Time "next example to validate" at 10k examples and at 1M (100k with --quick).

    .venv/bin/python bench/validation_queue.py [--quick] [--large N] [--n 300]

In a throwaway PostgreSQL database (created and migrated here, dropped at the end), two
sentiment tasks get 10,000 and N examples, inserted by one ``INSERT ... SELECT
generate_series`` each: a mix of verdicts (fooled, not fooled, none), validation counts 0-2,
10% settled, 1% retracted, written by 500 users. The acting validator wrote some of the
examples and has validated some, so the selector's exclusions do work. Then
``annotation.selectors.validation.example_next_to_validate(task, actor)`` is timed ``n`` times
on each task (after a warm-up), and so is the validate POST's read of one example still in the queue
(``example_for_validation``, by its id).

Prints one JSON line: ``p50_ms_small``, ``p50_ms_large``, ``ratio`` (large over small; the
target is at most 2), ``lookup_p50_ms_small``, ``lookup_p50_ms_large``, ``lookup_ratio`` (the
validate POST's read), ``examples_small``, ``examples_large``, ``insert_seconds``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402

SMALL = 10_000
WRITERS = 500


def insert_examples(connection, task, actor_user_id: int, count: int) -> None:
    """Bulk-insert ``count`` examples of ``task`` with one INSERT ... SELECT."""
    from django.contrib.auth import get_user_model

    from annotation.models import Example

    User = get_user_model()
    writer_ids = list(
        User.objects.filter(username__startswith="vq-writer-").values_list("pk", flat=True)
    )
    round_ = task.rounds.get(number=1)
    template = Example(
        task=task,
        round=round_,
        config_version=task.current_config,
        input={"statement": "A benchmark statement.", "label": "positive"},
        goal_label="positive",
        status="model_answered",
        model_output={
            "label": "negative",
            "prob": {"negative": 0.8, "positive": 0.1, "neutral": 0.1},
        },
        verdict_source="metric",
        metadata={},
    )
    from django.utils import timezone

    template.created_at = template.updated_at = timezone.now()
    varying = {
        "user_id": "(%(writers)s)[1 + (g %% %(nwriters)s)]",
        "model_wrong": "CASE g %% 3 WHEN 0 THEN TRUE WHEN 1 THEN FALSE ELSE NULL END",
        "validation_count": "(g / 7) %% 3",
        "validation_state": "CASE WHEN g %% 10 = 0 THEN 'correct' ELSE 'pending' END",
        "retracted": "(g %% 100 = 1)",
    }
    columns, expressions, params = [], [], []
    for field in Example._meta.concrete_fields:
        if field.primary_key:
            continue
        column = field.column
        columns.append(f'"{column}"')
        if column in varying:
            expressions.append(varying[column])
            continue
        value = field.get_db_prep_save(getattr(template, field.attname), connection)
        expressions.append("%s")
        params.append(value)
    writers_array = "ARRAY[" + ",".join(str(pk) for pk in writer_ids) + "]::bigint[]"
    sql = (
        f"INSERT INTO {Example._meta.db_table} ({', '.join(columns)}) "
        f"SELECT {', '.join(expressions)} FROM generate_series(1, {int(count)}) AS g"
    )
    sql = sql.replace("%(writers)s", writers_array).replace("%(nwriters)s", str(len(writer_ids)))
    sql = sql.replace("%%", "%%")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        # The actor has validated a few of the least-validated examples of the task.
        cursor.execute(
            "INSERT INTO annotation_validation (example_id, user_id, label, metadata, "
            "is_owner_verdict, created_at) SELECT id, %s, 'correct', '{}'::jsonb, FALSE, now() "
            f"FROM {Example._meta.db_table} WHERE task_id = %s AND validation_count = 0 "
            "AND model_wrong IS TRUE ORDER BY id LIMIT 50",
            [actor_user_id, task.pk],
        )
        cursor.execute(f"ANALYZE {Example._meta.db_table}")
        cursor.execute("ANALYZE annotation_validation")


def _timings(call, n: int) -> list[float]:
    """Milliseconds of ``n`` calls of ``call`` (after 20 to warm up); each must find one."""
    for _ in range(20):
        call()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        found = call()
        samples.append((time.perf_counter() - started) * 1000)
        assert found is not None
    return samples


def time_next(task, actor, n: int) -> list[float]:
    from annotation.selectors.validation import example_next_to_validate

    return _timings(lambda: example_next_to_validate(task, actor), n)


def time_lookup(task, actor, n: int) -> list[float]:
    """Time the validate POST's read of the newest example of the actor's queue
    (``example_for_validation``)."""
    from annotation.selectors.validation import example_for_validation, validation_queue

    example_id = validation_queue(task, actor).order_by("-id").values_list("pk", flat=True)[0]
    return _timings(lambda: example_for_validation(task, example_id, actor), n)


def run(large: int, n: int) -> dict:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.campaigns.actors import Actor
    from tasks import services

    User = get_user_model()
    User.objects.bulk_create([User(username=f"vq-writer-{i}") for i in range(WRITERS)])
    actor_user = User.objects.get(username="vq-writer-0")
    yaml_text = (ROOT / "tasks" / "demo_data" / "sentiment.yaml").read_text()
    small_task = services.task_create(code="vq-small", name="VQ small", yaml_text=yaml_text)
    large_task = services.task_create(code="vq-large", name="VQ large", yaml_text=yaml_text)
    started = time.perf_counter()
    insert_examples(connection, small_task, actor_user.pk, SMALL)
    insert_examples(connection, large_task, actor_user.pk, large)
    insert_seconds = time.perf_counter() - started
    actor = Actor(user=actor_user)
    small = time_next(small_task, actor, n)
    large_samples = time_next(large_task, actor, n)
    lookup_small = statistics.median(time_lookup(small_task, actor, n))
    lookup_large = statistics.median(time_lookup(large_task, actor, n))
    p50_small = statistics.median(small)
    p50_large = statistics.median(large_samples)
    return {
        "p50_ms_small": round(p50_small, 3),
        "p50_ms_large": round(p50_large, 3),
        "p95_ms_large": harness.percentile(large_samples, 95),
        "ratio": round(p50_large / p50_small, 3),
        "lookup_p50_ms_small": round(lookup_small, 3),
        "lookup_p50_ms_large": round(lookup_large, 3),
        "lookup_ratio": round(lookup_large / lookup_small, 3),
        "examples_small": SMALL,
        "examples_large": large,
        "insert_seconds": round(insert_seconds, 1),
        "n": n,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k examples instead of 1M")
    parser.add_argument("--large", type=int, default=None)
    parser.add_argument("--n", type=int, default=None)
    options = parser.parse_args()
    large = options.large or (100_000 if options.quick else 1_000_000)
    n = options.n or (100 if options.quick else 300)
    database = harness.ThrowawayDatabase("dynatask_bench_vq")
    env = harness.base_env(database.url, harness.redis_url_for_bench(14))
    try:
        database.create(env)
        os.environ.update({key: env[key] for key in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")})
        os.environ.setdefault("LOG_LEVEL", "WARNING")
        result = run(large, n)
    finally:
        from django.db import connections

        connections.close_all()
        database.drop()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
