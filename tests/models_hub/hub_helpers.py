"""Shared helpers of the models-hub registry, job, view and seed tests.

A real ``models_hub.server`` on 127.0.0.1 port 0 answers the sentiment config; no mocks.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

from models_hub.server import ModelServer, make_server

SECRET_TOKEN = "tok-SECRET-do-not-show-9f8e7d"


class ConstantSentiment:
    """A handler that answers "positive" at once, with a version."""

    model_version = "const-1"

    def predict(self, batch: list[dict]) -> list[dict]:
        """Return one fixed sentiment output per input."""
        return [
            {"label": "positive", "prob": {"negative": 0.1, "positive": 0.8, "neutral": 0.1}}
            for _ in batch
        ]


@contextlib.contextmanager
def model_server() -> Iterator[ModelServer]:
    """Serve ``ConstantSentiment`` in a daemon thread for the duration of the block."""
    server = make_server(ConstantSentiment(), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def dead_url() -> str:
    """Return a loopback URL on which nothing listens (a port just released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"
