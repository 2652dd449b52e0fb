#!/usr/bin/env python
"""CPU per submission cycle, one cycle at a time: the web side in this process, every other
process by its own CPU time.

    .venv/bin/python bench/cycle.py [--n 150] [--rounds 3] [--json] [--profile FILE]

A cycle is what a crowdworker does in the load test: open the create page, submit an example
(the page waits for the live model's answer), and every third cycle open the validate page
and validate the example it offers. The pages are served by Django's test client in this
process against a throwaway PostgreSQL database; the demo model server, two live RQ workers
(RQ's SimpleWorker), the cron scheduler (``run_cron``) and a redis-server of its own run as
processes, as in production. Cycles run one after another, so the figures do not depend on
how busy the machine is the way a closed loop's do: each is CPU time (user + system) per
cycle of this process (``web``), of the database backends serving this database (``pg``),
and of the processes this script started (``rq``, ``cron``, ``redis``). Between rounds the
script waits three seconds so that the flush and the drain finish what a round left.

``--profile FILE`` profiles the web cycles of the measured rounds (not the warm-up) by this
process's CPU time (``time.process_time``), so other work on the machine does not show, and
writes the ``pstats`` dump to FILE (read it with ``python -m pstats FILE``).

Run it from two checkouts one after the other to compare two commits (copy this script into
an older checkout: it uses only ``bench/harness.py``'s helpers that older commits have).
"""

from __future__ import annotations

import argparse
import cProfile
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

CONTEXT_ID = re.compile(r'name="context_id" value="(\d+)"')
EXAMPLE_ID = re.compile(r'name="example_id" value="(\d+)"')
CONFIG_VERSION = re.compile(r'name="config_version" value="(\d+)"')


def process_cpu(database_name: str) -> dict[str, float]:
    """CPU seconds so far of this database's backends and of this script's children."""
    import psutil
    from django.db import connection

    groups: dict[str, list[int]] = {"pg": [], "rq": [], "cron": [], "redis": []}
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [database_name])
        groups["pg"] = [row[0] for row in cursor.fetchall()]
    for child in psutil.Process().children(recursive=True):
        try:
            command = " ".join(child.cmdline())
        except psutil.Error:
            continue
        for name, needle in (("rq", "rqworker"), ("cron", "run_cron"), ("redis", "redis-server")):
            if needle in command:
                groups[name].append(child.pid)
    totals = {}
    for name, pids in groups.items():
        totals[name] = 0.0
        for pid in pids:
            try:
                times = psutil.Process(pid).cpu_times()
            except psutil.Error:
                continue
            totals[name] += times.user + times.system
    return totals


def cycles(code: str, writer, validator, n: int) -> float:
    """Run ``n`` cycles; return this process's CPU milliseconds per cycle."""
    started = time.process_time()
    for index in range(n):
        page = writer.get(f"/tasks/{code}/create?next=1").content.decode()
        context_id = CONTEXT_ID.search(page).group(1)
        response = writer.post(
            f"/tasks/{code}/create",
            {
                "context_id": context_id,
                "statement": f"What a wonderful surprise, number {index}.",
                "label": ("positive", "negative", "neutral")[index % 3],
            },
        )
        if response.status_code != 200:
            raise RuntimeError(f"create POST answered {response.status_code}")
        if index % 3 == 0:
            page = validator.get(f"/tasks/{code}/validate").content.decode()
            example = EXAMPLE_ID.search(page)
            if example:
                data = {"example_id": example.group(1), "label": "correct"}
                version = CONFIG_VERSION.search(page)
                if version:
                    data["config_version"] = version.group(1)
                validator.post(f"/tasks/{code}/validate", data)
    return (time.process_time() - started) * 1000 / n


def measure(code: str, database_name: str, n: int, rounds: int, profile_path=None) -> dict:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    clients = []
    for name in ("bench-worker-0", "bench-worker-1"):
        client = Client()
        client.force_login(get_user_model().objects.get(username=name))
        clients.append(client)
    cycles(code, *clients, 30)  # warm-up
    time.sleep(3)
    profiler = cProfile.Profile(time.process_time) if profile_path else None
    results = []
    for _ in range(rounds):
        before = process_cpu(database_name)
        if profiler is not None:
            profiler.enable()
        web = cycles(code, *clients, n)
        if profiler is not None:
            profiler.disable()
        time.sleep(3)
        after = process_cpu(database_name)
        row = {"web": round(web, 3)}
        row.update({name: round((after[name] - before[name]) * 1000 / n, 3) for name in after})
        row["total"] = round(sum(row.values()), 3)
        results.append(row)
    if profiler is not None:
        profiler.dump_stats(profile_path)
    return {
        "n": n,
        "rounds": results,
        "total_median_ms": round(statistics.median(row["total"] for row in results), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=150, help="cycles per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print only the JSON line")
    parser.add_argument(
        "--profile", metavar="FILE", help="profile the web cycles by CPU time into FILE (pstats)"
    )
    options = parser.parse_args()
    database = harness.ThrowawayDatabase("dynatask_bench_cycle")
    processes = harness.Processes()
    _redis, redis_port = harness.start_redis(processes)
    env = harness.base_env(database.url, f"redis://127.0.0.1:{redis_port}/0")
    env["DB_CONN_MAX_AGE"] = "600"
    try:
        database.create(env)
        _model, port = harness.start_model_server(processes, env)
        seeded = harness.seed_task(env, "cycle", f"http://127.0.0.1:{port}/", users=2)
        for _ in range(2):
            harness.start_rq_worker(processes, env, ("live",))
        if hasattr(harness, "start_cron"):  # a checkout older than the periodic jobs has none
            harness.start_cron(processes, env)
        database.settle()
        for key in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "LOG_LEVEL", "DEBUG"):
            os.environ[key] = env[key]
        os.environ["MODELS_HUB_ALLOWED_HOSTS"] = env["MODELS_HUB_ALLOWED_HOSTS"]
        os.environ["DB_CONN_MAX_AGE"] = env["DB_CONN_MAX_AGE"]
        os.environ["ALLOWED_HOSTS"] = "testserver"
        result = measure(seeded["task"], database.name, options.n, options.rounds, options.profile)
    finally:
        from django.db import connections

        connections.close_all()
        processes.stop()
        database.drop()
    if not options.json:
        for row in result["rounds"]:
            print("  ".join(f"{name} {value}" for name, value in row.items()), file=sys.stderr)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
