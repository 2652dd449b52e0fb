"""Conversations over the ``openai_chat`` protocol: the request and the streamed answer.

Pure: no DB, no HTTP. ``conversation_request`` builds ``POST <url>/v1/chat/completions`` for
a list of ``{"role", "content"}`` messages, with ``"stream": true`` (and
``stream_options.include_usage`` unless the registration's ``include_usage`` option is
false); ``SSEDecoder`` cuts a byte stream into server-sent-event ``data`` payloads, bounding
the length of one line; ``parse_chunk`` reads one ``chat.completion.chunk`` (or a whole
``chat.completion`` from a server that did not stream) into a ``ChunkInfo``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from models_hub.errors import ModelBadResponse, ModelResponseTooLarge
from models_hub.protocols.base import EndpointSettings, RequestSpec, require_option
from models_hub.protocols.openai_chat import chat_completions_url

DONE = "[DONE]"
ROLES = ("system", "user", "assistant")
MAX_SSE_LINE_BYTES = 256 * 1024


@dataclass(frozen=True)
class ChunkInfo:
    """What one streamed chunk (or one whole completion) says."""

    text: str = ""
    finish_reason: str | None = None
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def conversation_request(
    settings: EndpointSettings,
    messages: Sequence[Mapping[str, str]],
    *,
    stream: bool = True,
    system_prompt: str = "",
) -> RequestSpec:
    """Return the chat-completions request for ``messages`` (a system prompt first if any).

    The registration's ``system_prompt`` option wins over the task's ``system_prompt``.
    """
    options = settings.options
    body: dict[str, Any] = {"model": require_option(settings, "model")}
    system = options.get("system_prompt") or system_prompt
    sent = [{"role": "system", "content": str(system)}] if system else []
    for message in messages:
        if message.get("role") not in ROLES or not isinstance(message.get("content"), str):
            raise ValueError("a message needs a role (system, user, assistant) and a content")
        sent.append({"role": message["role"], "content": message["content"]})
    body["messages"] = sent
    for name in ("temperature", "max_tokens"):
        if options.get(name) is not None:
            body[name] = options[name]
    if stream:
        body["stream"] = True
        if options.get("include_usage", True):
            body["stream_options"] = {"include_usage": True}
    return RequestSpec("POST", chat_completions_url(settings.url), body, (0,))


class SSEDecoder:
    """Feed bytes, get the ``data`` payloads of complete events (a line over the limit fails).

    Multi-line ``data`` fields are joined with newlines as the SSE format says; comments
    (``:`` lines) and other fields (``event``, ``id``, ``retry``) are ignored.
    """

    def __init__(self, max_line_bytes: int = MAX_SSE_LINE_BYTES):
        self.max_line_bytes = max_line_bytes
        self.buffer = b""
        self.data: list[str] = []

    def feed(self, chunk: bytes) -> Iterator[str]:
        """Return the payloads completed by ``chunk``."""
        self.buffer += chunk
        while True:
            end = self.buffer.find(b"\n")
            if end < 0:
                if len(self.buffer) > self.max_line_bytes:
                    raise ModelResponseTooLarge(
                        f"a streamed line is over {self.max_line_bytes} bytes"
                    )
                return
            line, self.buffer = self.buffer[:end], self.buffer[end + 1 :]
            payload = self._line(line.rstrip(b"\r"))
            if payload is not None:
                yield payload

    def _line(self, line: bytes) -> str | None:
        if not line:
            if not self.data:
                return None
            payload, self.data = "\n".join(self.data), []
            return payload
        if line.startswith(b":"):
            return None
        name, _, value = line.partition(b":")
        if name == b"data":
            self.data.append(value.removeprefix(b" ").decode("utf-8", "replace"))
        return None

    def close(self) -> Iterator[str]:
        """The last event, when the stream ended without its blank line."""
        if self.buffer:
            payload = self._line(self.buffer.rstrip(b"\r"))
            self.buffer = b""
            if payload is not None:
                yield payload
        if self.data:
            payload, self.data = "\n".join(self.data), []
            yield payload


def _count(usage: Any, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


def parse_chunk(payload: str | Mapping[str, Any]) -> ChunkInfo:
    """Read one chunk (text payload or parsed body); raise ``ModelBadResponse`` if malformed."""
    body = payload
    if isinstance(payload, str):
        try:
            body = json.loads(payload, parse_constant=_no_constant)
        except ValueError as error:
            raise ModelBadResponse(f"a streamed chunk is not JSON ({error})", excerpt=payload)
    if not isinstance(body, dict):
        raise ModelBadResponse("a streamed chunk is not a JSON object", excerpt=str(payload))
    if isinstance(body.get("error"), dict | str):
        detail = body["error"].get("message", "") if isinstance(body["error"], dict) else ""
        raise ModelBadResponse(
            f"the model sent an error in its stream: {str(detail or body['error'])[:200]}"
        )
    choices = body.get("choices") or []
    if not isinstance(choices, list):
        raise ModelBadResponse("choices is not a list", excerpt=str(payload)[:300])
    text, finish = "", None
    if choices:
        choice = choices[0] if isinstance(choices[0], dict) else {}
        part = choice.get("delta") or choice.get("message") or {}
        content = part.get("content") if isinstance(part, dict) else None
        if content is not None and not isinstance(content, str):
            raise ModelBadResponse("a chunk's content is not a string", excerpt=str(payload))
        text = content or ""
        reason = choice.get("finish_reason")
        finish = reason[:32] if isinstance(reason, str) else None
    usage = body.get("usage")
    model = body.get("model")
    return ChunkInfo(
        text=text,
        finish_reason=finish,
        model=model[:200] if isinstance(model, str) else None,
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
