"""Periodic jobs: ``settings.PERIODIC_JOBS``, each run once per period however many hosts run
``manage.py run_cron``.

Each entry is (dotted path of a job function, queue name, interval in seconds); the apps own
the jobs, this module only schedules them (``cron_scheduler``).

Every worker host may run ``run_cron`` (no election, no single cron host to lose). Time is cut
into periods aligned on the epoch: period ``k`` of a job with interval ``i`` seconds is
``[k*i, (k+1)*i)``. When a job is due, each scheduler tries to take a lock in Redis for that
job and period (``SET key NX EX``); the one that takes it enqueues the job, the others skip the
period. Each scheduler then sleeps until the next period begins, so a period is never skipped
while one scheduler is alive, and schedulers started at different times agree on the periods.

What it assumes: the hosts' clocks agree to well under an interval (NTP), and Redis keeps the
lock for the period. A Redis restarted without persistence forgets the locks of the current
period: a job may then run twice in that one period. Every periodic job is idempotent, so
that costs a repeated run at most.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import django_rq
from django.conf import settings
from django.utils.module_loading import import_string
from rq import cron_scheduler_registry
from rq.cron import CronJob, CronScheduler
from rq.utils import now

LOCK_PREFIX = "dynatask:cron:"


def period_of(interval: int, moment: float) -> int:
    """The number of the period of ``interval`` seconds that holds ``moment`` (epoch seconds)."""
    return math.floor(moment / interval)


def period_lock_key(func_name: str, interval: int, period: int) -> str:
    return f"{LOCK_PREFIX}{func_name}:{interval}:{period}"


def period_claim(connection, func_name: str, interval: int, period: int, owner: str) -> bool:
    """Take the lock of ``func_name``'s period ``period``; True for the one caller that does.

    The lock outlives its period (two intervals, at least a minute): a scheduler whose clock
    is a little behind still finds it taken."""
    key = period_lock_key(func_name, interval, period)
    return bool(connection.set(key, owner, nx=True, ex=max(2 * interval, 60)))


class PeriodicScheduler(CronScheduler):
    """RQ's cron scheduler, with each interval job enqueued once per period across every
    scheduler that shares the Redis (see the module's docstring)."""

    def enqueue_jobs(self) -> list[CronJob]:
        moment = now()
        enqueued: list[CronJob] = []
        for job in self.get_jobs():
            if not job.should_run():
                continue
            interval = int(job.interval)
            period = period_of(interval, moment.timestamp())
            if period_claim(self.connection, job.func_name, interval, period, self.name):
                job.enqueue(self.connection)
                enqueued.append(job)
            # The next run is due when the next period begins, whoever ran this one.
            job.set_run_time(datetime.fromtimestamp(period * interval, tz=UTC))
        return enqueued

    def heartbeat(self, pipeline=None) -> None:
        """Register again at every beat. RQ's beat only moves this scheduler's score in the
        registry: its record expires a minute after its birth (``CronScheduler.all`` then
        misses it), and a scheduler that a restarted Redis forgot is never listed again."""
        if pipeline is not None:
            super().heartbeat(pipeline)
            return
        with self.connection.pipeline() as pipe:
            cron_scheduler_registry.register(self, pipe)
            self.save(pipe)
            pipe.execute()


# Every queue of ``RQ_QUEUES`` lives in the same Redis: the scheduler registers itself there.
SCHEDULER_QUEUE = "default"
PERIODIC_RESULT_TTL = 300
PERIODIC_FAILURE_TTL = 86_400


def cron_scheduler(connection=None, jobs=None) -> PeriodicScheduler:
    """RQ's cron scheduler with the periodic jobs of ``settings.PERIODIC_JOBS`` (or ``jobs``):
    (dotted path of a job function, queue name, interval in seconds) each. Each job is
    enqueued once per period however many hosts run one (``PeriodicScheduler``)."""
    scheduler = PeriodicScheduler(
        connection=connection or django_rq.get_connection(SCHEDULER_QUEUE)
    )
    for path, queue, interval in settings.PERIODIC_JOBS if jobs is None else jobs:
        scheduler.register(
            import_string(path),
            queue,
            interval=int(interval),
            # No ``timeout=`` here: rq 2.6's CronJob passes it to Queue.enqueue, which hands
            # unknown keywords to the job function itself. The queue's default timeout applies.
            # A run that no worker took within a few intervals is dropped: the next one comes.
            ttl=max(3 * int(interval), 10),
            result_ttl=min(PERIODIC_RESULT_TTL, 10 * int(interval)),
            failure_ttl=PERIODIC_FAILURE_TTL,
        )
    return scheduler
