"""The pump has a queue of its own: a chat reply that streams never holds the live queue's
worker, which answers the create pages' examples."""

from __future__ import annotations

import threading
import time

import pytest

from annotation.chat import pump as pump_module
from annotation.chat import services, streams
from annotation.chat.models import ChatReply, ReplyStatus
from annotation.chat.pump import CHAT_QUEUE
from annotation.live.connection import LIVE_QUEUE
from annotation.models import Example, ExampleStatus
from models_hub.demo.chat import RuleChatHandler
from models_hub.models import RegisteredModel
from tests.annotation.chat.fixtures import pump, register_chat_model
from tests.annotation.conftest import POSITIVE, BackgroundWorker, ServerHandle, submit
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db(transaction=True)


class GatedChatHandler(RuleChatHandler):
    """Streams the first word of its reply, then waits for ``gate`` before the rest."""

    def __init__(self):
        super().__init__(token_delay=0)
        self.gate = threading.Event()

    def chat(self, messages, options):
        pieces = list(super().chat(messages, options))
        yield pieces[0]
        self.gate.wait(timeout=120)
        yield from pieces[1:]


def wait_for(condition, what: str, seconds: float = 60.0) -> None:
    """Wait for a state (never a duration under test: ``seconds`` only bounds a failure)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.05)


def has_text(reply: ChatReply) -> bool:
    events = streams.read(streams.reply_key(reply.pk, reply.attempt), "0-0", 1)
    return any(kind == streams.TEXT for _id, kind, _data in events)


def statuses(turn) -> set[str]:
    return set(ChatReply.objects.filter(turn=turn).values_list("status", flat=True))


@pytest.fixture
def gated_chat(owner, redis_connection):
    handler = GatedChatHandler()
    handle = ServerHandle(handler)
    task = TaskFactory(code="chat", config_name="chat", owners=[owner])
    for name in ("Gated A", "Gated B"):
        register_chat_model(task, owner, handle.url, name)
    yield task, handler
    handler.gate.set()
    handle.stop()


@pytest.fixture
def queue_workers(redis_connection):
    """One worker per queue, as ``scripts/dev.py run`` and a deployment run them."""
    workers = [BackgroundWorker(LIVE_QUEUE).start(), BackgroundWorker(CHAT_QUEUE).start()]
    yield
    for worker in workers:
        worker.stop()


def test_a_live_example_is_answered_while_a_chat_reply_streams(
    client, worker, sentiment_model, gated_chat, chatter_actor, settings, queue_workers
):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 0
    task, handler = gated_chat
    conversation = services.conversation_start(
        task=task, round_=task.rounds.get(number=1), actor=chatter_actor
    )
    turn = services.turn_send(conversation, chatter_actor, "Why does Mars look red?")
    replies = list(ChatReply.objects.filter(turn=turn))
    # The pump streams both replies: their first words are out, the rest waits on the gate.
    wait_for(lambda: all(has_text(reply) for reply in replies), "the replies' first words")

    client.force_login(worker)
    assert submit(client, "sentiment", statement=POSITIVE, label="negative").status_code == 200
    example = Example.objects.get(task=sentiment_model.task)
    wait_for(
        lambda: Example.objects.get(pk=example.pk).status == ExampleStatus.MODEL_ANSWERED,
        "the live example's answer",
    )

    # The example was answered while the chat replies were still streaming.
    assert statuses(turn) == {ReplyStatus.STREAMING}
    assert all(not streams.cancel_requested(reply.pk, reply.attempt) for reply in replies)
    handler.gate.set()
    wait_for(lambda: statuses(turn) == {ReplyStatus.DONE}, "the chat replies' end")
    for reply in ChatReply.objects.filter(turn=turn):
        assert len(reply.text.split()) > 1  # the words after the gate arrived too


def test_the_pump_is_queued_on_the_chat_queue_not_the_live_one(chat_task, chatter_actor):
    import django_rq

    conversation = services.conversation_start(
        task=chat_task, round_=chat_task.rounds.get(number=1), actor=chatter_actor
    )
    services.turn_send(conversation, chatter_actor, "hello")
    chat_jobs = django_rq.get_queue(CHAT_QUEUE).jobs
    assert [job.func_name for job in chat_jobs] == ["annotation.chat.pump.chat_pump_job"]
    assert django_rq.get_queue(LIVE_QUEUE).count == 0


def test_the_send_hands_the_pump_what_it_needs_and_a_changed_endpoint_is_read_again(
    chat_task, chatter_actor, django_assert_num_queries
):
    conversation = services.conversation_start(
        task=chat_task, round_=chat_task.rounds.get(number=1), actor=chatter_actor
    )
    turn = services.turn_send(conversation, chatter_actor, "Why does Mars look red?")
    pending = [pump_module.parse_pending(item) for item in _pending()]
    orders = {order.reply_id: order for order in pending}
    assert set(orders) == set(ChatReply.objects.filter(turn=turn).values_list("pk", flat=True))
    order = next(iter(orders.values()))
    assert order.messages == [{"role": "user", "content": "Why does Mars look red?"}]
    pump_module.order_prepare(order)  # the model row is read once...
    with django_assert_num_queries(0):  # ...and then kept: no query before the model call
        prepared = pump_module.order_prepare(order)
    assert prepared.endpoint.url == RegisteredModel.objects.get(pk=order.model_id).endpoint_url
    pump()
    assert statuses(turn) == {ReplyStatus.DONE}

    services.turn_choose(conversation, chatter_actor, turn.pk, "tie")
    first = conversation.seats.get(position=0)
    # A bulk update (no post_save): the fingerprint of the row the send reads changes.
    RegisteredModel.objects.filter(pk=first.model_id).update(endpoint_url="http://127.0.0.1:9/")
    second = services.turn_send(conversation, chatter_actor, "And Venus?")
    pump()
    replies = {reply.position: reply for reply in ChatReply.objects.filter(turn=second)}
    assert replies[0].status == ReplyStatus.FAILED and replies[1].status == ReplyStatus.DONE
    assert replies[0].error_code and replies[1].text


def _pending() -> list[bytes]:
    from annotation.live.connection import redis_connection

    return redis_connection().lrange(pump_module.PENDING_KEY, 0, -1)
