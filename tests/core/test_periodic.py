"""The periodic jobs: RQ's cron scheduler with ``settings.PERIODIC_JOBS``, on the real Redis."""

from __future__ import annotations

import time

import django_rq
import pytest
from rq.worker import SimpleWorker

from core.periodic import cron_scheduler, period_claim, period_of

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


def test_the_settings_register_the_health_checks_the_flush_the_watchdog_and_recovery(settings):
    paths = {path for path, _queue, _interval in settings.PERIODIC_JOBS}
    assert paths == {
        "models_hub.jobs.health_check_all_job",
        "annotation.stats.buffer.counters_flush_job",
        "annotation.live.watchdog.live_watchdog_job",
        "leaderboards.jobs.eval_recover_job",
    }
    # Health checks have a queue of their own, with the shape of the others.
    queues = {path: queue for path, queue, _interval in settings.PERIODIC_JOBS}
    assert queues["models_hub.jobs.health_check_all_job"] == "health"
    assert set(settings.RQ_QUEUES["health"]) == set(settings.RQ_QUEUES["eval"])


DAY = 86_400
JOBS = [
    ("models_hub.jobs.health_check_all_job", "health", DAY),
    ("annotation.live.watchdog.live_watchdog_job", "live", DAY),
]


def queued_names(*queues: str) -> list[str]:
    return sorted(job.func_name for name in queues for job in django_rq.get_queue(name).get_jobs())


def test_two_schedulers_enqueue_each_job_once_in_a_period(redis_connection):
    first = cron_scheduler(redis_connection, JOBS)
    second = cron_scheduler(redis_connection, JOBS)
    period = period_of(DAY, time.time())

    by_first = first.enqueue_jobs()
    by_second = second.enqueue_jobs()

    if period_of(DAY, time.time()) == period:  # not at midnight between the two calls
        assert len(by_first) == 2 and by_second == []
        assert queued_names("health", "live") == sorted(path for path, _q, _i in JOBS)
    # Both now wait for the next period, which starts on the boundary after this one.
    for scheduler in (first, second):
        for job in scheduler.get_jobs():
            assert job.next_run_time.timestamp() % DAY == 0
            assert job.next_run_time.timestamp() > time.time()
            assert not job.should_run()


def test_a_scheduler_alone_runs_every_period_and_a_late_one_skips_a_taken_one(redis_connection):
    assert period_claim(redis_connection, "job", 10, 7, "host-a")
    assert not period_claim(redis_connection, "job", 10, 7, "host-b")
    assert period_claim(redis_connection, "job", 10, 8, "host-b")
    # Another interval of the same job is another schedule.
    assert period_claim(redis_connection, "job", 5, 7, "host-b")
    assert redis_connection.ttl("dynatask:cron:job:10:7") >= 20


def test_the_period_of_a_moment():
    assert period_of(10, 0) == 0
    assert period_of(10, 9.999) == 0
    assert period_of(10, 10.0) == 1
    assert period_of(5, 1_700_000_002.5) == 340_000_000


def test_a_scheduler_stays_listed_after_its_first_minute_and_after_redis_forgot_it(
    redis_connection,
):
    from rq.cron import CronScheduler

    scheduler = cron_scheduler(redis_connection, JOBS)
    scheduler.register_birth()
    redis_connection.flushdb()  # a Redis restarted without persistence, or a minute later
    assert CronScheduler.all(redis_connection) == []
    scheduler.heartbeat()
    assert [found.name for found in CronScheduler.all(redis_connection)] == [scheduler.name]
