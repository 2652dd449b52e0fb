"""Open the next round of a task, carrying the previous one over unless told not to."""

from django.core.management.base import BaseCommand, CommandError

from tasks import services
from tasks.models import Task


class Command(BaseCommand):
    help = (
        "Open the next round of a task: close the earlier rounds and copy the previous "
        "round's contexts and loop models (both on by default)."
    )

    def add_arguments(self, parser):
        parser.add_argument("task", help="Task code")
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--keep-previous-open",
            action="store_false",
            dest="close_previous",
            help="Leave the earlier rounds open.",
        )
        parser.add_argument(
            "--no-carry-over",
            action="store_false",
            dest="carry_over",
            help="Start the round empty: no contexts, no models in the loop.",
        )

    def handle(self, *args, task: str, description: str, close_previous, carry_over, **options):
        task_obj = Task.objects.filter(code=task).first()
        if task_obj is None:
            raise CommandError(f"no task {task!r}")
        new_round = services.round_open(
            task_obj, description=description, close_previous=close_previous, carry_over=carry_over
        )
        carried = (
            f"{new_round.contexts.count()} contexts and the loop carried over"
            if carry_over and new_round.number > 1
            else "nothing carried over"
        )
        message = f"opened round {new_round.number} of {task}: {carried}"
        self.stdout.write(self.style.SUCCESS(message))
