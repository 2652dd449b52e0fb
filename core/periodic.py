"""Periodic jobs: RQ's cron scheduler with the jobs of ``settings.PERIODIC_JOBS``.

Each entry is (dotted path of a job function, queue name, interval in seconds); the apps own
the jobs, this module only schedules them (``manage.py run_cron``).
"""

from __future__ import annotations

import django_rq
from django.conf import settings
from django.utils.module_loading import import_string
from rq.cron import CronScheduler

# Every queue of ``RQ_QUEUES`` lives in the same Redis: the scheduler registers itself there.
SCHEDULER_QUEUE = "default"
PERIODIC_RESULT_TTL = 300
PERIODIC_FAILURE_TTL = 86_400


def cron_scheduler(connection=None, jobs=None) -> CronScheduler:
    """RQ's cron scheduler with the periodic jobs of ``settings.PERIODIC_JOBS`` (or ``jobs``):
    (dotted path of a job function, queue name, interval in seconds) each."""
    scheduler = CronScheduler(connection=connection or django_rq.get_connection(SCHEDULER_QUEUE))
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
