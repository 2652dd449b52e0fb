"""WSGI entry point: the application, with plain thread-local registries (a WSGI process runs
no event loop: ``dynatask_site.threadlocals``), warmed up and with its loaded objects frozen
for the garbage collector (``dynatask_site.warmup``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynatask_site.settings.dev")
application = get_wsgi_application()

from dynatask_site.threadlocals import use_thread_locals  # noqa: E402 - needs the app loaded
from dynatask_site.warmup import freeze_after_startup  # noqa: E402

use_thread_locals()
freeze_after_startup()
