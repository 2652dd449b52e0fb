#!/usr/bin/env python
"""Measure what our model client and the live queue add to a model call.

Against a local model server that answers at once (``models_hub.server`` in a thread), time
in one run, each after a warm-up:

- ``bare``: ``session.post(url, json=...)`` on one kept ``requests.Session``, nothing else;
- ``client``: ``models_hub.client.predict`` (SSRF check, projection, hardened transport,
  output checks against the sentiment config);
- ``queue``: enqueue ``models_hub.jobs.predict_endpoint_job`` on a live-style queue, the live
  queue's worker (RQ's SimpleWorker: no fork; a separate process as in production) runs
  it, and the result is
  read back with RQ's blocking result stream (``job.latest_result(timeout=...)``).

Prints one JSON line: ``bare_p50_ms``, ``client_p50_ms``, ``queue_p50_ms``,
``queue_overhead_ms`` (queue minus bare) and ``n``; the target is a queue overhead of at most
10 ms at p50. The queue gets a unique name so that a running dev worker cannot take the jobs.

    .venv/bin/python bench/client_overhead.py [--quick] [--n 300]

Redis: ``REDIS_URL`` (default ``redis://127.0.0.1:6379/0``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynatask_site.settings.dev")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

import requests  # noqa: E402
from redis import Redis  # noqa: E402
from rq import Queue  # noqa: E402
from rq.worker import SimpleWorker  # noqa: E402

from models_hub.client import EndpointSpec, predict  # noqa: E402
from models_hub.jobs import predict_endpoint_job  # noqa: E402
from models_hub.server import make_server  # noqa: E402
from tasks.config import parse_task_config  # noqa: E402

CONFIG_YAML = (ROOT / "tasks" / "demo_data" / "sentiment.yaml").read_text()
INPUTS = [{"uid": "1", "context": "A prompt.", "statement": "What a lovely day."}]
OUTPUT = {"label": "positive", "prob": {"negative": 0.1, "positive": 0.8, "neutral": 0.1}}
WARMUP = 20


class InstantHandler:
    """Answers at once, so every millisecond measured is overhead."""

    model_version = "instant"

    def predict(self, batch: list[dict]) -> list[dict]:
        """Return one fixed output per input."""
        return [dict(OUTPUT) for _ in batch]


def p50(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


def timed(function, n: int) -> list[float]:
    """Run ``function`` ``WARMUP`` times untimed, then ``n`` times; return milliseconds."""
    for _ in range(WARMUP):
        function()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def run_worker(queue_name: str) -> None:
    """Worker mode (a child process): serve ``queue_name`` with a SimpleWorker until SIGTERM."""
    connection = Redis.from_url(os.environ["REDIS_URL"])
    SimpleWorker([Queue(queue_name, connection=connection)], connection=connection).work(
        logging_level="WARNING", with_scheduler=False
    )


def start_worker(queue_name: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--worker", queue_name],
        cwd=ROOT,
        env=dict(os.environ),
    )


def stop_worker(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()  # RQ's warm shutdown
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 iterations instead of 300")
    parser.add_argument("--n", type=int, default=None, help="iterations per measure")
    parser.add_argument(
        "--nodelay",
        action="store_true",
        help="set TCP_NODELAY on the model server's sockets (see the report on Nagle stalls)",
    )
    parser.add_argument("--worker", metavar="QUEUE", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:
        run_worker(options.worker)
        return
    n = options.n or (50 if options.quick else 300)

    server = make_server(InstantHandler(), "127.0.0.1", 0)
    if options.nodelay:
        server.RequestHandlerClass = type(
            "NoDelayHandler", (server.RequestHandlerClass,), {"disable_nagle_algorithm": True}
        )
    server_thread = threading.Thread(target=server.serve_forever, daemon=True)
    server_thread.start()
    url = server.url
    connection = Redis.from_url(os.environ["REDIS_URL"])
    queue = Queue(f"bench-live-{uuid.uuid4().hex[:8]}", connection=connection)
    worker = start_worker(queue.name)
    try:
        config = parse_task_config(CONFIG_YAML)
        spec = EndpointSpec(url=url, allowed_hosts=("127.0.0.1",))
        body = {"task": "sentiment", "inputs": INPUTS}

        # One kept session: ``requests.post`` builds a session (adapters, pool) on every call,
        # which made the bare call slower than our client and the overhead look negative.
        session = requests.Session()

        def bare() -> None:
            response = session.post(url, json=body, timeout=5)
            response.raise_for_status()
            response.json()

        def client() -> None:
            predict(spec, config, "sentiment", INPUTS)

        def through_queue() -> None:
            job = queue.enqueue_call(
                predict_endpoint_job,
                args=({"url": url}, "sentiment", CONFIG_YAML, INPUTS),
                timeout=30,
                ttl=60,
                result_ttl=60,
                failure_ttl=60,
            )
            result = job.latest_result(timeout=10)
            if result is None or "outputs" not in (result.return_value or {}):
                raise RuntimeError(f"the queued prediction failed: {result and result.exc_string}")

        bare_ms = timed(bare, n)
        client_ms = timed(client, n)
        queue_ms = timed(through_queue, n)
    finally:
        stop_worker(worker)
        queue.delete(delete_jobs=True)
        server.shutdown()
        server.server_close()
    print(
        json.dumps(
            {
                "bare_p50_ms": p50(bare_ms),
                "client_p50_ms": p50(client_ms),
                "queue_p50_ms": p50(queue_ms),
                "queue_overhead_ms": round(p50(queue_ms) - p50(bare_ms), 3),
                "n": n,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
