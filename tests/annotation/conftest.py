"""Fixtures of the create/validate tests: real loopback model servers, real RQ jobs."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time

import django_rq
import pytest
from rq.timeouts import TimerDeathPenalty
from rq.worker import SimpleWorker

from annotation.campaigns.actors import Actor
from models_hub import services as hub_services
from models_hub.server import ModelServer
from tests.factories import ContextFactory, TaskFactory, UserFactory

POSITIVE = "I absolutely loved this wonderful, delicious meal."


def open_form(client, code: str, query: str = "") -> dict:
    response = client.get(f"/tasks/{code}/create{query}")
    assert response.status_code == 200
    html = response.content.decode()
    context_id = re.search(r'name="context_id" value="(\d+)"', html)
    started_at = re.search(r'name="started_at" value="([^"]+)"', html).group(1)
    goal = re.search(r'data-goal-label="([^"]+)"', html)
    return {
        "html": html,
        "context_id": context_id.group(1) if context_id else "",
        "started_at": started_at,
        "goal": goal.group(1) if goal else "",
    }


def submit(client, code: str, **fields):
    page = open_form(client, code)
    data = {"context_id": page["context_id"], "started_at": page["started_at"], **fields}
    return client.post(f"/tasks/{code}/create", data)


class ClosableModelServer(ModelServer):
    """A ModelServer whose ``close_connections()`` also drops kept-alive client connections.

    Stopping a server only closes its listening socket; the client's pooled keep-alive
    connections would go on being served by their threads. A "model down" test must cut them.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.open_sockets: set[socket.socket] = set()

    def get_request(self):
        request, address = super().get_request()
        self.open_sockets.add(request)
        return request, address

    def close_connections(self) -> None:
        for sock in list(self.open_sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        self.open_sockets.clear()


class ServerHandle:
    """A model server on a free loopback port, started in a thread."""

    def __init__(self, handler):
        handler = handler() if isinstance(handler, type) else handler
        self.server = ClosableModelServer(("127.0.0.1", 0), handler)
        self.thread = self.server.start_in_thread()
        self.url = self.server.url
        self.running = True

    def stop(self) -> None:
        if self.running:
            self.server.shutdown()
            self.server.server_close()
            self.server.close_connections()
            self.running = False


@pytest.fixture
def model_server_factory():
    handles: list[ServerHandle] = []

    def start(handler) -> ServerHandle:
        handle = ServerHandle(handler)
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        handle.stop()


@pytest.fixture
def live_queue(redis_connection):
    return django_rq.get_queue("live")


def run_jobs(queue_name: str = "live") -> None:
    """Run every queued job of ``queue_name`` in this process (a burst SimpleWorker, the
    live queue's SimpleWorker)."""
    queue = django_rq.get_queue(queue_name)
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


def flush_counters() -> None:
    """Apply the buffered stats counters to their rows, as the periodic flush job does."""
    from annotation.stats.buffer import counters_flush

    counters_flush()


def snapshot(task):
    """All cached counters of a task, comparable across a recompute."""
    from annotation.models import RoundStats, WorkerStats
    from annotation.stats.counters import CONTEXT_FIELDS, ROUND_FIELDS, WORKER_FIELDS
    from tasks.models import Context

    recounted = [field for field in CONTEXT_FIELDS if field != "times_served"]
    rounds = {
        row.round_id: tuple(getattr(row, field) for field in ROUND_FIELDS)
        for row in RoundStats.objects.filter(round__task=task)
        if any(getattr(row, field) for field in ROUND_FIELDS)
    }
    workers = {
        (row.round_id, row.user_id, row.campaign_worker_id): tuple(
            getattr(row, field) for field in WORKER_FIELDS
        )
        for row in WorkerStats.objects.filter(task=task)
        if any(getattr(row, field) for field in WORKER_FIELDS)
    }
    contexts = {
        row.pk: tuple(getattr(row, field) for field in recounted)
        for row in Context.objects.filter(task=task)
    }
    return rounds, workers, contexts


@pytest.fixture
def run_live_jobs(live_queue):
    return run_jobs


def put_in_loop(task, owner, url: str, name: str = "demo", **fields):
    # No trial request (tests/models_hub/test_trial.py tests it): these tests count and time
    # the live calls a model receives.
    fields.setdefault("trial", False)
    model = hub_services.model_register(
        task=task, owner=owner, name=name, endpoint_url=url, read_timeout=5.0, **fields
    )
    round_ = task.rounds.get(number=1)
    current = list(round_.in_loop_models.all())
    hub_services.model_set_in_loop(round_, [*current, model], owner)
    return model


@pytest.fixture
def sentiment_task(db, owner):
    task = TaskFactory(code="sentiment", config_name="sentiment", owners=[owner])
    ContextFactory(task=task, data={"context": "Describe a meal you ate at a new restaurant."})
    return task


@pytest.fixture
def qa_task(db, owner):
    task = TaskFactory(code="qa", config_name="qa", owners=[owner])
    ContextFactory(
        task=task,
        data={
            "context": "The lighthouse at Carrow Point was built in 1872 from granite. "
            "Its lamp was first lit by a keeper named Elias Brandt."
        },
    )
    return task


@pytest.fixture
def sentiment_model(sentiment_task, owner, model_server_factory, redis_connection):
    from models_hub.demo.sentiment import SentimentHandler

    return serve_in_loop(sentiment_task, owner, model_server_factory, SentimentHandler, "vader")


def serve_in_loop(task, owner, model_server_factory, handler, name: str):
    """Serve ``handler`` on a loopback model server and put it in the loop of round 1; the
    model carries its ``server_handle``."""
    handle = model_server_factory(handler)
    model = put_in_loop(task, owner, handle.url, name=name)
    model.server_handle = handle
    return model


@pytest.fixture
def worker(db):
    return UserFactory(username="worker")


@pytest.fixture
def worker_actor(worker):
    return Actor(user=worker)


@pytest.fixture
def validators(db):
    return [UserFactory(username=f"validator{n}") for n in range(6)]


class ThreadLiveWorker(SimpleWorker):
    """The live queue's worker (a SimpleWorker) run in a thread: no signal handlers,
    timer-based timeouts."""

    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self):
        pass


class BackgroundWorker:
    """Run an RQ queue (``live`` by default) in a thread, like ``rqworker <queue>`` with RQ's
    SimpleWorker.

    Needs committed data (``transactional_db`` or ``live_server``): the thread has its own
    database connection, closed when the worker stops.
    """

    def __init__(self, queue_name: str = "live"):
        self.queue = django_rq.get_queue(queue_name)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"rq-{queue_name}", daemon=True)

    def _run(self) -> None:
        from django.db import connection

        worker = ThreadLiveWorker([self.queue], connection=self.queue.connection)
        try:
            while not self.stop_event.is_set():
                worker.work(burst=True, logging_level="WARNING")
                time.sleep(0.01)
        finally:
            connection.close()

    def start(self) -> BackgroundWorker:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=10)


@pytest.fixture
def background_worker(redis_connection):
    worker = BackgroundWorker().start()
    yield worker
    worker.stop()
