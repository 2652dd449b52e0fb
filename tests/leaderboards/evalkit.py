"""Shared helpers of the dataset and evaluation tests: tiny model handlers on real loopback
servers, dataset builders and a burst RQ worker (``conftest.py`` imports the fixtures)."""

from __future__ import annotations

import contextlib
import io
import json
import threading

import django_rq
import pytest
from rq import SimpleWorker

from leaderboards.services.client import use_client
from leaderboards.services.datasets import dataset_import
from models_hub.client import ModelClient
from models_hub.models import RegisteredModel
from models_hub.server import ModelRequestHandler, make_server
from models_hub.transport import RetryPolicy
from tests.factories import TaskFactory, UserFactory

FAST_RETRY = RetryPolicy(max_attempts=2, backoff_seconds=0.01, backoff_max_seconds=0.02)
SENTIMENT_LABELS = ("negative", "positive", "neutral")


def sentiment_label(text: str) -> str:
    lowered = text.lower()
    if "good" in lowered or "love" in lowered:
        return "positive"
    if "bad" in lowered or "hate" in lowered:
        return "negative"
    return "neutral"


class KeywordSentiment:
    """A deterministic sentiment handler that counts calls and the uids it saw.

    ``fail_after``: after that many successful batches every call raises (the server
    answers 500, a terminal error for an evaluation). ``bad_label``: answer a label that is
    not in the config (a bad response).
    """

    model_version = "keyword-1"

    def __init__(self, *, fail_after: int | None = None, bad_label: bool = False):
        self.lock = threading.Lock()
        self.calls = 0
        self.uids: list[str] = []
        self.fail_after = fail_after
        self.bad_label = bad_label

    def predict(self, batch: list[dict]) -> list[dict]:
        with self.lock:
            if self.fail_after is not None and self.calls >= self.fail_after:
                raise RuntimeError("the model crashed")
            self.calls += 1
            self.uids.extend(item["uid"] for item in batch)
        outputs = []
        for item in batch:
            label = "banana" if self.bad_label else sentiment_label(item.get("statement", ""))
            prob = {name: (0.8 if name == label else 0.1) for name in SENTIMENT_LABELS}
            if self.bad_label:
                prob = {"negative": 0.2, "positive": 0.4, "neutral": 0.4}
            outputs.append({"label": label, "prob": prob})
        return outputs


@contextlib.contextmanager
def serving(handler):
    server = make_server(handler, "127.0.0.1", 0)
    server.start_in_thread()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


class TricklingSentiment(KeywordSentiment):
    """``KeywordSentiment`` whose answers ``trickling`` sends slowly: each batch's body takes
    ``seconds`` (``slow_uids``: only batches holding one of them), a few bytes at a time.
    ``events`` (shared between handlers) records ``(name, uid)`` as batches come in."""

    def __init__(self, name: str, seconds: float, *, events=None, slow_uids=None, **kwargs):
        super().__init__(**kwargs)
        self.name = name
        self.seconds = seconds
        self.events = events if events is not None else []
        self.slow_uids = slow_uids
        self.local = threading.local()
        self.stopping = threading.Event()

    def predict(self, batch: list[dict]) -> list[dict]:
        uids = [item["uid"] for item in batch]
        with self.lock:
            self.events.extend((self.name, uid) for uid in uids)
        slow = self.slow_uids is None or bool(set(uids) & set(self.slow_uids))
        self.local.seconds = self.seconds if slow else 0.0
        return super().predict(batch)


class TrickleRequestHandler(ModelRequestHandler):
    """The model server's handler, but a prediction's body goes out over the seconds its
    handler chose, in ten pieces (the Content-Length is promised at once)."""

    def send_json(self, status, payload) -> None:
        handler = self.server.handler
        seconds = getattr(handler.local, "seconds", 0.0) if self.command == "POST" else 0.0
        handler.local.seconds = 0.0
        if not seconds or status != 200:
            super().send_json(status, payload)
            return
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        step = len(data) // 10 + 1
        with contextlib.suppress(OSError):
            for first in range(0, len(data), step):
                if handler.stopping.wait(seconds / 10):
                    return
                self.wfile.write(data[first : first + step])
                self.wfile.flush()


@contextlib.contextmanager
def trickling(handler: TricklingSentiment):
    """Serve ``handler`` with trickled answers on a loopback port."""
    server = make_server(handler, "127.0.0.1", 0)
    server.RequestHandlerClass = TrickleRequestHandler
    server.start_in_thread()
    try:
        yield server
    finally:
        handler.stopping.set()
        server.shutdown()
        server.server_close()


def sentiment_prob(label: str) -> dict:
    """Return the probabilities a sentiment model gives when it answers ``label``."""
    return {name: (0.8 if name == label else 0.1) for name in SENTIMENT_LABELS}


def sentiment_rows(count: int, *, prefix: str = "u") -> list[dict]:
    words = ("good", "bad", "plain", "love", "hate")
    return [
        {
            "uid": f"{prefix}{index}",
            "statement": f"This is a {words[index % 5]} day number {index}.",
            "context": "Describe your day.",
            "label": ("positive", "negative", "neutral", "positive", "neutral")[index % 5],
            "tags": ["even" if index % 2 == 0 else "odd"],
        }
        for index in range(count)
    ]


def jsonl(rows: list[dict]) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(row) + "\n" for row in rows).encode())


def make_model(task, owner, url: str, **fields) -> RegisteredModel:
    settings = {"batch_size": 4, "max_concurrency": 2, "read_timeout": 5.0}
    settings.update(fields)
    return RegisteredModel.objects.create(
        task=task,
        owner=owner,
        name=settings.pop("name", "keyword"),
        protocol="dynatask",
        endpoint_url=url,
        **settings,
    )


def run_worker() -> None:
    """Run every queued eval job in this process (RQ SimpleWorker, burst mode)."""
    queue = django_rq.get_queue("eval")
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


@pytest.fixture
def fast_client():
    use_client(ModelClient(retry=FAST_RETRY), FAST_RETRY)
    yield
    use_client(None)


@pytest.fixture
def eval_owner(db):
    return UserFactory(username="owner", is_staff=True)


@pytest.fixture
def eval_task(db, eval_owner):
    return TaskFactory(code="sentiment", owners=[eval_owner])


def import_sentiment(task, count: int, *, slug: str = "test", evaluate: bool = True, **kwargs):
    return dataset_import(
        task,
        jsonl(sentiment_rows(count)),
        name=kwargs.pop("name", "Test set"),
        slug=slug,
        filename="rows.jsonl",
        evaluate=evaluate,
        **kwargs,
    )
