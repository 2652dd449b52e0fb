"""``dynatask_site.warmup``: a web worker and a long-running live worker freeze their loaded
objects for the garbage collector; a worker run in burst mode or in a thread does not."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import uuid
from pathlib import Path

import django_rq
from rq import Queue

from models_hub.jobs import LiveWorker

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str) -> str:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dynatask_site.settings.test"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_wsgi_application_is_warmed_up_and_frozen():
    out = _run(
        "import gc; from dynatask_site.wsgi import application; "
        "from django.template import engines; "
        "loader = engines['django'].engine.template_loaders[0]; "
        "print(gc.get_freeze_count(), len(loader.get_template_cache))"
    )
    frozen, templates = map(int, out.split())
    assert frozen > 50_000  # the loaded program: Django, the apps, the URL conf
    assert templates >= 5  # the hot templates are compiled before the first request


def test_a_long_running_live_worker_freezes_before_its_first_job():
    queue = f"warmup-{uuid.uuid4().hex}"
    out = _run(
        "import django; django.setup(); import gc, django_rq; from rq import Queue; "
        "from models_hub.jobs import LiveWorker; "
        "connection = django_rq.get_connection('live'); "
        f"LiveWorker([Queue({queue!r}, connection=connection)], connection=connection)"
        ".work(max_idle_time=1); print(gc.get_freeze_count())"
    )
    assert int(out.split()[-1]) > 50_000


def test_a_burst_worker_in_a_test_process_freezes_nothing():
    connection = django_rq.get_connection("live")
    before = gc.get_freeze_count()
    queue = Queue(f"warmup-{uuid.uuid4().hex}", connection=connection)
    LiveWorker([queue], connection=connection).work(burst=True)
    assert gc.get_freeze_count() == before
