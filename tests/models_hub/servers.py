"""Small real HTTP servers on 127.0.0.1 for the model client tests.

``running(server)`` serves in a daemon thread and shuts the server down afterwards. Every
server records what it received (``requests``), counts requests per path and tracks the most
requests it ever had in flight at once (``max_in_flight``).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.adversarial_json import adversarial_json

HUGE_BYTES = 2_000_000


class RecordingServer(ThreadingHTTPServer):
    """A threaded HTTP/1.1 server that records requests and concurrency."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, handler_class: type[BaseHTTPRequestHandler], **settings: Any):
        self.settings = settings
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.hits: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        super().__init__(("127.0.0.1", 0), handler_class)

    @property
    def url(self) -> str:
        """Return the base URL, ending in a slash."""
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def handle_error(self, request, client_address) -> None:
        """Stay quiet when a client gives up early (timeouts and size caps do that on purpose)."""

    def enter(self, record: dict[str, Any]) -> int:
        """Record a request; return how many requests to this path came before."""
        with self.lock:
            self.requests.append(record)
            seen = self.hits[record["path"]]
            self.hits[record["path"]] += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return seen

    def leave(self) -> None:
        """Mark a request as answered."""
        with self.lock:
            self.in_flight -= 1


@contextlib.contextmanager
def running(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    """Serve ``server`` in a thread for the duration of the block."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class JSONHandler(BaseHTTPRequestHandler):
    """Base handler: keep-alive, quiet, JSON helpers, request recording."""

    protocol_version = "HTTP/1.1"
    server: RecordingServer

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    def reply(self, status: int, payload: Any = None, raw: bytes | None = None, **headers) -> None:
        """Send JSON (or raw bytes) with a Content-Length."""
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def read_json(self) -> Any:
        """Read and parse the request body."""
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw else None

    def begin(self) -> tuple[Any, int]:
        """Read the body and record the request; return (body, earlier hits on this path)."""
        body = self.read_json()
        seen = self.server.enter(
            {
                "path": self.path,
                "method": self.command,
                "headers": {**dict(self.headers), "X-Client-Port": str(self.client_address[1])},
                "body": body,
            }
        )
        return body, seen


def adversarial_body(path: str) -> bytes:
    """The body of ``/adversarial-<name>-<size>``: ``adversarial_json(name, size)``."""
    name, _, size = path.removeprefix("/adversarial-").rpartition("-")
    return adversarial_json(name, int(size))


def sentiment_output(label: str = "positive") -> dict[str, Any]:
    """Return a valid output of the Dynabench sentiment config."""
    probabilities = {"negative": 0.1, "positive": 0.1, "neutral": 0.1}
    probabilities[label] = 0.8
    return {"label": label, "prob": probabilities}


class MisbehavingHandler(JSONHandler):
    """A dynatask-protocol server whose path picks the behaviour (see ``do_POST``)."""

    def do_GET(self) -> None:
        """``/health`` answers; ``/health-500`` fails; anything else is 404."""
        _body, _seen = self.begin()
        try:
            if self.path == "/ok/health":
                self.reply(200, {"status": "ok", "model_version": "v-test", "memory_gb": 0.5})
            elif self.path == "/down/health":
                self.reply(503, {"error": "warming up"})
            elif self.path.startswith("/adversarial-") and self.path.endswith("/health"):
                # /adversarial-<name>-<size>/health: tests.adversarial_json's text <name>.
                self.reply(200, raw=adversarial_body(self.path.removesuffix("/health")))
            else:
                self.reply(404, {"error": "not found"})
        finally:
            self.server.leave()

    def do_POST(self) -> None:
        body, seen = self.begin()
        try:
            self.answer(body, seen)
        finally:
            self.server.leave()

    def answer(self, body: Any, seen: int) -> None:
        """Answer according to the path."""
        count = len(body["inputs"]) if isinstance(body, dict) else 0
        good = {"outputs": [sentiment_output() for _ in range(count)], "model_version": "v1"}
        token_header = self.headers.get("Authorization", "")
        path = self.path
        if path == "/ok":
            self.reply(200, good)
        elif path == "/slow":
            time.sleep(self.server.settings.get("sleep_seconds", 1.0))
            self.reply(200, good)
        elif path == "/trickle":
            # Promises a body, then sends a byte every 0.1 s: no single read ever times out.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(200):  # 20 s at most
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)
        elif path == "/500":
            self.reply(500, {"error": "boom"})
        elif path == "/503":
            self.reply(503, {"error": "overloaded"})
        elif path == "/flaky":
            if seen < self.server.settings.get("failures", 2):
                self.reply(503, {"error": "try again"})
            else:
                self.reply(200, good)
        elif path == "/400":
            self.reply(400, {"error": "bad request"})
        elif path == "/invalid-json":
            self.reply(200, raw=b'{"outputs": [oops')
        elif path == "/nan":
            # Python's json writes NaN, which is not JSON (RFC 8259) and no database stores.
            outputs = [{**sentiment_output(), "score": float("nan")} for _ in range(count)]
            self.reply(200, raw=json.dumps({"outputs": outputs}).encode())
        elif path == "/wrong-length":
            self.reply(200, {"outputs": [sentiment_output() for _ in range(count + 1)]})
        elif path == "/unknown-label":
            outputs = [sentiment_output() for _ in range(count)]
            outputs[-1] = {**outputs[-1], "label": "ecstatic"}
            self.reply(200, {"outputs": outputs})
        elif path == "/bad-prob":
            outputs = [sentiment_output() for _ in range(count)]
            outputs[-1]["prob"] = {"negative": 0.2, "positive": 0.3, "neutral": 0.2}
            self.reply(200, {"outputs": outputs})
        elif path == "/huge":
            self.reply(200, raw=b'{"outputs": ["' + b"x" * HUGE_BYTES + b'"]}')
        elif path == "/huge-unsized":
            # No Content-Length: the cap must be enforced while streaming.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.wfile.write(b'{"outputs": ["')
                for _ in range(HUGE_BYTES // 65536 + 1):
                    self.wfile.write(b"x" * 65536)
                self.wfile.write(b'"]}')
        elif path.startswith("/adversarial-"):
            self.reply(200, raw=adversarial_body(path))
        elif path.startswith("/deep-"):
            # Each output carries a "trace" of arrays nested N levels: the body is N + 3 deep.
            depth = int(path.removeprefix("/deep-"))
            outputs = [{**sentiment_output(), "trace": "TRACE"} for _ in range(count)]
            trace = "[" * depth + "]" * depth
            body = json.dumps({"outputs": outputs}).replace('"TRACE"', trace)
            self.reply(200, raw=body.encode())
        elif path == "/redirect":
            self.reply(302, {"moved": True}, Location="http://169.254.169.254/latest/meta-data/")
        elif path == "/echo-token-400":
            self.reply(400, {"error": f"bad token {token_header}"})
        elif path == "/echo-token-500":
            self.reply(500, {"error": f"crashed on {token_header}"})
        elif path == "/echo-token-invalid-json":
            self.reply(200, raw=f"not json: {token_header}".encode())
        elif path == "/echo-token-label":
            outputs = [sentiment_output() for _ in range(count)]
            outputs[-1] = {**outputs[-1], "label": token_header}
            self.reply(200, {"outputs": outputs, "model_version": token_header})
        elif path == "/echo-token-ok":
            self.reply(200, {**good, "model_version": token_header, "debug": token_header})
        else:
            self.reply(404, {"error": "unknown path"})


class OpenAIHandler(JSONHandler):
    """An OpenAI-compatible chat server: answers from keywords of the prompt."""

    def do_POST(self) -> None:
        body, _seen = self.begin()
        try:
            if self.path != "/v1/chat/completions":
                self.reply(404, {"error": "not found"})
                return
            time.sleep(self.server.settings.get("delay_seconds", 0.0))
            prompt = body["messages"][-1]["content"]
            if "garbage" in prompt:
                text = "I like bananas."
            elif "happy" in prompt:
                text = " Positive. The statement sounds happy. "
            else:
                text = "The sentiment is NEGATIVE (not positive)."
            self.reply(
                200,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                },
            )
        finally:
            self.server.leave()


class HFHandler(JSONHandler):
    """A Hugging Face-style text-classification server with LABEL_n labels."""

    def scores(self, text: str) -> list[dict[str, Any]]:
        """Return the scores of one text (positive when it says "good")."""
        if "good" in text:
            return [
                {"label": "LABEL_2", "score": 0.7},
                {"label": "LABEL_1", "score": 0.2},
                {"label": "LABEL_0", "score": 0.1},
            ]
        return [
            {"label": "LABEL_0", "score": 0.6},
            {"label": "LABEL_1", "score": 0.3},
            {"label": "LABEL_2", "score": 0.1},
        ]

    def do_POST(self) -> None:
        body, _seen = self.begin()
        try:
            inputs = body["inputs"]
            if isinstance(inputs, str):
                # The Inference API nests even a single result.
                self.reply(200, [self.scores(inputs)])
            else:
                self.reply(200, [self.scores(text) for text in inputs])
        finally:
            self.server.leave()


class ReportingHandler(JSONHandler):
    """A dynatask-protocol sentiment model whose ``/health`` answers the server's
    ``health_body`` bytes as they are (``RecordingServer(ReportingHandler, health_body=...)``):
    any figure it likes, including JSON that Python reads as infinity (``1e400``).
    ``POST /`` answers every input with a valid sentiment output."""

    def do_GET(self) -> None:
        self.begin()
        try:
            if self.path.rstrip("/").endswith("/health"):
                self.reply(200, raw=self.server.settings["health_body"])
            else:
                self.reply(404, {"error": "not found"})
        finally:
            self.server.leave()

    def do_POST(self) -> None:
        body, _seen = self.begin()
        try:
            inputs = body.get("inputs", []) if isinstance(body, dict) else []
            outputs = [sentiment_output(self.label_of(item)) for item in inputs]
            self.reply(200, {"outputs": outputs, "model_version": "reporting-1"})
        finally:
            self.server.leave()

    def label_of(self, item: dict) -> str:
        """Answer by keyword on the first ``right`` (server setting, default all) of every
        seven examples, by number ("... day number 12."); "neutral" on the others."""
        statement = str(item.get("statement", "")).lower()
        number = int("".join(ch for ch in statement.rsplit(" ", 1)[-1] if ch.isdigit()) or 0)
        if number % 7 >= self.server.settings.get("right", 7):
            return "neutral" if "plain" not in statement else "positive"
        if "good" in statement or "love" in statement:
            return "positive"
        if "bad" in statement or "hate" in statement:
            return "negative"
        return "neutral"
