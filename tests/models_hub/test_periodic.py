"""Periodic jobs run once per period however many schedulers (hosts running run_cron) share
the Redis. The cluster test (tests/cluster) runs two real run_cron processes."""

from __future__ import annotations

import time

import django_rq

from models_hub import jobs
from models_hub.periodic import period_claim, period_of

DAY = 86_400
JOBS = [
    ("models_hub.jobs.health_check_all_job", "health", DAY),
    ("annotation.live.watchdog.live_watchdog_job", "live", DAY),
]


def queued_names(*queues: str) -> list[str]:
    return sorted(job.func_name for name in queues for job in django_rq.get_queue(name).get_jobs())


def test_two_schedulers_enqueue_each_job_once_in_a_period(redis_connection):
    first = jobs.cron_scheduler(redis_connection, JOBS)
    second = jobs.cron_scheduler(redis_connection, JOBS)
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

    scheduler = jobs.cron_scheduler(redis_connection, JOBS)
    scheduler.register_birth()
    redis_connection.flushdb()  # a Redis restarted without persistence, or a minute later
    assert CronScheduler.all(redis_connection) == []
    scheduler.heartbeat()
    assert [found.name for found in CronScheduler.all(redis_connection)] == [scheduler.name]
