"""Import a dataset (or a perturbed copy) from a JSON Lines or CSV file."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.errors import ServiceError
from leaderboards.models import AccessType
from leaderboards.services.datasets import dataset_import
from tasks.models import Task


class Command(BaseCommand):
    help = "Import a dataset into a task from JSON Lines or CSV (all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("task", help="task code")
        parser.add_argument("file", help="path to a .jsonl or .csv file")
        parser.add_argument("--name", required=True)
        parser.add_argument("--slug", default="")
        parser.add_argument("--access", choices=AccessType.values, default=AccessType.SCORING)
        parser.add_argument("--round", type=int, default=None, dest="round_number")
        parser.add_argument("--description", default="")
        parser.add_argument("--source-url", default="")
        parser.add_argument("--format", choices=["jsonl", "csv"], default=None)
        parser.add_argument("--perturbation-of", default=None, help="slug of the original")
        parser.add_argument("--kind", choices=["fairness", "robustness"], default="")
        parser.add_argument(
            "--no-evaluate", action="store_true", help="do not create evaluation runs"
        )

    def handle(self, *args, **options):
        task = Task.objects.select_related("current_config").filter(code=options["task"]).first()
        if task is None:
            raise CommandError(f"no task {options['task']!r}")
        try:
            with open(options["file"], "rb") as stream:
                dataset = dataset_import(
                    task,
                    stream,
                    filename=options["file"],
                    fmt=options["format"],
                    name=options["name"],
                    slug=options["slug"],
                    access_type=options["access"],
                    round_number=options["round_number"],
                    description=options["description"],
                    source_url=options["source_url"],
                    perturbation_of=options["perturbation_of"],
                    perturbation_kind=options["kind"],
                    evaluate=not options["no_evaluate"],
                )
        except OSError as error:
            raise CommandError(f"cannot read {options['file']}: {error}") from None
        except ServiceError as error:
            for problem in error.details.get("errors", [])[:20]:
                self.stderr.write(
                    f"line {problem['line']}: {problem['path'] or '-'}: {problem['message']} "
                    f"[{problem['code']}]"
                )
            raise CommandError(error.message) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"imported {dataset.row_count} examples into {task.code}/{dataset.slug}"
            )
        )
