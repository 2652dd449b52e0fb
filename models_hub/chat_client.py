"""Conversations with ``openai_chat`` endpoints: one streamed reply, or one whole answer.

Contract of ``stream_reply(endpoint, messages, on_text=..., should_stop=...)``: it sends the
conversation with ``stream: true`` through the same hardened transport as every model call
(``models_hub.transport``: the connection pinned to SSRF-checked addresses, no redirects, no
proxies, no cookies, TLS always verified, the bearer token scrubbed from every message), under
the endpoint's concurrency cap (``client.endpoint_semaphore``), and returns a ``ReplyResult``.
It calls ``on_text(piece)`` for each piece of text as it arrives. Bounds: the connect and read
timeouts of the endpoint (the read timeout between two reads), a total deadline
(``total_seconds``) for the whole reply, ``max_chars`` characters of reply text and the
endpoint's ``max_response_bytes`` of body; past any of them the reply fails
(``ModelTimeout`` / ``ModelResponseTooLarge``), so a model can hold a worker thread for at
most ``total_seconds``. ``should_stop()`` is asked between reads: True ends the reply with
``ReplyCancelled``. A server that ignores ``stream`` and answers one JSON completion is read
as one piece. Nothing is retried: the worker retries the turn.

``complete(endpoint, messages)`` is the same call without streaming (the judge model).
No DB and no settings.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import requests

from models_hub.client import EndpointSpec, endpoint_semaphore, scrub_value
from models_hub.errors import (
    ModelBadResponse,
    ModelCallError,
    ModelConfigurationError,
    ModelRedirect,
    ModelResponseTooLarge,
    ModelServerError,
    ModelTimeout,
    safe_excerpt,
)
from models_hub.protocols import EndpointSettings
from models_hub.protocols.openai_chat_stream import (
    DONE,
    ChunkInfo,
    SSEDecoder,
    conversation_request,
    parse_chunk,
)
from models_hub.ssrf import AddressPolicy, Resolver
from models_hub.transport import parse_json_body, read_some, session_for, transport_error

RAW_LIMIT_CHARS = 2000


class ReplyCancelled(Exception):
    """``should_stop`` said stop: the text so far is in ``partial``."""

    def __init__(self, partial: str):
        super().__init__("the reply was cancelled")
        self.partial = partial


@dataclass
class ReplyResult:
    """A finished reply and how it went."""

    text: str = ""
    model_version: str | None = None
    finish_reason: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float = 0.0
    first_token_ms: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)


class _Reply:
    """The state of one streamed reply while it is read."""

    def __init__(self, on_text: Callable[[str], None], max_chars: int, started: float):
        self.on_text = on_text
        self.max_chars = max_chars
        self.started = started
        self.result = ReplyResult()
        self.pieces: list[str] = []
        self.chars = 0
        self.last_chunk: Any = None

    def take(self, info: ChunkInfo, body: Any) -> None:
        self.last_chunk = body
        result = self.result
        if info.text:
            if result.first_token_ms is None:
                result.first_token_ms = (time.perf_counter() - self.started) * 1000
            self.chars += len(info.text)
            if self.chars > self.max_chars:
                raise ModelResponseTooLarge(f"the reply is longer than {self.max_chars} characters")
            self.pieces.append(info.text)
            self.on_text(info.text)
        result.finish_reason = info.finish_reason or result.finish_reason
        result.model_version = info.model or result.model_version
        result.prompt_tokens = info.prompt_tokens or result.prompt_tokens
        result.completion_tokens = info.completion_tokens or result.completion_tokens

    def finish(self, secrets: tuple[str, ...]) -> ReplyResult:
        result = self.result
        result.text = "".join(self.pieces)
        result.latency_ms = (time.perf_counter() - self.started) * 1000
        last = scrub_value(self.last_chunk, secrets)
        excerpt = safe_excerpt(json.dumps(last, ensure_ascii=False), limit=RAW_LIMIT_CHARS)
        result.raw = {"last_chunk": excerpt, "usage": _usage(result)}
        return result


def _usage(result: ReplyResult) -> dict[str, int] | None:
    if result.prompt_tokens is None and result.completion_tokens is None:
        return None
    return {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens}


class ChatClient:
    """Streams replies from ``openai_chat`` endpoints; holds only the injectable resolver."""

    def __init__(self, *, resolver: Resolver | None = None):
        self.resolver = resolver

    def stream_reply(
        self,
        endpoint: EndpointSpec,
        messages: Sequence[Mapping[str, str]],
        *,
        on_text: Callable[[str], None] = lambda piece: None,
        should_stop: Callable[[], bool] = lambda: False,
        max_chars: int = 8000,
        total_seconds: float = 60.0,
        system_prompt: str = "",
        stream: bool = True,
    ) -> ReplyResult:
        """Stream one reply to ``messages`` (see the module docstring)."""
        if endpoint.protocol != "openai_chat":
            raise ModelConfigurationError(
                "conversations need a model with the openai_chat protocol"
            )
        policy = AddressPolicy.build(endpoint.allowed_hosts, self.resolver)
        settings = EndpointSettings(endpoint.url, "", endpoint.options)
        try:
            spec = conversation_request(
                settings, messages, stream=stream, system_prompt=system_prompt
            )
        except ValueError as error:
            raise ModelConfigurationError(f"cannot build the request: {error}")
        policy.check_url_static(spec.url)
        deadline = time.monotonic() + total_seconds
        semaphore = endpoint_semaphore(endpoint.url, endpoint.max_concurrency)
        if not semaphore.acquire(timeout=max(0.0, total_seconds)):
            raise ModelTimeout("the model is busy with other conversations; try again")
        try:
            return self._send(endpoint, policy, spec, on_text, should_stop, max_chars, deadline)
        finally:
            semaphore.release()

    def _send(self, endpoint, policy, spec, on_text, should_stop, max_chars, deadline):
        secrets = tuple(secret for secret in (endpoint.token,) if secret)
        session = session_for(policy)
        headers = {
            "Accept": "text/event-stream, application/json",
            "Content-Type": "application/json",
        }
        if endpoint.token:
            headers["Authorization"] = f"Bearer {endpoint.token}"
        data = json.dumps(spec.json_body, ensure_ascii=False, allow_nan=False).encode()
        try:
            prepared = session.prepare_request(
                requests.Request("POST", spec.url, headers=headers, data=data)
            )
        except (requests.RequestException, ValueError):
            raise ModelConfigurationError("the model URL or token cannot be used in a request")
        remaining = max(0.1, deadline - time.monotonic())
        timeout = (min(endpoint.connect_timeout, remaining), min(endpoint.read_timeout, remaining))
        started = time.perf_counter()
        reply = _Reply(on_text, max_chars, started)
        try:
            adapter = session.get_adapter(prepared.url or "")
            response = adapter.send(
                prepared, stream=True, timeout=timeout, verify=endpoint.verify, proxies={}
            )
            with response:
                _check_status(response, secrets)
                kind = response.headers.get("Content-Type", "")
                if "text/event-stream" in kind:
                    _read_events(response, reply, endpoint, should_stop, deadline)
                else:
                    _read_whole(response, reply, endpoint, deadline)
        except requests.RequestException as error:
            raise transport_error(error, timeout, secrets) from error
        except ModelCallError as error:
            error.message = _scrubbed(error.message, secrets)
            raise
        return reply.finish(secrets)


def _scrubbed(message: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        message = message.replace(secret, "***")
    return message


def _check_status(response: requests.Response, secrets: tuple[str, ...]) -> None:
    status = response.status_code
    if 300 <= status < 400:
        raise ModelRedirect(
            f"the model answered HTTP {status}; redirects are refused", status=status
        )
    if status < 400:
        return
    excerpt = read_some(response)[:2048]
    kind = ModelServerError if status >= 500 else ModelBadResponse
    raise kind(f"the model answered HTTP {status}", status=status, excerpt=excerpt, secrets=secrets)


def _read_events(response, reply: _Reply, endpoint, should_stop, deadline: float) -> None:
    decoder = SSEDecoder()
    total = 0
    while True:
        if should_stop():
            raise ReplyCancelled("".join(reply.pieces))
        chunk = read_some(response)
        payloads = list(decoder.feed(chunk)) if chunk else list(decoder.close())
        total += len(chunk)
        if total > endpoint.max_response_bytes:
            raise ModelResponseTooLarge(f"the stream is over {endpoint.max_response_bytes} bytes")
        for payload in payloads:
            if payload.strip() == DONE:
                return
            reply.take(parse_chunk(payload), payload)
        if not chunk:
            return
        if time.monotonic() > deadline:
            raise ModelTimeout("the reply did not finish within its time limit")


def _read_whole(response, reply: _Reply, endpoint, deadline: float) -> None:
    chunks, total = [], 0
    while chunk := read_some(response):
        total += len(chunk)
        if total > endpoint.max_response_bytes:
            raise ModelResponseTooLarge(f"the answer is over {endpoint.max_response_bytes} bytes")
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise ModelTimeout("the reply did not finish within its time limit")
    raw = b"".join(chunks)
    try:
        body = parse_json_body(raw)
    except (ValueError, UnicodeDecodeError):
        raise ModelBadResponse("the model answered invalid JSON", excerpt=raw)
    info = parse_chunk(body)
    if not info.text and not isinstance(body.get("choices"), list):
        raise ModelBadResponse("the answer has no choices[0].message.content", excerpt=raw)
    reply.take(info, body)


_default = ChatClient()


def stream_reply(endpoint: EndpointSpec, messages, **kwargs) -> ReplyResult:
    """Stream one reply with the default client (the system resolver)."""
    return _default.stream_reply(endpoint, messages, **kwargs)


def complete(endpoint: EndpointSpec, messages, **kwargs) -> ReplyResult:
    """One whole (not streamed) answer with the default client."""
    return _default.stream_reply(endpoint, messages, stream=False, **kwargs)
