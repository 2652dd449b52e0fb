"""The worker hosts: cron on both, a host that dies with claimed work, a Redis restart."""

from __future__ import annotations

import math
import threading
import time
from collections import defaultdict
from datetime import UTC

import pytest
from rq.cron import CronScheduler
from rq.job import Job
from rq.queue import Queue

from bench.cluster import FAST_TIMINGS, WORKER_HOSTS
from tests.cluster.conftest import TASK, example_status, wait_for

# One cluster for all: pytest-xdist runs the cluster tests on one worker (--dist loadgroup).
pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

PERIODIC = {
    "models_hub.jobs.health_check_all_job": ("health", "MODELS_HUB_HEALTH_INTERVAL"),
    "annotation.stats.buffer.counters_flush_job": ("live", "ANNOTATION_COUNTER_FLUSH_SECONDS"),
    "annotation.live.watchdog.live_watchdog_job": ("live", "ANNOTATION_LIVE_WATCHDOG_SECONDS"),
    "leaderboards.jobs.eval_recover_job": ("eval", "EVAL_RECOVER_SECONDS"),
}


def periodic_runs(cluster) -> dict[str, dict[int, int]]:
    """For each periodic job: how many jobs were enqueued in each of its periods, from the
    jobs RQ still keeps (waiting, running, finished, failed)."""
    connection = cluster.redis()
    runs: dict[str, dict[int, int]] = {path: defaultdict(int) for path in PERIODIC}
    for name in {queue for queue, _ in PERIODIC.values()}:
        queue = Queue(name, connection=connection)
        ids = set(queue.job_ids)
        for registry in (
            queue.started_job_registry,
            queue.finished_job_registry,
            queue.failed_job_registry,
        ):
            ids.update(registry.get_job_ids())
        for job in Job.fetch_many(list(ids), connection=connection):
            if job is None or job.func_name not in PERIODIC or job.enqueued_at is None:
                continue
            interval = int(FAST_TIMINGS[PERIODIC[job.func_name][1]])
            moment = job.enqueued_at.replace(tzinfo=job.enqueued_at.tzinfo or UTC).timestamp()
            runs[job.func_name][math.floor(moment / interval)] += 1
    return runs


def complete_periods(counts: dict[int, int]) -> dict[int, int]:
    """The periods strictly between the first and the last seen (the edges may be cut by
    RQ's result TTL or by now)."""
    if len(counts) < 3:
        return {}
    first, last = min(counts), max(counts)
    return {period: counts.get(period, 0) for period in range(first + 1, last)}


def test_run_cron_on_both_worker_hosts_runs_each_periodic_job_once_per_period(cluster):
    schedulers = CronScheduler.all(cluster.redis())
    assert sorted(s.hostname for s in schedulers) == sorted(WORKER_HOSTS)

    def enough():
        runs = periodic_runs(cluster)
        return runs if all(len(complete_periods(c)) >= 3 for c in runs.values()) else None

    runs = wait_for(enough, 40, "three whole periods of every periodic job")
    for path, counts in runs.items():
        periods = complete_periods(counts)
        assert set(periods.values()) == {1}, (path, periods)


def run_state(cluster, run_id: int) -> tuple[str, int]:
    rows = cluster.sql("SELECT status, done FROM leaderboards_evaluationrun WHERE id = %s", run_id)
    return rows[0]


def wait_run_done(cluster, run_id: int, seconds: float) -> None:
    wait_for(lambda: run_state(cluster, run_id)[0] in ("done", "failed"), seconds, "the run")
    assert run_state(cluster, run_id)[0] == "done", run_state(cluster, run_id)


@pytest.fixture(scope="module")
def dataset(cluster):
    return cluster.import_dataset(TASK, 60, "cluster-set")


def set_loop(cluster, owner, model_id: int) -> None:
    response = owner.api("PUT", f"/tasks/{TASK}/rounds/1/models/", {"models": [model_id]})
    assert response.status_code == 200, response.text[:300]


def running_shard_on(cluster, run_id: int) -> str | None:
    """The host of the worker that runs a shard of ``run_id`` (once another is done)."""
    rows = cluster.sql(
        "SELECT status, job_id FROM leaderboards_evaluationshard WHERE run_id = %s", run_id
    )
    if not any(status == "done" for status, _ in rows):
        return None
    connection = cluster.redis()
    for status, job_id in rows:
        if status == "running" and job_id:
            job = Job.fetch(job_id, connection=connection)
            if job.worker_name:
                return job.worker_name.split("-")[0]
    return None


def live_claims(cluster) -> int:
    connection = cluster.redis()
    return sum(connection.llen(key) for key in connection.scan_iter("annotation:live-claimed:*"))


def catch_shard_on_worker1(cluster, run_id: int, seconds: float = 30.0) -> None:
    """Leave worker1 frozen in the middle of a shard of ``run_id``, holding live claims.

    The host is frozen (SIGSTOP) before the check, so a shard seen running cannot end before
    the kill that follows; a shard that ended just before the freeze thaws the host and waits
    for the next one."""
    deadline = time.monotonic() + seconds
    while True:
        wait_for(
            lambda: running_shard_on(cluster, run_id) == "worker1" and live_claims(cluster) > 0,
            max(deadline - time.monotonic(), 0.1),
            "worker1 to run a shard and hold live claims",
        )
        cluster.freeze_host("worker1")
        if running_shard_on(cluster, run_id) == "worker1" and live_claims(cluster) > 0:
            return
        cluster.thaw_host("worker1")


MODELS_AND_REFERENCE_RUN = """
from django.contrib.auth import get_user_model
from leaderboards.models import Dataset
from leaderboards.services.runs import evaluation_run_create
from models_hub.models import RegisteredModel
from tasks.models import Task
task = Task.objects.get(code=args["task"])
owner = get_user_model().objects.get(username="bench-owner")
def model(name, url, **fields):
    return RegisteredModel.objects.create(task=task, owner=owner, name=name, protocol="dynatask",
                                endpoint_url=url, is_published=True, read_timeout=10.0, **fields)
one_at_a_time = {"batch_size": 1, "max_concurrency": 1}
result = {"reference": model("reference", args["fast"], **one_at_a_time).pk,
          "victim": model("victim", args["fast"], **one_at_a_time).pk,
          "slow": model("slow", args["slow"], batch_size=4, max_concurrency=8).pk}
reference = RegisteredModel.objects.get(pk=result["reference"])
result["run"] = evaluation_run_create(reference, Dataset.objects.get(pk=args["dataset"]),
                                      shard_size=10, include_perturbations=False).pk
"""
SCORES = """
from leaderboards.models import Score
JOB_METRICS = {"examples_per_second", "latency_p50_ms", "latency_p95_ms", "memory_utilization"}
result = []
for model_id in args["models"]:
    score = Score.objects.get(model_id=model_id, dataset_id=args["dataset"])
    result.append({"metrics": {k: v for k, v in score.metrics.items() if k not in JOB_METRICS},
                   "per_tag": score.per_tag, "main_value": score.main_value,
                   "ci": [score.ci_low, score.ci_high], "count": score.example_count})
"""


def test_a_worker_host_that_dies_loses_no_evaluation_and_no_live_example(
    cluster, sites, owner, dataset
):
    made = cluster.django(
        MODELS_AND_REFERENCE_RUN,
        task=TASK, dataset=dataset, fast=cluster.model_url, slow=cluster.slow_model_url,
    )  # fmt: skip
    reference, victim, slow = made["reference"], made["victim"], made["slow"]
    wait_run_done(cluster, made["run"], 60)  # undisturbed, on both hosts

    # worker2's workers stop: worker1 takes the shards and the live examples. Its cron stays.
    for process in ("live0", "eval0", "health"):
        cluster.stop_process("worker2", process)
    set_loop(cluster, owner, slow)
    (run,) = cluster.create_runs([victim], dataset, shard_size=10)
    examples = []

    def submit(site):
        examples.append(site.create(text=f"Claimed by worker1 {site.username}.")[1])

    threads = [threading.Thread(target=submit, args=(site,)) for site in sites[:3]]
    for thread in threads:
        thread.start()
    catch_shard_on_worker1(cluster, run)
    cluster.kill_host("worker1")
    killed_at = time.monotonic()
    for process in ("live0", "eval0", "health"):
        cluster.start_worker("worker2", process)
    try:
        for thread in threads:
            thread.join(timeout=30)
        assert len(examples) == 3 and all(examples), examples
        # Answered without any request: the watchdog gave worker1's claims back.
        wait_for(
            lambda: all(example_status(cluster, pk) == "model_answered" for pk in examples),
            30 - (time.monotonic() - killed_at),
            "the live examples worker1 had claimed to be answered",
        )
        wait_run_done(cluster, run, 90)
        scores = cluster.django(SCORES, models=[victim, reference], dataset=dataset)
        assert scores[0] == scores[1]
        shards = cluster.sql(
            "SELECT count(*), sum(attempts) FROM leaderboards_evaluationshard WHERE run_id = %s",
            run,
        )[0]
        assert shards[1] > shards[0]  # a shard ran twice: the one worker1 died in
    finally:
        cluster.start_workers("worker1")
        set_loop(cluster, owner, cluster.model_id)


def test_after_a_redis_restart_every_host_recovers_by_itself(cluster, sites, owner, dataset):
    import requests

    processes = {
        (host, name): popen
        for host in ("web1", "web2", *WORKER_HOSTS)
        for name, popen in cluster.hosts[host].processes.items()
    }
    cluster.kill_host("redis")
    # The load balancer's check says what is missing, and nothing else.
    answer = requests.get(cluster.web_url("web1") + "/readyz", timeout=5)
    assert (answer.status_code, answer.json()) == (
        503,
        {"status": "unavailable", "failed": ["redis"]},
    )
    time.sleep(2)
    cluster.start_redis()
    restarted = time.time()

    # Web: both hosts back in the balancer; a session from before still signed in (sessions
    # are written through to the database).
    cluster.wait_lb_up("web1", "web2", seconds=30)
    site = sites[1]
    assert site.get(f"/tasks/{TASK}/create").status_code == 200
    # Live loop: a new example is answered.
    _response, example_id = site.create(text="After the Redis restart.")
    wait_for(
        lambda: example_status(cluster, example_id) == "model_answered",
        30,
        "a live answer after the restart",
    )
    # Evaluation: a new run completes.
    model = cluster.add_model(TASK, cluster.model_url, "after-restart", batch_size=8)
    (run,) = cluster.create_runs([model], dataset, shard_size=30)
    wait_run_done(cluster, run, 60)

    # Cron: every periodic job is enqueued again.
    def enqueued_since_restart():
        runs = periodic_runs(cluster)
        return all(
            any(period * int(FAST_TIMINGS[PERIODIC[path][1]]) >= restarted for period in counts)
            for path, counts in runs.items()
        )

    wait_for(enqueued_since_restart, 20, "the periodic jobs after the restart")
    # No process had to be restarted.
    stopped = [key for key, popen in processes.items() if popen.poll() is not None]
    assert stopped == []
