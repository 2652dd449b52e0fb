"""``manage.py serve_model <dotted.path:Handler> --port N``: serve a Python model handler."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from models_hub.server import serve


class Command(BaseCommand):
    help = "Serve a Python handler with predict(batch) over the dynatask model protocol."

    def add_arguments(self, parser):
        parser.add_argument("handler", help="dotted.path:Handler, e.g. models_hub.demo:Sentiment")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument(
            "--kwargs", default="{}", help="JSON object of keyword arguments for the handler"
        )

    def handle(self, *args, **options):
        try:
            handler_kwargs = json.loads(options["kwargs"])
        except ValueError:
            raise CommandError("--kwargs must be a JSON object")
        if not isinstance(handler_kwargs, dict):
            raise CommandError("--kwargs must be a JSON object")

        def announce(server) -> None:
            self.stdout.write(f"Serving {options['handler']} at {server.url} (Ctrl-C stops)")
            self.stdout.flush()

        try:
            serve(
                options["handler"],
                options["host"],
                options["port"],
                handler_kwargs=handler_kwargs,
                ready=announce,
            )
        except (ImportError, AttributeError, ValueError, TypeError, OSError) as error:
            raise CommandError(f"cannot serve {options['handler']}: {error}")
        self.stdout.write("Stopped.")
