#!/usr/bin/env python
"""Evaluation throughput and worker memory against a local model server.

In one run, on a throwaway database, against one model server in its own process
(``models_hub.server`` with a keyword sentiment handler that spends ``--model-ms`` per batch,
standing in for inference):

- ``bare``: a bare client sends the same batches (``--batch-size``) at the same concurrency
  (``--concurrency`` threads calling ``models_hub.client.predict``), nothing stored; it runs
  just before and just after the worker, and their mean is the reference;
- ``ours``: one process builds the dataset, the model and the run (``evaluation_run_create``,
  default shard size); then a fresh worker process runs the evaluation jobs: each shard's
  work (``shard_execute``, what ``eval_shard_job`` runs once its model has a slot), then
  ``finalize_run_job``. examples/s
  counts the shard jobs (reading, sending, writing predictions);
- memory: the same worker run at 10k and at 100k examples, each in a fresh process that only
  runs the jobs (as an eval worker does); the peak resident memory (``VmHWM``) of the two
  is compared. Building 100k rows in the worker's own process would measure the benchmark's
  bulk inserts, not the worker.

Prints one JSON line: ``examples``, ``examples_per_second``, ``bare_examples_per_second``,
``ratio_vs_bare`` (target >= 0.9), ``peak_rss_mb_10k``, ``peak_rss_mb_100k``,
``memory_ratio_100k_vs_10k`` (target <= 1.2), ``finalize_seconds``, and the settings.

    .venv/bin/python bench/eval_throughput.py [--quick] [--examples 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import _benchdb

LABELS = ("negative", "positive", "neutral")


class BenchHandler:
    """Keyword sentiment with a fixed inference time per batch."""

    model_version = "bench-1"

    def __init__(self, model_ms: float):
        self.model_seconds = model_ms / 1000.0

    def predict(self, batch):
        if self.model_seconds:
            time.sleep(self.model_seconds)
        outputs = []
        for item in batch:
            text = item.get("statement", "")
            label = "positive" if "good" in text else "negative" if "bad" in text else "neutral"
            outputs.append(
                {"label": label, "prob": {name: 0.8 if name == label else 0.1 for name in LABELS}}
            )
        return outputs


def serve(port_file: str, model_ms: float) -> None:
    from models_hub.server import make_server

    server = make_server(BenchHandler(model_ms), "127.0.0.1", 0)
    with open(port_file, "w") as handle:
        handle.write(server.url)
    server.serve_forever()


def synthetic_inputs(count: int):
    words = ("good", "bad", "plain")
    for index in range(count):
        yield {
            "uid": f"e{index}",
            "statement": f"A {words[index % 3]} statement, number {index}.",
            "context": "Say something.",
        }


def config_yaml() -> str:
    return (_benchdb.ROOT / "tasks" / "demo_data" / "sentiment.yaml").read_text()


def endpoint(url: str, batch_size: int, concurrency: int):
    from django.conf import settings

    from models_hub.client import EndpointSpec

    return EndpointSpec(
        url=url,
        batch_size=batch_size,
        max_concurrency=concurrency,
        read_timeout=30.0,
        allowed_hosts=tuple(settings.MODELS_HUB_ALLOWED_HOSTS),
    )


def bare_run(url: str, count: int, batch_size: int, concurrency: int) -> float:
    """Send the same batches at the same concurrency with the bare client; return ex/s."""
    from models_hub.client import predict
    from tasks.config import parse_task_config

    config = parse_task_config(config_yaml())
    spec = endpoint(url, batch_size, concurrency)
    inputs = list(synthetic_inputs(count))
    batches = [inputs[first : first + batch_size] for first in range(0, count, batch_size)]
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for _ in pool.map(lambda batch: predict(spec, config, "bench", batch), batches):
            pass
    return count / (time.perf_counter() - started)


def setup_run(url: str, count: int, batch_size: int, concurrency: int) -> dict:
    """In a process of its own: build the dataset, the model and the run; return the run id."""
    from django.contrib.auth import get_user_model

    from leaderboards.models import Dataset, DatasetExample
    from leaderboards.services.runs import evaluation_run_create
    from models_hub.models import RegisteredModel
    from tasks import services as task_services

    _use_null_queue()
    code = f"bench{count}"
    task = task_services.task_create(code=code, name=code, yaml_text=config_yaml())
    owner = get_user_model().objects.create(username=f"bench{count}")
    dataset = Dataset.objects.create(
        task=task, name="bench", slug="bench", config_version=task.current_config
    )
    batch = []
    for position, item in enumerate(synthetic_inputs(count)):
        batch.append(
            DatasetExample(
                dataset_id=dataset.pk,
                position=position,
                uid=item["uid"],
                inputs=item,
                gold={"label": LABELS[position % 3]},
                tags=[f"t{position % 5}"],
            )
        )
        if len(batch) >= 5000:
            DatasetExample.objects.bulk_create(batch)
            batch = []
    DatasetExample.objects.bulk_create(batch)
    dataset.row_count = count
    dataset.save()
    model = RegisteredModel.objects.create(
        task=task,
        owner=owner,
        name="bench",
        endpoint_url=url,
        batch_size=batch_size,
        max_concurrency=concurrency,
    )
    run = evaluation_run_create(model, dataset)
    return {"run_id": run.pk}


def worker_run(run_id: int) -> dict:
    """In a fresh process, as an eval worker: run every shard job, then finalize; report.

    The data was built by another process (``setup_run``), so the peak resident memory is
    the jobs' own, not the benchmark's bulk inserts.
    """
    from leaderboards import jobs
    from leaderboards.models import EvaluationRun
    from leaderboards.services.shards import shard_execute

    _use_null_queue()
    run = EvaluationRun.objects.get(pk=run_id)
    shard_ids = list(run.shards.order_by("index").values_list("pk", flat=True))
    start_kb = _peak_rss_kb()
    started = time.perf_counter()
    for shard_id in shard_ids:
        # The shard's own work; the fair scheduling around it (``eval_shard_job``) needs Redis.
        result = shard_execute(shard_id)
        assert result["status"] == "done", result
    shard_seconds = time.perf_counter() - started
    peak_after_shards_kb = _peak_rss_kb()
    started = time.perf_counter()
    final = jobs.finalize_run_job(run_id)
    assert final["status"] == "done", final
    finalize_seconds = time.perf_counter() - started
    peak_kb = _peak_rss_kb()
    return {
        "examples_per_second": run.total / shard_seconds,
        "shards": len(shard_ids),
        "finalize_seconds": finalize_seconds,
        "peak_rss_mb": peak_kb / 1024,
        "peak_rss_mb_start": start_kb / 1024,
        "peak_rss_mb_after_shards": peak_after_shards_kb / 1024,
    }


def _peak_rss_kb() -> int:
    """Return this process's peak resident memory in kB.

    ``VmHWM`` where there is one (Linux): ``ru_maxrss`` survives ``fork`` and ``exec``, so
    a fresh worker would report at least the benchmark parent's own peak.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _use_null_queue() -> None:
    import django_rq

    # The jobs are called the way a worker calls them; Redis is not needed for that.
    django_rq.get_queue = lambda *args, **kwargs: _NullQueue()


class _NullQueue:
    """Stands in for the eval queue: the benchmark runs the jobs itself."""

    def enqueue_call(self, *args, **kwargs):
        return type("Job", (), {"id": "bench"})()


def child(mode: str, value: int, options) -> dict:
    env = dict(os.environ, BENCH_DB_NAME=options.db_name)
    output = subprocess.run(
        [
            sys.executable,
            __file__,
            f"--{mode}",
            str(value),
            "--url",
            options.url,
            "--batch-size",
            str(options.batch_size),
            "--concurrency",
            str(options.concurrency),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def evaluate(count: int, options) -> dict:
    """Build a run of ``count`` examples, then evaluate it in a fresh worker process."""
    run_id = child("setup", count, options)["run_id"]
    return child("worker", run_id, options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--examples", type=int, default=None)
    parser.add_argument("--small", type=int, default=None, help="the memory baseline size")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--model-ms", type=float, default=20.0)
    parser.add_argument("--setup", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--url", default=None, help=argparse.SUPPRESS)
    options = parser.parse_args()
    _benchdb.setup_django()

    if options.serve:
        serve(options.serve, options.model_ms)
        return
    if options.setup:
        _benchdb.use_database(os.environ["BENCH_DB_NAME"])
        print(
            json.dumps(
                setup_run(options.url, options.setup, options.batch_size, options.concurrency)
            )
        )
        return
    if options.worker:
        _benchdb.use_database(os.environ["BENCH_DB_NAME"])
        print(json.dumps(worker_run(options.worker)))
        return

    examples = options.examples or (20_000 if options.quick else 100_000)
    small = options.small or examples // 10
    from django.db import connection

    old_name = connection.settings_dict["NAME"]
    options.db_name = _benchdb.create_database()
    connection.close()
    port_file = f"/tmp/eval-bench-{os.getpid()}.url"
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", port_file, "--model-ms", str(options.model_ms)]
    )
    try:
        options.url = ""
        for _ in range(200):
            if os.path.exists(port_file):
                with open(port_file) as handle:
                    options.url = handle.read()
            if options.url:
                break
            time.sleep(0.05)
        # Warm up the server's connections, then measure in the same run.
        bare_run(
            options.url,
            options.batch_size * options.concurrency * 4,
            options.batch_size,
            options.concurrency,
        )
        small_run = evaluate(small, options)
        # The bare client runs just before and just after the worker, and the comparison uses
        # their mean: other load on the machine drifts over a minute-long run.
        bare_before = bare_run(options.url, examples, options.batch_size, options.concurrency)
        large_run = evaluate(examples, options)
        bare_after = bare_run(options.url, examples, options.batch_size, options.concurrency)
        bare = (bare_before + bare_after) / 2
    finally:
        server.terminate()
        server.wait()
        if os.path.exists(port_file):
            os.unlink(port_file)
        _benchdb.drop_database(options.db_name, old_name)
    result = {
        "examples": examples,
        "examples_per_second": round(large_run["examples_per_second"], 1),
        "bare_examples_per_second": round(bare, 1),
        "bare_before_after": [round(bare_before, 1), round(bare_after, 1)],
        "ratio_vs_bare": round(large_run["examples_per_second"] / bare, 3),
        "finalize_seconds": round(large_run["finalize_seconds"], 2),
        "memory_small_examples": small,
        "peak_rss_mb_small": round(small_run["peak_rss_mb"], 1),
        "peak_rss_mb_large": round(large_run["peak_rss_mb"], 1),
        "memory_ratio_100k_vs_10k": round(large_run["peak_rss_mb"] / small_run["peak_rss_mb"], 3),
        "detail": {"small": small_run, "large": large_run},
        "batch_size": options.batch_size,
        "concurrency": options.concurrency,
        "model_ms_per_batch": options.model_ms,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    threading.stack_size(0)
    main()
