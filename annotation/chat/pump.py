"""The pump: the chat queue's job that streams the models' replies into Redis.

It runs on a queue of its own (``CHAT_QUEUE``, served by its own worker): a pump may work for
``PUMP_BUDGET_SECONDS``, and on the live queue the create pages' answers would wait behind it.

The web side puts one item per reply on ``PENDING_KEY`` and queues a pump unless one holds
``PUMP_FLAG_KEY`` (``reply_queue``). The send puts a ``ReplyOrder``: the messages the model is
sent, its limits and the fingerprint of the model row it read (JSON); a retry puts
``"<reply id>:<attempt>"`` only. A pump takes pending replies and streams each in a thread of
its own (at most ``max_streams()`` at once), so the models of a turn answer in parallel and one
job serves many conversations. For an order, the pump's loop asks no database before the
model: the endpoint comes from the pump's specs keyed by (model id, fingerprint), read once per
row version; for an id, it reads what the reply needs (``reply_prepare``: three queries on the
pump's one database connection, kept while it runs). Then a thread asks the model with
``models_hub.chat_client`` (the endpoint's timeouts, concurrency cap, SSRF guard and sealed
token; the chat config's ``reply_timeout`` and ``reply_max_chars``), publishes the text as it
comes (``streams``, batched every ``FLUSH_SECONDS``), then stores the finished reply in one
conditional UPDATE (on a connection of its own, closed at once: no thread holds one while a
model streams) and publishes a terminal event. A Cancel (``streams.request_cancel``) is
seen between two reads. A text model in an arena battle (``text_models``) is asked once about
the turn's message with ``models_hub.client.predict``, and its answer published whole.

The pump renews its flag while it works, and lets it go when nothing is pending and no stream
runs (after ``linger_seconds()`` of waiting for more, unless other jobs wait for the worker).
A pump that dies leaves its replies "streaming": past their time limit the page offers a retry
(``selectors.STALE_MARGIN_SECONDS``), so no earlier turn is lost.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone
from redis.exceptions import RedisError

from annotation.chat import streams, text_models
from annotation.chat.models import ChatReply, ReplyStatus
from annotation.chat.selectors import seat_messages, turns_with_replies
from annotation.live.connection import redis_connection, rq_queue
from annotation.live.drain import linger_seconds
from models_hub import chat_client, client
from models_hub.chat_client import ReplyCancelled
from models_hub.client import EndpointSpec
from models_hub.errors import ModelCallError, ModelConfigurationError
from models_hub.models import RegisteredModel
from models_hub.selectors import endpoint_fingerprint, endpoint_spec
from models_hub.transport import LIVE_RETRY
from tasks.config import TaskConfig
from tasks.config.chat import ChatConfig

logger = logging.getLogger(__name__)

CHAT_QUEUE = "chat"
PENDING_KEY = "annotation:chat-pending"
PUMP_FLAG_KEY = "annotation:chat-pump"
PUMP_FLAG_TTL_SECONDS = 10
PUMP_JOB_PREFIX = "annotation-chat-pump-"
PUMP_BUDGET_SECONDS = 120.0
FLUSH_SECONDS = 0.1
CANCEL_CHECK_SECONDS = 0.2
# How long an idle pump waits on the pending list at a time (a push wakes it at once).
IDLE_WAIT_SECONDS = 0.5
QUEUE_UNAVAILABLE = "queue.unavailable"
ENDPOINT_CACHE_SIZE = 512
# Let the flag go only when nothing is pending (KEYS: flag, pending; ARGV: token).
_RELEASE = """
if redis.call('LLEN', KEYS[2]) == 0 and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"""


def max_streams() -> int:
    return max(1, int(getattr(settings, "ANNOTATION_CHAT_MAX_STREAMS", 128)))


def pump_timeout() -> int:
    return int(PUMP_BUDGET_SECONDS + 600 + 30)


def chat_queue():
    """The chat queue (the pump's and the judge's), never the live one."""
    return rq_queue(CHAT_QUEUE)


@dataclass(frozen=True)
class ReplyLimits:
    """The chat config's bounds on one reply, as the pump applies them."""

    max_chars: int
    total_seconds: float
    system_prompt: str = ""

    @classmethod
    def of(cls, chat: ChatConfig) -> ReplyLimits:
        return cls(chat.reply_max_chars, chat.reply_timeout, chat.system_prompt)


@dataclass(frozen=True)
class ReplyOrder:
    """What the send hands the pump for one reply, so that no query precedes the model call:
    the messages, the limits, and the model with the fingerprint of the row the send read
    (``models_hub.selectors.endpoint_fingerprint``; the token never leaves the database)."""

    reply_id: int
    attempt: int
    model_id: int | None
    fingerprint: str
    messages: list[dict[str, str]]
    limits: ReplyLimits

    def item(self) -> str:
        return json.dumps(
            {
                "reply": self.reply_id,
                "attempt": self.attempt,
                "model": self.model_id,
                "fingerprint": self.fingerprint,
                "messages": self.messages,
                "max_chars": self.limits.max_chars,
                "total_seconds": self.limits.total_seconds,
                "system_prompt": self.limits.system_prompt,
            },
            ensure_ascii=False,
        )


def reply_queue(items: list[tuple[int, int] | ReplyOrder]) -> bool:
    """Queue replies (orders, or ``(id, attempt)``) for a pump, after the commit; False
    without Redis."""
    pending = [
        item.item() if isinstance(item, ReplyOrder) else f"{item[0]}:{item[1]}" for item in items
    ]
    try:
        with redis_connection().pipeline(transaction=False) as pipe:
            pipe.rpush(PENDING_KEY, *pending)
            pipe.set(PUMP_FLAG_KEY, "queued", nx=True, ex=PUMP_FLAG_TTL_SECONDS)
            flagged = pipe.execute()[-1]
        if flagged:
            _enqueue_pump()
    except RedisError:
        logger.warning("could not queue chat replies %s", reply_ids(items), exc_info=True)
        return False
    return True


def reply_ids(items) -> list[tuple[int, int]]:
    """The ``(id, attempt)`` of queued items."""
    return [
        (item.reply_id, item.attempt) if isinstance(item, ReplyOrder) else tuple(item)
        for item in items
    ]


def _enqueue_pump() -> None:
    chat_queue().enqueue(
        chat_pump_job,
        job_id=f"{PUMP_JOB_PREFIX}{uuid.uuid4().hex}",
        job_timeout=pump_timeout(),
        result_ttl=settings.ANNOTATION_LIVE_RESULT_TTL,
        failure_ttl=24 * 3600,
    )


def parse_pending(item: bytes | str) -> ReplyOrder | tuple[int, int] | None:
    """An item of ``PENDING_KEY``: an order, a retry's ``(id, attempt)``, or None (dropped)."""
    text = item.decode() if isinstance(item, bytes) else item
    if text.startswith("{"):
        return parse_order(text)
    reply_id, _, attempt = text.partition(":")
    if reply_id.isdigit() and attempt.isdigit():
        return int(reply_id), int(attempt)
    return None


def parse_order(text: str) -> ReplyOrder | None:
    """The order of a JSON item, or None (logged) when it does not hold one."""
    try:
        data = json.loads(text)
        model_id = data["model"]
        order = ReplyOrder(
            reply_id=int(data["reply"]),
            attempt=int(data["attempt"]),
            model_id=int(model_id) if model_id is not None else None,
            fingerprint=str(data["fingerprint"]),
            messages=[
                {"role": str(message["role"]), "content": str(message["content"])}
                for message in data["messages"]
            ],
            limits=ReplyLimits(
                int(data["max_chars"]), float(data["total_seconds"]), str(data["system_prompt"])
            ),
        )
    except (ValueError, KeyError, TypeError):
        logger.warning("a chat pending item that is not an order was dropped")
        return None
    return order


def chat_pump_job() -> dict[str, int]:
    """Stream pending replies until none is left (see the module docstring)."""
    redis = redis_connection()
    token = uuid.uuid4().hex
    slots = threading.BoundedSemaphore(max_streams())
    threads: list[threading.Thread] = []
    started = idle_since = time.monotonic()
    served = 0
    while True:
        redis.set(PUMP_FLAG_KEY, token, ex=PUMP_FLAG_TTL_SECONDS)
        threads = [thread for thread in threads if thread.is_alive()]
        budget_left = time.monotonic() - started < PUMP_BUDGET_SECONDS
        if budget_left and slots.acquire(timeout=1.0):
            parsed = _next_item(redis, wait=0.05 if threads else IDLE_WAIT_SECONDS)
            prepared = _prepare(parsed) if parsed is not None else None
            if prepared is not None:
                thread = threading.Thread(
                    target=_run_stream, args=(prepared, slots, redis), daemon=True
                )
                thread.start()
                threads.append(thread)
                served += 1
                idle_since = time.monotonic()
                continue
            slots.release()
            if parsed is not None:
                continue
        elif not budget_left:
            time.sleep(0.05)
        if threads:
            idle_since = time.monotonic()
            continue
        if _should_stop(idle_since, budget_left):
            if redis.eval(_RELEASE, 2, PUMP_FLAG_KEY, PENDING_KEY, token):
                break
            if not budget_left:
                redis.delete(PUMP_FLAG_KEY)
                reply_queue_kick()
                break
    connection.close()
    return {"served": served}


def _next_item(redis, wait: float) -> ReplyOrder | tuple[int, int] | None:
    got = redis.blpop([PENDING_KEY], timeout=wait)
    return parse_pending(got[1]) if got else None


def _should_stop(idle_since: float, budget_left: bool) -> bool:
    if not budget_left:
        return True
    if time.monotonic() - idle_since >= linger_seconds():
        return True
    return len(chat_queue()) > 0  # another job (a judge) waits for this worker


def reply_queue_kick() -> None:
    """Queue a pump for what is pending when no pump holds the flag."""
    redis = redis_connection()
    if redis.llen(PENDING_KEY) and redis.set(
        PUMP_FLAG_KEY, "queued", nx=True, ex=PUMP_FLAG_TTL_SECONDS
    ):
        _enqueue_pump()


def _prepare(item: ReplyOrder | tuple[int, int]) -> PreparedReply | None:
    """What the reply needs: from the order (no query while the model row's spec is kept),
    or ``reply_prepare`` on the pump's own database connection (kept while the pump runs:
    a thread that opened a connection per reply waited for it before the first token)."""
    reply_id, attempt = reply_ids([item])[0]
    try:
        if isinstance(item, ReplyOrder):
            return order_prepare(item)
        close_old_connections()
        return reply_prepare(reply_id, attempt)
    except Exception:
        logger.exception("chat reply %s attempt %s could not be prepared", reply_id, attempt)
        connection.close()
        return None


_endpoints: dict[tuple[int, str], EndpointSpec] = {}
_endpoints_lock = threading.Lock()


def order_prepare(order: ReplyOrder) -> PreparedReply:
    """The order with its endpoint: kept by (model id, fingerprint of the row), so a model
    row is read once per version of its endpoint columns, and never before a kept call."""
    prepared = PreparedReply(order.reply_id, order.attempt, order.limits, messages=order.messages)
    try:
        if order.model_id is None:
            raise ModelConfigurationError("the model was removed from the task")
        spec = _endpoints.get((order.model_id, order.fingerprint))
        if spec is None:
            spec = _endpoint_read(order.model_id)
        prepared.endpoint = spec
    except ModelCallError as error:
        prepared.error = error
    return prepared


def _endpoint_read(model_id: int) -> EndpointSpec:
    close_old_connections()
    model = RegisteredModel.objects.filter(pk=model_id).first()
    if model is None:
        raise ModelConfigurationError("the model was removed from the task")
    spec = endpoint_spec(model)
    with _endpoints_lock:
        while len(_endpoints) >= ENDPOINT_CACHE_SIZE:
            _endpoints.pop(next(iter(_endpoints)))
        _endpoints[(model_id, endpoint_fingerprint(model))] = spec
    return spec


def _run_stream(prepared: PreparedReply, slots: threading.BoundedSemaphore, redis) -> None:
    try:
        reply_stream_prepared(prepared, redis)
    except Exception:
        logger.exception(
            "chat reply %s attempt %s failed in the pump", prepared.reply_id, prepared.attempt
        )
    finally:
        connection.close()
        slots.release()


class _Publisher:
    """Buffers the pieces of one reply and appends them to its stream every FLUSH_SECONDS."""

    def __init__(self, reply_id: int, attempt: int, redis):
        self.reply_id, self.attempt, self.redis = reply_id, attempt, redis
        self.key = streams.reply_key(reply_id, attempt)
        self.buffer: list[str] = []
        self.pieces: list[str] = []
        self.flushed_at = 0.0
        self.checked_at = 0.0  # the first read asks at once

    def add(self, piece: str) -> None:
        self.buffer.append(piece)
        self.pieces.append(piece)
        if time.monotonic() - self.flushed_at >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            streams.publish(self.key, streams.TEXT, "".join(self.buffer), self.redis)
            self.buffer = []
        self.flushed_at = time.monotonic()

    def cancelled(self) -> bool:
        if time.monotonic() - self.checked_at < CANCEL_CHECK_SECONDS:
            return False
        self.checked_at = time.monotonic()
        return streams.cancel_requested(self.reply_id, self.attempt, self.redis)

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def finish(self, kind: str, fields: dict) -> None:
        self.flush()
        streams.publish(self.key, kind, fields, self.redis)


@dataclass
class PreparedReply:
    """What streaming one reply needs, read from the database beforehand: the model's
    endpoint and the messages it is sent (or the error that stops the call before it starts)."""

    reply_id: int
    attempt: int
    limits: ReplyLimits
    endpoint: EndpointSpec | None = None
    messages: list[dict[str, str]] = field(default_factory=list)
    error: ModelCallError | None = None
    # A text model (``text_models``): the task's config and code, and the one input it gets.
    text_config: TaskConfig | None = None
    task_code: str = ""
    text_input: dict[str, Any] | None = None


def reply_prepare(reply_id: int, attempt: int) -> PreparedReply | None:
    """Read what reply ``reply_id`` needs to stream (None unless it still waits at
    ``attempt``): three queries, before any model is called."""
    reply = (
        ChatReply.objects.select_related(
            "turn__conversation__config_version", "turn__conversation__task", "model"
        )
        .filter(pk=reply_id, attempt=attempt, status=ReplyStatus.STREAMING)
        .first()
    )
    if reply is None:
        return None
    conversation = reply.turn.conversation
    limits = ReplyLimits.of(conversation.config_version.parsed.chat)
    prepared = PreparedReply(reply_id, attempt, limits)
    try:
        if reply.model is None:
            raise ModelConfigurationError("the model was removed from the task")
        prepared.endpoint = endpoint_spec(reply.model)
    except ModelCallError as error:
        prepared.error = error
        return prepared
    if text_models.is_text_protocol(reply.model.protocol):
        # One input, the turn's message: a text model holds no conversation.
        prepared.text_config = conversation.config_version.parsed
        prepared.task_code = conversation.task.code
        prepared.text_input = text_models.text_input(prepared.text_config, reply.turn.message)
        return prepared
    turns = turns_with_replies(conversation, up_to=reply.turn.number)
    turn = next(turn for turn in turns if turn.pk == reply.turn_id)
    prepared.messages = seat_messages(turns, turn, reply.position)
    return prepared


def stream_reply(reply_id: int, attempt: int, redis=None) -> str | None:
    """Stream reply ``reply_id`` (if it still waits at ``attempt``); return its final status."""
    prepared = reply_prepare(reply_id, attempt)
    if prepared is None:
        return None
    # No database connection is held while the model streams (it may take a minute).
    release_connection()
    return reply_stream_prepared(prepared, redis or redis_connection())


def reply_stream_prepared(prepared: PreparedReply, redis) -> str | None:
    """Ask the model, publish the text as it comes, then store the reply (one conditional
    UPDATE) and its terminal event; return its final status (None if it was no longer
    waiting). No query before the model's answer ends."""
    reply_id, attempt, limits = prepared.reply_id, prepared.attempt, prepared.limits
    publisher = _Publisher(reply_id, attempt, redis)
    try:
        if prepared.error is not None:
            raise prepared.error
        if prepared.text_input is not None:
            return _store(prepared, publisher, _text_answer(prepared, publisher), streams.DONE)
        result = chat_client.stream_reply(
            prepared.endpoint,
            prepared.messages,
            on_text=publisher.add,
            should_stop=publisher.cancelled,
            max_chars=limits.max_chars,
            total_seconds=limits.total_seconds,
            system_prompt=limits.system_prompt,
        )
    except ReplyCancelled as cancelled:
        fields = {"status": ReplyStatus.CANCELLED, "text": cancelled.partial}
        kind = streams.CANCELLED
    except ModelCallError as error:
        fields = {
            "status": ReplyStatus.FAILED,
            "text": publisher.text,
            "error_code": error.code,
            "error_message": str(error)[:2000],
        }
        kind = streams.ERROR
    else:
        fields = _done_fields(result)
        kind = streams.DONE
    return _store(prepared, publisher, fields, kind)


def _store(prepared: PreparedReply, publisher: _Publisher, fields: dict, kind: str) -> str | None:
    """Store the finished reply (one conditional UPDATE) and publish its terminal event."""
    fields["finished_at"] = timezone.now()
    stored = ChatReply.objects.filter(
        pk=prepared.reply_id, attempt=prepared.attempt, status=ReplyStatus.STREAMING
    ).update(**fields)
    if stored:
        publisher.finish(kind, _event_fields(fields))
    return fields["status"] if stored else None


def _text_answer(prepared: PreparedReply, publisher: _Publisher) -> dict:
    """Ask a text model about the turn's message (one call, through the task's model input
    mapping and output checks) and publish its answer as one piece of text."""
    result = client.predict(
        prepared.endpoint,
        prepared.text_config,
        prepared.task_code,
        [prepared.text_input],
        retry=LIVE_RETRY,
    )
    text = text_models.answer_text(prepared.text_config, result.outputs[0])
    text = text[: prepared.limits.max_chars]
    publisher.add(text)
    return {
        "status": ReplyStatus.DONE,
        "text": text,
        "model_version": (result.model_version or "")[:200],
        "latency_ms": round(result.latency_ms, 3),
        "first_token_ms": round(result.latency_ms, 3),
        "finish_reason": "stop",
        "raw": {"output": result.outputs[0]},
    }


def release_connection() -> None:
    """Close this thread's database connection (a stream may last a minute and must not hold
    one), unless it is inside a transaction (tests); Django opens a new one when needed."""
    if not connection.in_atomic_block:
        connection.close()


def retake_connection() -> None:
    """Open this thread's database connection again once a stream has ended, when connections
    persist (``CONN_MAX_AGE``): the thread's next request finds one, as after any other
    request, instead of opening it first. A stream never holds one while it waits."""
    if connection.in_atomic_block or not connection.settings_dict.get("CONN_MAX_AGE"):
        return
    try:
        connection.ensure_connection()
    except DatabaseError:
        logger.warning("could not open a database connection after a stream", exc_info=True)


def _done_fields(result: chat_client.ReplyResult) -> dict:
    return {
        "status": ReplyStatus.DONE,
        "text": result.text,
        "model_version": (result.model_version or "")[:200],
        "latency_ms": round(result.latency_ms, 3),
        "first_token_ms": (
            round(result.first_token_ms, 3) if result.first_token_ms is not None else None
        ),
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "finish_reason": (result.finish_reason or "")[:32],
        "raw": result.raw,
    }


def _event_fields(fields: dict) -> dict:
    """What a terminal event tells the page: everything stored but the text and raw chunk."""
    return {
        key: (str(value) if key == "status" else value)
        for key, value in fields.items()
        if key not in ("text", "raw", "finished_at")
    }
