"""Create a task from a YAML config file, or update its config."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.errors import ServiceError
from tasks import services
from tasks.config import TaskConfigError, parse_task_config
from tasks.models import Task


class Command(BaseCommand):
    help = "Create (or update the config of) a task from a YAML task config."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--code", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--owner", help="Username of the owner")

    def handle(self, *args, file: Path, code: str, name: str, owner: str | None, **options):
        try:
            yaml_text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"cannot read {file}: {error}") from error
        owners = []
        if owner:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise CommandError(f"no user {owner!r}")
            owners.append(user)
        try:
            task = Task.objects.filter(code=code).first()
            if task is None:
                task = services.task_create(
                    code=code, name=name, yaml_text=yaml_text, owners=owners
                )
                self.stdout.write(self.style.SUCCESS(f"created task {code}"))
            else:
                version = services.task_update_config(task, yaml_text)
                task.owners.add(*owners)
                self.stdout.write(
                    self.style.SUCCESS(f"task {code} is at config v{version.version}")
                )
            self._write_warnings(file, yaml_text)
        except ServiceError as error:
            for issue in error.details.get("issues", []):
                line = f"line {issue['line']}: " if issue.get("line") else ""
                self.stderr.write(
                    f"{file}:{line}{issue['path']}: {issue['message']} [{issue['code']}]"
                )
            raise CommandError(error.message) from error

    def _write_warnings(self, file: Path, yaml_text: str) -> None:
        """List the loaded config's warnings (upstream slips), one a line, like errors."""
        try:
            warnings = parse_task_config(yaml_text).warnings
        except TaskConfigError:
            return
        for issue in warnings:
            line = f"line {issue.line}: " if issue.line else ""
            self.stderr.write(
                self.style.WARNING(f"{file}:{line}{issue.path}: {issue.message} [{issue.code}]")
            )
