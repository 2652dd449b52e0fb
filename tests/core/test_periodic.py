"""The periodic jobs: RQ's cron scheduler with ``settings.PERIODIC_JOBS``, on the real Redis."""

from __future__ import annotations

import django_rq
import pytest
from rq.worker import SimpleWorker

from core.periodic import cron_scheduler

# transaction=True: the jobs run in this process against committed rows.
pytestmark = pytest.mark.django_db(transaction=True)


def test_the_periodic_jobs_are_registered_with_rq_cron_and_run_cleanly(redis_connection, settings):
    settings.PERIODIC_JOBS = [
        ("models_hub.jobs.health_check_all_job", "health", 17),
        ("annotation.stats.buffer.counters_flush_job", "live", 2),
        ("annotation.live.watchdog.live_watchdog_job", "live", 5),
    ]
    scheduler = cron_scheduler(redis_connection)
    registered = {job.func_name: (job.queue_name, job.interval) for job in scheduler.get_jobs()}
    assert registered == {
        "models_hub.jobs.health_check_all_job": ("health", 17),
        "annotation.stats.buffer.counters_flush_job": ("live", 2),
        "annotation.live.watchdog.live_watchdog_job": ("live", 5),
    }
    # rq 2.6 would hand a cron ``timeout`` to the job function as a keyword argument.
    assert all("timeout" not in job.job_options for job in scheduler.get_jobs())
    # The first tick enqueues every job at once, and a worker runs each cleanly.
    scheduler.enqueue_jobs()
    for name in ("health", "live"):
        queue = django_rq.get_queue(name)
        queued = queue.get_jobs()
        assert queued
        SimpleWorker([queue], connection=redis_connection).work(burst=True)
        for job in queued:
            job.refresh()
            assert job.get_status() == "finished", job.latest_result()


def test_the_settings_register_the_health_checks_the_flush_and_the_watchdog(settings):
    paths = {path for path, _queue, _interval in settings.PERIODIC_JOBS}
    assert paths == {
        "models_hub.jobs.health_check_all_job",
        "annotation.stats.buffer.counters_flush_job",
        "annotation.live.watchdog.live_watchdog_job",
    }
    # Health checks have a queue of their own, with the shape of the others.
    queues = {path: queue for path, queue, _interval in settings.PERIODIC_JOBS}
    assert queues["models_hub.jobs.health_check_all_job"] == "health"
    assert set(settings.RQ_QUEUES["health"]) == set(settings.RQ_QUEUES["eval"])
