"""Import contexts into a task from JSON Lines or CSV (all or nothing)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.errors import ServiceError
from tasks import services
from tasks.models import Task


class Command(BaseCommand):
    help = "Import contexts (JSON Lines or CSV) into a task's round."

    def add_arguments(self, parser):
        parser.add_argument("task", help="Task code")
        parser.add_argument("file", type=Path)
        parser.add_argument("--round", type=int, dest="round_number")
        parser.add_argument("--tag", default="")
        parser.add_argument("--format", choices=["jsonl", "csv"])

    def handle(self, *args, task: str, file: Path, round_number, tag, **options):
        task_obj = Task.objects.filter(code=task).first()
        if task_obj is None:
            raise CommandError(f"no task {task!r}")
        try:
            with open(file, "rb") as stream:
                count = services.contexts_import(
                    task_obj,
                    stream,
                    filename=file.name,
                    fmt=options["format"],
                    round_number=round_number,
                    tag=tag,
                )
        except OSError as error:
            raise CommandError(f"cannot read {file}: {error}") from error
        except ServiceError as error:
            for problem in error.details.get("errors", []):
                self.stderr.write(
                    f"{file}:{problem['line']}: {problem['path']}: {problem['message']} "
                    f"[{problem['code']}]"
                )
            raise CommandError(error.message) from error
        self.stdout.write(self.style.SUCCESS(f"imported {count} contexts into {task}"))
