"""Redis streams of the replies: what the pump writes while a model answers, what pages read.

Keys (on the live loop's Redis, ``annotation.live.queue.redis_connection``):

- ``reply_key(reply_id, attempt)``: a stream of events ``{"k": kind, "d": data}``; ``kind``
  is ``text`` (a piece of the reply), or a terminal ``done`` / ``error`` / ``cancelled``
  whose data is the JSON of what was stored. It is capped at ``STREAM_MAXLEN`` entries and
  expires ``STREAM_TTL_SECONDS`` after its last write, so a reader may start late and still
  read the whole reply (the database holds it for good);
- ``cancel_key(reply_id, attempt)``: set by the worker's Cancel, read by the pump.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from annotation.live.connection import redis_connection

TEXT = "text"
DONE = "done"
ERROR = "error"
CANCELLED = "cancelled"
TERMINAL = (DONE, ERROR, CANCELLED)
STREAM_MAXLEN = 20_000
STREAM_TTL_SECONDS = 3600
CANCEL_TTL_SECONDS = 900


def reply_key(reply_id: int, attempt: int) -> str:
    return f"annotation:chat-reply:{reply_id}:{attempt}"


def cancel_key(reply_id: int, attempt: int) -> str:
    return f"annotation:chat-cancel:{reply_id}:{attempt}"


def publish(key: str, kind: str, data: Any, connection=None) -> None:
    """Append one event to ``key`` and push its expiry back (one round trip)."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    with (connection or redis_connection()).pipeline(transaction=False) as pipe:
        pipe.xadd(key, {"k": kind, "d": text}, maxlen=STREAM_MAXLEN, approximate=True)
        pipe.expire(key, STREAM_TTL_SECONDS)
        pipe.execute()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def read(key: str, after: str, block_ms: int, connection=None) -> list[tuple[str, str, str]]:
    """Return the events after ``after`` (``"0-0"``: all), waiting up to ``block_ms``."""
    return [event for _key, *event in read_many({key: after}, block_ms, connection)]


def read_many(positions: dict[str, str], block_ms: int, connection=None) -> list[tuple]:
    """Return ``(key, entry id, kind, data)`` after each key's position, in one ``XREAD``
    that waits up to ``block_ms`` for any of them."""
    response = (connection or redis_connection()).xread(positions, block=block_ms, count=500)
    events = []
    for stream, entries in response or []:
        for entry_id, fields in entries:
            kind = _text(fields.get(b"k") or fields.get("k") or b"")
            data = _text(fields.get(b"d") or fields.get("d") or b"")
            events.append((_text(stream), _text(entry_id), kind, data))
    return events


def follow(key: str, seconds: float, poll_ms: int = 1000, connection=None) -> Iterator[tuple]:
    """Yield ``(kind, data)`` from the start of ``key`` until a terminal event, or
    ``(None, None)`` after each ``poll_ms`` without news (the caller decides to go on)."""
    for _key, kind, data in follow_many([key], seconds, poll_ms, connection):
        yield kind, data


def follow_many(
    keys: list[str], seconds: float, poll_ms: int = 1000, connection=None
) -> Iterator[tuple]:
    """Yield ``(key, kind, data)`` from the start of every key, as they come, until each has
    its terminal event, or ``(None, None, None)`` after each ``poll_ms`` without news."""
    positions = dict.fromkeys(keys, "0-0")
    deadline = time.monotonic() + seconds
    while positions and time.monotonic() < deadline:
        events = read_many(positions, poll_ms, connection)
        if not events:
            yield None, None, None
            continue
        for key, entry_id, kind, data in events:
            if key not in positions:
                continue
            positions[key] = entry_id
            yield key, kind, data
            if kind in TERMINAL:
                del positions[key]


def request_cancel(reply_id: int, attempt: int) -> None:
    redis_connection().set(cancel_key(reply_id, attempt), "1", ex=CANCEL_TTL_SECONDS)


def cancel_requested(reply_id: int, attempt: int, connection=None) -> bool:
    return bool((connection or redis_connection()).exists(cancel_key(reply_id, attempt)))
