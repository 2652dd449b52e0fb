"""Run RQ's cron scheduler with the platform's periodic jobs (``settings.PERIODIC_JOBS``).

Safe on every worker host at once: each job is enqueued once per period, by whichever
scheduler takes that period's lock in Redis first (``core.periodic``)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from core.periodic import cron_scheduler


class Command(BaseCommand):
    help = (
        "Enqueue the periodic jobs of settings.PERIODIC_JOBS (model health checks, the stats "
        "counters' flush, the live loop's check) at their intervals, with RQ's CronScheduler. "
        "Run it on every worker host: each job runs once per period across all of them."
    )

    def handle(self, *args, **options):
        scheduler = cron_scheduler()
        for job in scheduler.get_jobs():
            self.stdout.write(f"{job.func_name} on {job.queue_name} every {job.interval}s")
        self.stdout.write("running (Ctrl-C stops)")
        # Blocks until SIGINT/SIGTERM; RQ registers the scheduler in Redis for monitoring.
        scheduler.start()
