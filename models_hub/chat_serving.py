"""The model server's OpenAI-compatible chat endpoint, for handlers that can chat.

A handler with ``chat(messages: list[dict], options: dict) -> Iterable[str]`` (the pieces of
its reply, in order; see ``models_hub.demo.chat``) is served, besides the native protocol, at
``POST /v1/chat/completions`` (and ``/chat/completions``) the way vLLM, llama.cpp's server and
Ollama serve it:

- ``{"model", "messages": [{"role", "content"}...], "stream"?, "max_tokens"?,
  "stream_options": {"include_usage"}?}``; other keys (temperature...) are accepted and
  ignored. A bad body answers 400 ``{"error": {"message", "type"}}``;
- without ``stream``: one ``chat.completion`` object with ``usage``;
- with ``stream: true``: ``text/event-stream`` in chunked transfer encoding, one
  ``chat.completion.chunk`` per piece (the first carries ``role``), a last chunk with the
  ``finish_reason`` (``stop``, or ``length`` when ``max_tokens`` cut it), a usage chunk when
  asked, then ``data: [DONE]``. The connection stays open for the next request.

Token counts are the handler's pieces (completion) and the whitespace-separated words of the
messages (prompt): a demo's approximation, stated as such in ``docs/demo-models.md``.
``GET /v1/models`` lists the one model.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from core.bounded_json import JSONTooDeep, json_loads_bounded

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
MODELS_PATHS = ("/v1/models", "/models")
MAX_MESSAGES = 500
ROLES = ("system", "user", "assistant")


class ChatRequestError(Exception):
    """A chat request the server refuses (400)."""


def can_chat(handler: Any) -> bool:
    return callable(getattr(handler, "chat", None))


def model_name(handler: Any) -> str:
    return str(getattr(handler, "model_version", None) or type(handler).__name__)


def parse_chat_request(raw: bytes) -> dict[str, Any]:
    """Return the checked request body, or raise ``ChatRequestError``."""
    try:
        body = json_loads_bounded(raw)
    except (JSONTooDeep, ValueError, UnicodeDecodeError) as error:
        raise ChatRequestError(f"the body is not valid JSON: {error}")
    if not isinstance(body, dict):
        raise ChatRequestError("the body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or len(messages) > MAX_MESSAGES:
        raise ChatRequestError(f'"messages" must be a list of 1 to {MAX_MESSAGES} messages')
    for index, message in enumerate(messages):
        if (
            not isinstance(message, dict)
            or message.get("role") not in ROLES
            or not isinstance(message.get("content"), str)
        ):
            raise ChatRequestError(f"messages[{index}] needs a role and a string content")
    max_tokens = body.get("max_tokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise ChatRequestError('"max_tokens" must be a positive integer')
    return body


def _chunk(ident: str, name: str, delta: dict, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": name,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _pieces(handler: Any, body: dict[str, Any]) -> tuple[Iterable[str], int | None]:
    options = {key: value for key, value in body.items() if key != "messages"}
    return handler.chat(body["messages"], options), body.get("max_tokens")


def prompt_tokens(body: dict[str, Any]) -> int:
    return sum(len(message["content"].split()) for message in body["messages"])


def answer_chat(request_handler, handler: Any, raw: bytes) -> None:
    """Answer one chat-completions request on ``request_handler`` (a BaseHTTPRequestHandler)."""
    try:
        body = parse_chat_request(raw)
    except ChatRequestError as error:
        request_handler.send_json(
            HTTPStatus.BAD_REQUEST,
            {"error": {"message": str(error), "type": "invalid_request_error"}},
        )
        return
    if body.get("stream") is True:
        _stream(request_handler, handler, body)
    else:
        _whole(request_handler, handler, body)


def _whole(request_handler, handler: Any, body: dict[str, Any]) -> None:
    pieces, limit = _pieces(handler, body)
    taken, finish = [], "stop"
    for piece in pieces:
        if limit is not None and len(taken) >= limit:
            finish = "length"
            break
        taken.append(piece)
    name = model_name(handler)
    request_handler.send_json(
        HTTPStatus.OK,
        {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(taken)},
                    "finish_reason": finish,
                }
            ],
            "usage": _usage(body, len(taken)),
        },
    )


def _usage(body: dict[str, Any], completion: int) -> dict[str, int]:
    prompt = prompt_tokens(body)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _stream(request_handler, handler: Any, body: dict[str, Any]) -> None:
    ident, name = f"chatcmpl-{uuid.uuid4().hex[:24]}", model_name(handler)
    request_handler.send_response(HTTPStatus.OK)
    request_handler.send_header("Content-Type", "text/event-stream")
    request_handler.send_header("Cache-Control", "no-cache")
    request_handler.send_header("Transfer-Encoding", "chunked")
    request_handler.end_headers()
    write = _chunked_writer(request_handler)
    write(_chunk(ident, name, {"role": "assistant", "content": ""}))
    pieces, limit = _pieces(handler, body)
    sent, finish = 0, "stop"
    try:
        for piece in pieces:
            if limit is not None and sent >= limit:
                finish = "length"
                break
            write(_chunk(ident, name, {"content": piece}))
            sent += 1
        write(_chunk(ident, name, {}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            write({**_chunk(ident, name, {}), "choices": [], "usage": _usage(body, sent)})
        write(None)
    except (BrokenPipeError, ConnectionResetError):
        request_handler.close_connection = True


def _chunked_writer(request_handler):
    """Return ``write(event)``: one SSE event as one HTTP chunk; ``None`` sends [DONE] and
    the last (empty) chunk."""

    def write(event: dict[str, Any] | None) -> None:
        text = "[DONE]" if event is None else json.dumps(event, ensure_ascii=False)
        data = f"data: {text}\n\n".encode()
        request_handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        if event is None:
            request_handler.wfile.write(b"0\r\n\r\n")
        request_handler.wfile.flush()

    return write


def models_list(handler: Any) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": model_name(handler), "object": "model", "owned_by": "dynatask"}],
    }
