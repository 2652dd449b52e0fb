"""``LiveWorker``, the live queue's worker, against the real Redis (REDIS_URL)."""

from __future__ import annotations

import time

import django_rq
import pytest
from rq.job import Job, JobStatus
from rq.suspension import resume, suspend

from models_hub.jobs import LiveWorker


@pytest.fixture
def queue(redis_connection):
    return django_rq.get_queue("live")


def _worker(queue) -> LiveWorker:
    return LiveWorker([queue], connection=queue.connection)


def _ttl(worker: LiveWorker) -> int:
    return worker.connection.ttl(worker.key)


def test_runs_the_jobs_of_a_burst_and_keeps_their_results(queue):
    jobs = [queue.enqueue("operator.add", n, 1, result_ttl=60) for n in range(5)]
    assert _worker(queue).work(burst=True) is True
    results = [Job.fetch(job.id, connection=queue.connection) for job in jobs]
    assert [job.get_status() for job in results] == [JobStatus.FINISHED] * 5
    assert [job.return_value() for job in results] == [1, 2, 3, 4, 5]


def test_a_bare_heartbeat_is_sent_again_only_when_the_last_is_old(queue):
    worker = _worker(queue)
    worker.register_birth()
    worker.heartbeat()
    assert _ttl(worker) > worker.worker_ttl
    queue.connection.expire(worker.key, 5)
    worker.heartbeat()  # the last one is fresh: nothing is sent
    assert _ttl(worker) <= 5
    worker._last_heartbeat = time.monotonic() - LiveWorker.HEARTBEAT_EVERY - 1
    worker.heartbeat()
    assert _ttl(worker) > worker.worker_ttl


def test_a_heartbeat_with_a_ttl_of_its_own_is_always_sent(queue):
    worker = _worker(queue)
    worker.register_birth()
    worker.heartbeat()
    worker.heartbeat(timeout=3)  # a job's TTL, as RQ's prepare_job_execution gives
    assert _ttl(worker) <= 3


def test_a_state_is_written_only_when_it_changes(queue):
    worker = _worker(queue)
    worker.register_birth()
    worker.set_state("idle")
    queue.connection.hset(worker.key, "state", "tampered")
    worker.set_state("idle")  # unchanged: not written again
    assert queue.connection.hget(worker.key, "state") == b"tampered"
    worker.set_state("busy")
    assert queue.connection.hget(worker.key, "state") == b"busy"


def test_a_suspended_worker_stops_within_the_check_delay(queue):
    job = queue.enqueue("operator.add", 1, 1, result_ttl=60)
    suspend(queue.connection)
    try:
        worker = _worker(queue)
        worker._last_suspension_check = time.monotonic()  # checked just now
        worker.check_for_suspension(burst=True)  # within the delay: not asked again
        worker._last_suspension_check = None
        assert worker.work(burst=True) is False  # asked: suspended, so it stops
        assert job.get_status(refresh=True) == JobStatus.QUEUED
    finally:
        resume(queue.connection)
    assert _worker(queue).work(burst=True) is True
    assert job.get_status(refresh=True) == JobStatus.FINISHED
