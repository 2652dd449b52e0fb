"""Create the demo tasks, contexts, models and datasets (idempotent)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.errors import ServiceError
from tasks.demo_registry import SeedOptions, run_seeders
from tasks.seed import DEMO_ADMIN_PASSWORD, DEMO_ADMIN_USERNAME


class Command(BaseCommand):
    help = "Create the demo tasks (sentiment, NLI, QA, hate speech) with contexts and a login."

    def add_arguments(self, parser):
        parser.add_argument(
            "--shared-data",
            type=Path,
            help="Folder with the real datasets (e.g. ../shared/data); loaded instead of the "
            "project's own small demo data.",
        )
        parser.add_argument(
            "--model-url",
            action="append",
            default=[],
            metavar="TASK=URL",
            help="Register a running demo model server for TASK (repeatable).",
        )
        parser.add_argument(
            "--no-evaluate", action="store_true", help="Do not queue evaluation runs."
        )

    def handle(self, *args, **options):
        shared = options["shared_data"]
        if shared is not None and not shared.is_dir():
            raise CommandError(f"--shared-data {shared} is not a folder")
        model_urls = {}
        for item in options["model_url"]:
            task, sep, url = item.partition("=")
            if not sep or not url:
                raise CommandError(f"--model-url wants TASK=URL, got {item!r}")
            model_urls[task] = url
        seed_options = SeedOptions(
            shared_data=shared.resolve() if shared else None,
            model_urls=model_urls,
            evaluate=not options["no_evaluate"],
            out=self.stdout,
        )
        try:
            run_seeders(seed_options)
        except ServiceError as error:
            raise CommandError(f"{error.message}: {error.details}") from error
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo ready. Admin login: {DEMO_ADMIN_USERNAME} / {DEMO_ADMIN_PASSWORD}"
            )
        )
