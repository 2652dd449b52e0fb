#!/usr/bin/env python
"""Time one example submission, from the POST to the verdict on the page, one at a time.

    .venv/bin/python bench/submit.py [--quick] [--n 200]

Runs the demo sentiment model server (``manage.py serve_model``) and a live worker (RQ's
SimpleWorker, ``manage.py rqworker live``) as processes on loopback, against a throwaway PostgreSQL
database and a Redis database of its own. The create form is posted through Django's test
client in this process (no HTTP server in the way); when the page comes back before the model
answered, the status fragment is polled like the page's htmx does, and the clock stops when a
verdict is on the page.

Prints one JSON line: ``p50_ms``, ``p95_ms`` (target: p50 at most 20 ms), ``n``,
``verdict_on_first_page`` (how many answers came back with the verdict already on the page).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402

STATUS = re.compile(r'id="example-status"[^>]*data-status="(\w+)"')
EXAMPLE_ID = re.compile(r"/examples/(\d+)/retract")
CONTEXT_ID = re.compile(r'name="context_id" value="(\d+)"')
WARMUP = 10


def measure(code: str, n: int) -> dict:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.get(username="bench-worker-0")
    client = Client()
    client.force_login(user)
    page = client.get(f"/tasks/{code}/create")
    context_id = CONTEXT_ID.search(page.content.decode()).group(1)
    samples, first_page = [], 0
    for index in range(WARMUP + n):
        data = {
            "context_id": context_id,
            "statement": f"What a wonderful surprise, number {index}.",
            "label": ("positive", "negative", "neutral")[index % 3],
        }
        started = time.perf_counter()
        response = client.post(f"/tasks/{code}/create", data)
        text = response.content.decode()
        state = STATUS.search(text).group(1)
        example_id = EXAMPLE_ID.search(text).group(1)
        on_first = state != "awaiting_model"
        polls = 0
        while state == "awaiting_model" and polls < 50:
            polls += 1
            text = client.get(f"/tasks/{code}/examples/{example_id}/status").content.decode()
            state = STATUS.search(text).group(1)
        elapsed = (time.perf_counter() - started) * 1000
        if state != "model_answered":
            raise RuntimeError(f"example {example_id} ended as {state}")
        if index >= WARMUP:
            samples.append(elapsed)
            first_page += on_first
    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": harness.percentile(samples, 95),
        "n": n,
        "verdict_on_first_page": first_page,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 submissions instead of 200")
    parser.add_argument("--n", type=int, default=None)
    options = parser.parse_args()
    n = options.n or (50 if options.quick else 200)
    database = harness.ThrowawayDatabase("dynatask_bench_submit")
    processes = harness.Processes()
    # A redis-server of its own: a shared Redis database is flushed by other benchmark runs.
    _redis, redis_port = harness.start_redis(processes)
    env = harness.base_env(database.url, f"redis://127.0.0.1:{redis_port}/0")
    try:
        database.create(env)
        _model, port = harness.start_model_server(processes, env)
        seeded = harness.seed_task(env, "submit", f"http://127.0.0.1:{port}/", users=1)
        harness.start_rq_worker(processes, env, ("live",))
        database.settle()
        for key in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "LOG_LEVEL", "DEBUG"):
            os.environ[key] = env[key]
        os.environ["MODELS_HUB_ALLOWED_HOSTS"] = env["MODELS_HUB_ALLOWED_HOSTS"]
        os.environ["ALLOWED_HOSTS"] = "testserver,127.0.0.1,localhost"
        result = measure(seeded["task"], n)
    finally:
        from django.db import connections

        connections.close_all()
        processes.stop()
        database.drop()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
