"""Fixtures of the fault tests: real model servers on loopback, a live task, an RQ worker run.

These tests use ``transactional_db``: the create page enqueues its job after commit, so the
commit must really happen for the queue to see the job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from tests.factories import ContextFactory, TaskFactory, UserFactory

ROOT = Path(__file__).resolve().parents[2]


class SlowLorisHandler(BaseHTTPRequestHandler):
    """Accepts the request, promises a body, then trickles one byte every 0.1 s."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        """Stay quiet."""

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        deadline = time.monotonic() + 20  # bounded: the test never waits this long
        with contextlib.suppress(OSError):
            while time.monotonic() < deadline and not self.server.stopping.is_set():
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)

    do_GET = do_POST


class StoppableServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address, handler_class):
        self.stopping = threading.Event()
        super().__init__(address, handler_class)

    def handle_error(self, request, client_address):
        """Clients hanging up on purpose are not errors here."""


@contextlib.contextmanager
def serving(server):
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set() if hasattr(server, "stopping") else None
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def slowloris_url():
    server = StoppableServer(("127.0.0.1", 0), SlowLorisHandler)
    with serving(server):
        yield f"http://127.0.0.1:{server.server_address[1]}/"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class DemoModel:
    """The demo sentiment model server as a process: killed with -9, brought back on its port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> None:
        code = (
            "import sys; from models_hub.server import serve; "
            "serve('models_hub.demo.sentiment:SentimentHandler', '127.0.0.1', int(sys.argv[1]))"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(self.port)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 0.2),
            ):
                return
            time.sleep(0.05)
        raise RuntimeError("the demo model server did not start")

    def stop(self) -> None:
        """kill -9 the server (its open keep-alive connections die with it)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def demo_model():
    model = DemoModel()
    model.start()
    yield model
    model.stop()


@pytest.fixture
def live_task(transactional_db, redis_connection):
    """A sentiment task with one context and a worker; add a model with ``put_model_in_loop``."""
    owner = UserFactory(username="fault-owner", is_staff=True)
    task = TaskFactory(code="faults", owners=[owner])
    context = ContextFactory(task=task)
    worker = UserFactory(username="fault-worker")
    return {"task": task, "owner": owner, "context": context, "worker": worker}


def put_model_in_loop(live_task, url: str, read_timeout: float = 2.0):
    from models_hub import services
    from models_hub.models import RegisteredModel

    model = RegisteredModel.objects.create(
        task=live_task["task"],
        owner=live_task["owner"],
        name=f"fault-model-{url.rsplit(':', 1)[1].strip('/')}",
        protocol="dynatask",
        endpoint_url=url,
        connect_timeout=0.5,
        read_timeout=read_timeout,
        is_published=True,
    )
    services.model_set_in_loop(live_task["task"].rounds.get(number=1), [model], live_task["owner"])
    return model


def run_live_worker() -> float:
    """Run the ``live`` queue's jobs with its worker (RQ's SimpleWorker) in burst mode;
    return seconds."""
    import django_rq
    from rq.worker import SimpleWorker

    started = time.monotonic()
    worker = django_rq.get_worker("live", worker_class=SimpleWorker)
    worker.work(burst=True, logging_level="WARNING", with_scheduler=False)
    return time.monotonic() - started


def submit(client, task, context, text: str = "What a lovely day it was."):
    """POST the create form; return (response, seconds)."""
    started = time.monotonic()
    response = client.post(
        f"/tasks/{task.code}/create",
        {"context_id": context.pk, "statement": text, "label": "negative"},
    )
    return response, time.monotonic() - started


def _database_url() -> str:
    """The URL of the database this test really uses (pytest-django's ``test_<name>``)."""
    from django.db import connection

    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    user = settings.get("USER") or ""
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    credentials = f"{user}{password}@" if user else ""
    host = settings.get("HOST") or "127.0.0.1"
    port = f":{settings['PORT']}" if settings.get("PORT") else ""
    return f"postgres://{credentials}{host}{port}/{settings['NAME']}"


class WorkerProcess:
    """``manage.py rqworker`` (the ``eval`` queue's ``EvalWorker`` unless told otherwise) in
    its own process group, killed with its job horse; on the test database, with the test
    settings and ``env`` on top."""

    def __init__(
        self,
        log_path: Path,
        queues: tuple[str, ...] = ("eval",),
        worker_class: str = "leaderboards.jobs.EvalWorker",
        env: dict[str, str] | None = None,
    ):
        self.log_path = log_path
        self.queues = queues
        self.worker_class = worker_class
        self.env = env or {}
        self.process: subprocess.Popen | None = None
        self.log = None

    def start(self) -> WorkerProcess:
        from django.conf import settings

        env = dict(os.environ)
        env.update(
            DJANGO_SETTINGS_MODULE="dynatask_site.settings.test",
            DATABASE_URL=_database_url(),
            REDIS_URL=settings.RQ_QUEUES[self.queues[0]].get("URL", settings.REDIS_URL),
            PYTHONUNBUFFERED="1",
        )
        env.update(self.env)
        self.log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "rqworker", *self.queues]
            + ["--worker-class", self.worker_class],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def signal(self, number: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, number)

    def kill(self) -> None:
        """kill -9 the worker, then its job horse (RQ puts the horse in its own group)."""
        if self.process is None or self.process.poll() is not None:
            return
        horses = psutil.Process(self.process.pid).children(recursive=True)
        self.signal(signal.SIGKILL)  # first the worker: it must not see its horse die
        for horse in horses:
            with contextlib.suppress(psutil.NoSuchProcess):
                horse.kill()
        self.process.wait(timeout=10)
        psutil.wait_procs(horses, timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.signal(signal.SIGTERM)  # a warm shutdown: the horse ends its job
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.log is not None:
            self.log.close()
            self.log = None


class CronProcess(WorkerProcess):
    """``manage.py run_cron``: the periodic jobs (the live watchdog, the counters' flush)."""

    def __init__(self, log_path: Path, env: dict[str, str] | None = None):
        super().__init__(log_path, queues=("live",), env=env)

    def start(self) -> CronProcess:
        from django.conf import settings

        env = dict(os.environ)
        env.update(
            DJANGO_SETTINGS_MODULE="dynatask_site.settings.test",
            DATABASE_URL=_database_url(),
            REDIS_URL=settings.RQ_QUEUES["live"].get("URL", settings.REDIS_URL),
            PYTHONUNBUFFERED="1",
        )
        env.update(self.env)
        self.log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "run_cron"],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self


def wait_for(predicate, seconds: float, what: str, log_path: Path | None = None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    tail = log_path.read_text(errors="replace")[-3000:] if log_path else ""
    raise AssertionError(f"timed out after {seconds}s waiting for {what}\n{tail}")
