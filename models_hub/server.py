"""A model server for Python handlers over the native ``dynatask`` protocol.

Contract: ``make_server(handler, host, port)`` returns a started-on-demand threaded HTTP/1.1
server (keep-alive, so clients reuse connections) for any object with
``predict(batch: list[dict]) -> list[dict]``:

- ``POST /`` with ``{"task": "optional", "inputs": [{...}, ...]}`` answers
  ``{"outputs": [...], "model_version": ...}``. A body that is not such JSON answers 400, a body
  over ``max_body_bytes`` 413, a missing Content-Length 411, all with ``{"error": ...}``;
- the inputs are passed to ``predict`` in slices of the handler's ``batch_size`` attribute
  (when it has one), so a large request never exceeds what the handler can take at once;
- a handler that raises, or returns the wrong number of outputs, answers 500 with a generic
  error (the details go to this process's log, not to the caller);
- ``GET /health`` answers ``{"status": "ok", "model_version": ..., "memory_gb": <RSS in GiB>}``;
- a handler with a ``chat(messages, options)`` method is also served over the OpenAI-compatible
  ``POST /v1/chat/completions``, streaming included (``models_hub.chat_serving``), with
  ``GET /v1/models``; ``GET /`` then answers 200 (the health probe of ``openai_chat`` models).

``serve("dotted.path:Class", host, port)`` imports, instantiates and serves a handler until
interrupted. Access logging goes to the ``models_hub.server`` logger at DEBUG level.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import psutil

from core.bounded_json import JSONTooDeep, json_loads_bounded
from models_hub import chat_serving

logger = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 10_000_000
DEFAULT_MAX_INPUTS = 10_000
IDLE_CONNECTION_SECONDS = 60
GIB = 1024**3


class PredictHandler(Protocol):
    """What the server needs from a handler (``model_version``/``batch_size`` optional)."""

    def predict(self, batch: list[dict]) -> list[dict]:
        """Return one output dict per input dict, in order."""


class RequestError(Exception):
    """A request the server refuses, with the status to answer."""

    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def memory_gb() -> float:
    """Return this process's resident memory in GiB."""
    return round(psutil.Process().memory_info().rss / GIB, 4)


def parse_inputs(raw: bytes, max_inputs: int) -> list[dict[str, Any]]:
    """Return the ``inputs`` of a request body, or raise ``RequestError`` (400)."""
    try:
        body = json_loads_bounded(raw)
    except JSONTooDeep as error:
        raise RequestError(HTTPStatus.BAD_REQUEST, f"the body is JSON {error}")
    except json.JSONDecodeError as error:
        reason = error.msg.removesuffix(" at")  # "Unterminated string starting at"
        where = f"line {error.lineno}, column {error.colno}"
        raise RequestError(
            HTTPStatus.BAD_REQUEST, f"the body is not valid JSON: {reason} at {where}"
        )
    except (ValueError, UnicodeDecodeError):
        raise RequestError(HTTPStatus.BAD_REQUEST, "the body is not valid JSON")
    if not isinstance(body, dict):
        raise RequestError(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
    inputs = body.get("inputs")
    if not isinstance(inputs, list):
        raise RequestError(HTTPStatus.BAD_REQUEST, '"inputs" must be a list')
    if len(inputs) > max_inputs:
        raise RequestError(HTTPStatus.BAD_REQUEST, f'"inputs" has more than {max_inputs} items')
    for index, item in enumerate(inputs):
        if not isinstance(item, dict):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"inputs[{index}] must be an object")
    task = body.get("task")
    if task is not None and not isinstance(task, str):
        raise RequestError(HTTPStatus.BAD_REQUEST, '"task" must be a string')
    return inputs


class ModelServer(ThreadingHTTPServer):
    """A threaded HTTP server bound to one predict handler."""

    daemon_threads = True
    # Idle keep-alive threads must not hold up shutdown.
    block_on_close = False

    def __init__(
        self,
        address: tuple[str, int],
        handler: PredictHandler,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_inputs: int = DEFAULT_MAX_INPUTS,
    ):
        self.handler = handler
        self.max_body_bytes = max_body_bytes
        self.max_inputs = max_inputs
        super().__init__(address, ModelRequestHandler)

    @property
    def url(self) -> str:
        """Return ``http://host:port/`` of the bound socket."""
        host, port = self.server_address[:2]
        if ":" in str(host):
            host = f"[{host}]"
        return f"http://{host}:{port}/"

    @property
    def model_version(self) -> str | None:
        """Return the handler's ``model_version`` attribute, if any."""
        version = getattr(self.handler, "model_version", None)
        return str(version) if version is not None else None

    def run_predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Call the handler in slices of its ``batch_size`` and check the output count."""
        batch_size = getattr(self.handler, "batch_size", None) or len(inputs) or 1
        outputs: list[dict[str, Any]] = []
        for first in range(0, len(inputs), batch_size):
            batch = inputs[first : first + batch_size]
            result = list(self.handler.predict(batch))
            if len(result) != len(batch):
                raise ValueError(f"the handler returned {len(result)} outputs for {len(batch)}")
            outputs.extend(result)
        return outputs

    def start_in_thread(self) -> threading.Thread:
        """Serve in a daemon thread (tests, embedding); stop with ``shutdown()``."""
        thread = threading.Thread(target=self.serve_forever, name="model-server", daemon=True)
        thread.start()
        return thread


class ModelRequestHandler(BaseHTTPRequestHandler):
    """Answers the native protocol for ``self.server.handler``."""

    protocol_version = "HTTP/1.1"
    server_version = "dynatask-model-server/1"
    # Headers and body go out in separate writes; without TCP_NODELAY the body waits for the
    # client's delayed ACK (~40 ms) on every reused keep-alive connection.
    disable_nagle_algorithm = True
    timeout = IDLE_CONNECTION_SECONDS
    server: ModelServer

    def log_message(self, format: str, *args: Any) -> None:
        """Log access lines at DEBUG instead of writing every request to stderr."""
        logger.debug("%s %s", self.address_string(), format % args)

    def send_json(self, status: HTTPStatus | int, payload: Mapping[str, Any]) -> None:
        """Send ``payload`` as a JSON response with a Content-Length (keep-alive)."""
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        """Answer ``/health`` (and, for a chat handler, ``/`` and ``/v1/models``); else 404."""
        path = self.path.split("?", 1)[0]
        if chat_serving.can_chat(self.server.handler) and path in ("/", ""):
            self.send_json(
                HTTPStatus.OK, {"status": "ok", "model_version": self.server.model_version}
            )
            return
        if chat_serving.can_chat(self.server.handler) and path in chat_serving.MODELS_PATHS:
            self.send_json(HTTPStatus.OK, chat_serving.models_list(self.server.handler))
            return
        if path.rstrip("/") == "/health":
            self.send_json(
                HTTPStatus.OK,
                {
                    "status": "ok",
                    "model_version": self.server.model_version,
                    "memory_gb": memory_gb(),
                },
            )
            return
        self.send_json(HTTPStatus.NOT_FOUND, {"error": "not found"})

    def do_POST(self) -> None:
        """Answer a prediction request (see the module docstring)."""
        path = self.path.split("?", 1)[0]
        if path in chat_serving.CHAT_PATHS and chat_serving.can_chat(self.server.handler):
            self.answer_chat()
            return
        if path not in ("/", ""):
            self.discard_body()
            self.send_json(HTTPStatus.NOT_FOUND, {"error": "not found"})
            return
        try:
            inputs = parse_inputs(self.read_body(), self.server.max_inputs)
        except RequestError as error:
            self.send_json(error.status, {"error": error.message})
            return
        try:
            outputs = self.server.run_predict(inputs)
            payload = {"outputs": outputs, "model_version": self.server.model_version}
            json.dumps(payload)  # an unserialisable output is the handler's error, not a 200
        except Exception:
            logger.exception("model handler failed on a batch of %d inputs", len(inputs))
            self.send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "the model failed"})
            return
        self.send_json(HTTPStatus.OK, payload)

    def answer_chat(self) -> None:
        """Answer an OpenAI-compatible chat-completions request (``chat_serving``)."""
        try:
            raw = self.read_body()
        except RequestError as error:
            self.send_json(error.status, {"error": {"message": error.message}})
            return
        try:
            chat_serving.answer_chat(self, self.server.handler, raw)
        except Exception:
            logger.exception("chat handler failed")
            self.close_connection = True

    def read_body(self) -> bytes:
        """Read the request body or raise ``RequestError`` (411, 413, 400)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise RequestError(HTTPStatus.LENGTH_REQUIRED, "chunked bodies are not supported")
        length_header = self.headers.get("Content-Length")
        if length_header is None or not length_header.isdigit():
            self.close_connection = True
            raise RequestError(HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required")
        length = int(length_header)
        if length > self.server.max_body_bytes:
            # The unread body would be taken for the next request: end this connection.
            self.close_connection = True
            raise RequestError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"the body is over {self.server.max_body_bytes} bytes",
            )
        return self.rfile.read(length)

    def discard_body(self) -> None:
        """Consume a small body so the connection stays usable, else close it."""
        length_header = self.headers.get("Content-Length", "0")
        if length_header.isdigit() and int(length_header) <= self.server.max_body_bytes:
            self.rfile.read(int(length_header))
        else:
            self.close_connection = True

    def do_PUT(self) -> None:
        """Refuse other methods."""
        self.discard_body()
        self.send_json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "method not allowed"})

    do_DELETE = do_PUT
    do_PATCH = do_PUT


def make_server(
    handler: PredictHandler | type,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_inputs: int = DEFAULT_MAX_INPUTS,
) -> ModelServer:
    """Bind a ``ModelServer`` for ``handler`` (an instance, or a class to instantiate).

    Port 0 picks a free port; ``server.server_address`` / ``server.url`` tell which.
    """
    if isinstance(handler, type):
        handler = handler()
    if not callable(getattr(handler, "predict", None)):
        raise TypeError("the handler has no predict(batch) method")
    return ModelServer((host, port), handler, max_body_bytes=max_body_bytes, max_inputs=max_inputs)


def load_handler(handler_path: str, **handler_kwargs: Any) -> PredictHandler:
    """Import ``package.module:Class`` and return an instance built with ``handler_kwargs``."""
    module_name, _, attribute = handler_path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{handler_path!r} is not of the form 'package.module:Class'")
    target = getattr(importlib.import_module(module_name), attribute)
    return target(**handler_kwargs) if isinstance(target, type) else target


def serve(
    handler_path: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    handler_kwargs: Mapping[str, Any] | None = None,
    ready=None,
) -> None:
    """Serve the handler at ``handler_path`` until Ctrl-C; ``ready(server)`` is called first."""
    server = make_server(load_handler(handler_path, **dict(handler_kwargs or {})), host, port)
    try:
        if ready is not None:
            ready(server)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
