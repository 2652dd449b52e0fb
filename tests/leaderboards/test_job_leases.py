"""A running shard job's lease: a job whose host died is dead once its lease lapses, however
long its worker's key lives on in Redis."""

from __future__ import annotations

import time

import django_rq
import pytest
from rq.job import JobStatus
from rq.worker import Worker

from leaderboards import jobs
from leaderboards.job_leases import LEASES_KEY, JobLease, lease_alive, leases_prune


@pytest.fixture
def started_job(redis_connection):
    """A job that a registered worker (its key alive in Redis) has started."""
    worker = Worker(["eval"], connection=redis_connection, name="worker-on-a-lost-host")
    worker.register_birth()
    job = django_rq.get_queue("eval").enqueue_call("builtins.print", job_id="shard-job")
    job.set_status(JobStatus.STARTED)
    job.worker_name = worker.name
    job.save()
    return job


def test_a_lapsed_lease_makes_a_job_dead_whatever_its_worker_key_says(
    redis_connection, started_job
):
    assert jobs.job_alive(started_job.id, redis_connection)  # no lease: its worker decides
    redis_connection.zadd(LEASES_KEY, {started_job.id: time.time() + 10})
    assert jobs.job_alive(started_job.id, redis_connection)
    redis_connection.zadd(LEASES_KEY, {started_job.id: time.time() - 1})
    assert not jobs.job_alive(started_job.id, redis_connection)


def test_a_lease_is_held_and_renewed_while_the_job_runs_then_dropped(redis_connection, settings):
    settings.EVAL_JOB_LEASE_SECONDS = 0.3
    with JobLease(redis_connection, "job-1"):
        time.sleep(0.5)  # longer than the lease: only a renewal keeps it
        assert lease_alive("job-1", redis_connection) is True
    assert lease_alive("job-1", redis_connection) is None


def test_old_lapsed_leases_are_pruned(redis_connection):
    redis_connection.zadd(LEASES_KEY, {"dead": time.time() - 7200, "recent": time.time() - 5})
    assert leases_prune(redis_connection) == 1
    assert lease_alive("dead", redis_connection) is None
    assert lease_alive("recent", redis_connection) is False
