"""Run RQ's cron scheduler with the periodic jobs of the models hub (health checks)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from models_hub import jobs


class Command(BaseCommand):
    help = (
        "Enqueue the periodic model health checks every MODELS_HUB_HEALTH_INTERVAL seconds "
        "(RQ's CronScheduler; the jobs run on the 'default' queue's workers)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--interval", type=int, default=None, help="Seconds between health checks."
        )

    def handle(self, *args, **options):
        scheduler = jobs.cron_scheduler(interval=options["interval"])
        interval = scheduler.get_jobs()[0].interval
        self.stdout.write(f"health checks of every model every {interval}s (Ctrl-C stops)")
        # Blocks until SIGINT/SIGTERM; RQ registers the scheduler in Redis for monitoring.
        scheduler.start()
