"""Export a task's (or a round's) examples as JSON Lines to a file or standard output."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.export import example_export_lines
from annotation.stats.summaries import round_by_number
from core.errors import ServiceError
from tasks.models import Task


class Command(BaseCommand):
    help = "Export the examples of a task (or one round) as JSON Lines, in constant memory."

    def add_arguments(self, parser):
        parser.add_argument("task", help="The task's code.")
        parser.add_argument("--round", dest="round_number", help="Only this round's examples.")
        parser.add_argument("--output", "-o", help="Write to this file (default: stdout).")

    def handle(self, *args, task, round_number=None, output=None, **options):
        found = Task.objects.filter(code=task).first()
        if found is None:
            raise CommandError(f"no task {task!r}")
        try:
            round_ = round_by_number(found, round_number)
        except ServiceError as error:
            raise CommandError(error.message)
        lines = example_export_lines(found, round_)
        count = 0
        if output:
            with open(output, "w", encoding="utf-8") as stream:
                for line in lines:
                    stream.write(line)
                    count += 1
            self.stderr.write(f"wrote {count} examples to {output}")
        else:
            for line in lines:
                self.stdout.write(line, ending="")
                count += 1
            self.stderr.write(f"exported {count} examples")
