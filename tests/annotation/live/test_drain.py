"""The live queue's drain: pending examples are answered in batches, one model call per model,
with each example's own outcome, and the drain flag keeps one drain queued at a time."""

from __future__ import annotations

import logging
import threading
import time

import django_rq
import pytest
from rq.job import Job

from annotation.live import drain, watchdog
from annotation.live import queue as live_loop
from annotation.live.connection import LIVE_QUEUE
from annotation.models import Example, ExampleStatus, RoundStats
from models_hub.demo.sentiment import SentimentHandler
from tests.annotation.conftest import (
    POSITIVE,
    flush_counters,
    put_in_loop,
    run_jobs,
    serve_in_loop,
    submit,
)

# The drain runs after the examples' transactions commit.
pytestmark = pytest.mark.django_db(transaction=True)

NEGATIVE = "This was a dreadful, awful, disgusting meal."


class CountingHandler(SentimentHandler):
    """The demo sentiment model, recording the size of every batch it was sent."""

    def __init__(self):
        super().__init__()
        self.batches: list[int] = []
        self.lock = threading.Lock()

    def predict(self, batch):
        with self.lock:
            self.batches.append(len(batch))
        return super().predict(batch)


class SlowPerItemHandler(CountingHandler):
    """Takes ``seconds`` per statement: a batch takes as long as its items together."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds

    def predict(self, batch):
        time.sleep(self.seconds * len(batch))
        return super().predict(batch)


class NonsenseForOneHandler(CountingHandler):
    """Answers a label the task does not have for the statement containing "nonsense"."""

    def predict(self, batch):
        outputs = super().predict(batch)
        for item, output in zip(batch, outputs, strict=True):
            if "nonsense" in item.get("statement", ""):
                output["label"] = "sarcastic"
        return outputs


def _drain_ids() -> list[str]:
    return django_rq.get_queue(LIVE_QUEUE).job_ids


def _submit_many(client, texts):
    for text in texts:
        response = submit(client, "sentiment", statement=text, label="negative")
        assert response.status_code == 200


@pytest.fixture
def counting_model(sentiment_task, owner, model_server_factory, redis_connection):
    handler = CountingHandler()
    model = serve_in_loop(sentiment_task, owner, model_server_factory, handler, "counted")
    model.handler = handler
    return model


@pytest.fixture
def no_wait(settings):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 0


def test_examples_waiting_together_are_answered_in_one_call_by_one_drain(
    client, worker, counting_model, no_wait
):
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE, POSITIVE + " Again.", NEGATIVE + " Again."])
    assert len(_drain_ids()) == 1  # the first example queued it; the others joined the list
    [drain_id] = _drain_ids()

    run_jobs()

    assert counting_model.handler.batches == [4]
    examples = list(Example.objects.order_by("pk"))
    assert [e.status for e in examples] == [ExampleStatus.MODEL_ANSWERED] * 4
    assert [e.model_wrong for e in examples] == [True, False, True, False]
    flush_counters()
    stats = RoundStats.objects.get(round=examples[0].round)
    assert (stats.collected, stats.fooled) == (4, 2)
    examples[0].context.refresh_from_db()
    assert examples[0].context.fooled_count == 2
    connection = django_rq.get_connection(LIVE_QUEUE)
    assert Job.fetch(drain_id, connection=connection).return_value() == {"examples": 4}
    for example in examples:  # every waiting page is woken with its own answer
        answer = live_loop.wait_for_live_answer(live_loop.live_job_id(example.pk, 1), 0.05)
        assert answer["model_wrong"] == example.model_wrong
    assert connection.llen(live_loop.PENDING_KEY) == 0


def test_a_batch_is_at_most_the_batch_size(client, worker, counting_model, no_wait, settings):
    settings.ANNOTATION_LIVE_BATCH_SIZE = 2
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE, POSITIVE + " Again.", NEGATIVE + " Again.", "Ok."])
    run_jobs()
    assert counting_model.handler.batches == [2, 2, 1]
    assert not Example.objects.exclude(status=ExampleStatus.MODEL_ANSWERED).exists()


def _drain_in_thread(results: list) -> threading.Thread:
    from django.db import connection

    def run_drain():
        try:
            results.append(drain.live_drain_job())
        finally:
            connection.close()

    thread = threading.Thread(target=run_drain, daemon=True)
    thread.start()
    return thread


def _answered(example: Example, seconds: float = 10) -> dict:
    answer = live_loop.wait_for_live_answer(live_loop.live_job_id(example.pk, 1), seconds)
    assert answer, f"example {example.pk} was not answered"
    return answer


def test_a_drain_waits_a_moment_for_the_next_example(
    client, worker, counting_model, no_wait, settings
):
    """Once the list is empty, a drain waits for more (``ANNOTATION_LIVE_LINGER_SECONDS``):
    the next example is taken at once, and no job is queued for it. The drain stops waiting
    as soon as another job is queued on the live queue, and lets the flag go."""
    settings.ANNOTATION_LIVE_LINGER_SECONDS = 30
    client.force_login(worker)
    _submit_many(client, [POSITIVE])
    queue = django_rq.get_queue(LIVE_QUEUE)
    queue.empty()  # the drain is run here, in a thread, instead
    results: list = []
    thread = _drain_in_thread(results)
    first = Example.objects.get()
    _answered(first)
    _submit_many(client, [NEGATIVE])
    second = Example.objects.exclude(pk=first.pk).get()
    assert _answered(second)["model_wrong"] is False
    assert _drain_ids() == []  # the waiting drain took it: no job
    assert thread.is_alive()
    started = time.monotonic()
    queue.enqueue(time.sleep, 0)  # another job for the worker
    thread.join(timeout=10)
    assert not thread.is_alive() and time.monotonic() - started < 5
    assert results == [{"examples": 2}]
    assert queue.connection.get(live_loop.DRAIN_QUEUED_KEY) is None
    assert counting_model.handler.batches == [1, 1]


def test_a_drain_whose_batch_outlasts_its_hold_lets_a_second_drain_start(
    client,
    worker,
    sentiment_task,
    owner,
    model_server_factory,
    redis_connection,
    no_wait,
    monkeypatch,
):
    """A slow model: the hold lapses while the batch is asked, so the next example queues a
    drain of its own, which another worker runs beside the first."""

    class SlowHandler(CountingHandler):
        def predict(self, batch):
            outputs = super().predict(batch)
            time.sleep(1.0)
            return outputs

    handler = SlowHandler()
    serve_in_loop(sentiment_task, owner, model_server_factory, handler, "slow")
    monkeypatch.setattr(drain, "DRAIN_HOLD_MS", 100)
    client.force_login(worker)
    _submit_many(client, [POSITIVE])
    django_rq.get_queue(LIVE_QUEUE).empty()
    results: list = []
    thread = _drain_in_thread(results)
    deadline = time.monotonic() + 10
    while not handler.batches and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # the model is still answering; the hold has lapsed
    _submit_many(client, [NEGATIVE])
    assert len(_drain_ids()) == 1
    thread.join(timeout=10)
    run_jobs()
    assert not Example.objects.exclude(status=ExampleStatus.MODEL_ANSWERED).exists()


def test_a_drain_that_takes_a_full_batch_lets_another_drain_take_the_next_meanwhile(
    client,
    worker,
    sentiment_task,
    owner,
    model_server_factory,
    redis_connection,
    no_wait,
    settings,
):
    """Under load a second worker answers the next batch while the first waits on the model:
    a drain that takes a full batch queues another drain for the rest."""

    class GatedHandler(CountingHandler):
        gate = threading.Event()

        def predict(self, batch):
            outputs = super().predict(batch)
            self.gate.wait(10)
            return outputs

    handler = GatedHandler()
    serve_in_loop(sentiment_task, owner, model_server_factory, handler, "gated")
    settings.ANNOTATION_LIVE_BATCH_SIZE = 2
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE, POSITIVE + " Again.", NEGATIVE + " Again."])
    django_rq.get_queue(LIVE_QUEUE).empty()  # the drains are run here instead
    results: list = []
    first = _drain_in_thread(results)
    deadline = time.monotonic() + 10
    while handler.batches != [2] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert handler.batches == [2]  # the first drain waits on the model with its batch
    assert len(_drain_ids()) == 1  # and queued another drain for the rest
    second = _drain_in_thread(results)
    while handler.batches != [2, 2] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert handler.batches == [2, 2]  # both batches are with the model at once
    handler.gate.set()
    first.join(timeout=10)
    second.join(timeout=10)
    assert sorted(result["examples"] for result in results) == [2, 2]
    assert not Example.objects.exclude(status=ExampleStatus.MODEL_ANSWERED).exists()


def test_a_drain_past_its_budget_leaves_the_rest_to_a_new_drain(
    client, worker, counting_model, no_wait, settings, monkeypatch
):
    settings.ANNOTATION_LIVE_BATCH_SIZE = 1
    monkeypatch.setattr(drain, "DRAIN_BUDGET_SECONDS", 0.0)
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE, "Ok."])
    [queued] = _drain_ids()
    assert drain.live_drain_job() == {"examples": 1}  # one batch, then the budget is spent
    # The drain run here cleared the flag; past its budget it queued a drain for the rest.
    assert len(_drain_ids()) == 2 and _drain_ids()[0] == queued
    connection = django_rq.get_connection(LIVE_QUEUE)
    assert connection.llen(live_loop.PENDING_KEY) == 2
    assert connection.exists(live_loop.DRAIN_QUEUED_KEY)
    run_jobs()
    assert counting_model.handler.batches == [1, 1, 1]
    assert not Example.objects.exclude(status=ExampleStatus.MODEL_ANSWERED).exists()


def test_examples_of_two_models_get_one_call_per_model(
    client, worker, sentiment_task, owner, counting_model, model_server_factory, no_wait
):
    other_handler = CountingHandler()
    other = put_in_loop(
        sentiment_task, owner, model_server_factory(other_handler).url, name="other"
    )
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE, "Ok.", "Fine."])
    examples = list(Example.objects.order_by("pk"))
    Example.objects.filter(pk__in=[examples[1].pk, examples[3].pk]).update(model=other)
    Example.objects.filter(pk__in=[examples[0].pk, examples[2].pk]).update(model=counting_model)
    run_jobs()
    assert counting_model.handler.batches == [2]
    assert other_handler.batches == [2]
    for example in Example.objects.all():
        assert example.status == ExampleStatus.MODEL_ANSWERED


def test_an_answer_that_does_not_fit_fails_only_its_own_example(
    client, worker, sentiment_task, owner, model_server_factory, redis_connection, no_wait
):
    """The protocol refuses a whole reply when one output is wrong: the batch is then asked
    one example at a time, so the others keep their answers."""
    handler = NonsenseForOneHandler()
    put_in_loop(sentiment_task, owner, model_server_factory(handler).url, name="odd")
    client.force_login(worker)
    _submit_many(client, [POSITIVE, "Utter nonsense here.", NEGATIVE])
    run_jobs()
    assert handler.batches == [3, 1, 1, 1]
    first, odd, last = Example.objects.order_by("pk")
    assert first.status == last.status == ExampleStatus.MODEL_ANSWERED
    assert odd.status == ExampleStatus.MODEL_FAILED
    assert odd.model_error_code.startswith("model.")
    page = client.get(f"/tasks/sentiment/examples/{odd.pk}/")
    assert b'id="model-failed"' in page.content


def test_a_model_that_cannot_be_reached_fails_the_whole_batch_at_once(
    client, worker, counting_model, no_wait
):
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE])
    counting_model.handler.batches.clear()
    Example.objects.update(model=counting_model)
    from models_hub.models import RegisteredModel

    RegisteredModel.objects.filter(pk=counting_model.pk).update(endpoint_url="http://127.0.0.1:9/")
    run_jobs()
    assert counting_model.handler.batches == []
    failed = list(Example.objects.all())
    assert [e.status for e in failed] == [ExampleStatus.MODEL_FAILED] * 2
    assert len({e.model_error_code for e in failed}) == 1


def test_a_repeated_entry_is_asked_once_and_a_missing_example_is_skipped(
    client, worker, counting_model, no_wait
):
    client.force_login(worker)
    _submit_many(client, [POSITIVE])
    example = Example.objects.get()
    connection = django_rq.get_connection(LIVE_QUEUE)
    connection.rpush(live_loop.PENDING_KEY, f"{example.pk}:1", "999999:1")
    run_jobs()
    assert counting_model.handler.batches == [1]  # the example once, the unknown one never
    assert live_loop.wait_for_live_answer(live_loop.live_job_id(999999, 1), 0.05) == {}


def test_a_malformed_entry_of_the_list_is_logged_and_left(
    client, worker, counting_model, no_wait, caplog
):
    client.force_login(worker)
    _submit_many(client, [POSITIVE])
    connection = django_rq.get_connection(LIVE_QUEUE)
    connection.rpush(live_loop.PENDING_KEY, "<script>", "12:x")
    with caplog.at_level(logging.ERROR, logger="annotation.live.drain"):
        run_jobs()
    assert Example.objects.get().status == ExampleStatus.MODEL_ANSWERED
    assert "malformed entry" in caplog.text and "'<script>'" in caplog.text
    assert connection.llen(live_loop.PENDING_KEY) == 0


def test_a_lost_drain_flag_expires(redis_connection):
    """A web process that dies between the flag and the job holds drains back for the flag's
    time to live at most."""
    live_loop.example_queue(5, 1, timeout=30)
    ttl = redis_connection.ttl(live_loop.DRAIN_QUEUED_KEY)
    assert 0 < ttl <= live_loop.DRAIN_QUEUED_TTL_SECONDS


def test_a_drain_reads_its_batch_once_and_stores_the_answers_in_one_transaction(
    client, worker, counting_model, no_wait, django_assert_max_num_queries
):
    """One read of the four examples (with their models, configs and contexts), one UPDATE
    per answer in one transaction (with its BEGIN where the driver sends one); the counters
    go to Redis."""
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE, POSITIVE + " Again.", NEGATIVE + " Again."])
    with django_assert_max_num_queries(7):
        assert drain.live_drain_job() == {"examples": 4}
    assert counting_model.handler.batches == [4]
    flush_counters()
    assert RoundStats.objects.get().fooled == 2


def test_an_answer_that_cannot_be_stored_fails_only_its_own_example(
    client, worker, counting_model, no_wait, monkeypatch, caplog
):
    """If the batch's transaction fails, the answers are stored one by one; the one that
    cannot be stored fails its example with a message, the others are answered."""
    from annotation.services import answers

    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE, "Ok."])
    broken = Example.objects.order_by("pk")[1].pk
    store = answers.examples_record_model_answers

    def fails(batch):
        if len(batch) > 1:
            raise RuntimeError("the batch's transaction failed")
        if batch[0].example.pk == broken:
            raise ValueError("this answer cannot be stored")
        return store(batch)

    monkeypatch.setattr(answers, "examples_record_model_answers", fails)
    with caplog.at_level(logging.ERROR, logger="annotation.live.drain"):
        run_jobs()
    statuses = dict(Example.objects.values_list("pk", "status"))
    assert statuses.pop(broken) == ExampleStatus.MODEL_FAILED
    assert set(statuses.values()) == {ExampleStatus.MODEL_ANSWERED}
    assert Example.objects.get(pk=broken).model_error_code == "model.error"
    assert "storing the answer of example" in caplog.text
    answer = live_loop.wait_for_live_answer(live_loop.live_job_id(broken, 1), 0.05)
    assert answer["status"] == ExampleStatus.MODEL_FAILED


def test_a_batch_too_slow_for_the_read_timeout_is_asked_one_example_at_a_time(
    client, worker, sentiment_task, owner, model_server_factory, redis_connection, no_wait
):
    """The owner set the read timeout for one example; a batch of three takes three times as
    long and times out. Each example alone fits, and is answered."""
    handler = SlowPerItemHandler(0.3)
    model = serve_in_loop(sentiment_task, owner, model_server_factory, handler, "slow")
    from models_hub.models import RegisteredModel

    RegisteredModel.objects.filter(pk=model.pk).update(read_timeout=0.5)
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE, "Ok."])
    run_jobs()
    # The batch of three (with the client's retry), then each example once on its own (the
    # server's threads may record them interleaved).
    assert handler.batches[0] == 3 and handler.batches.count(1) == 3
    assert set(handler.batches) == {1, 3}
    assert not Example.objects.exclude(status=ExampleStatus.MODEL_ANSWERED).exists()


def test_a_status_poll_queues_a_drain_only_for_pending_examples_with_the_flag_free(
    redis_connection,
):
    queue = django_rq.get_queue(LIVE_QUEUE)
    live_loop.ensure_drain(60)
    assert queue.count == 0  # nothing pending
    redis_connection.rpush(live_loop.PENDING_KEY, "7:1")
    redis_connection.set(live_loop.DRAIN_QUEUED_KEY, "a-drain-at-work")
    live_loop.ensure_drain(60)
    assert queue.count == 0  # the holder takes it
    redis_connection.delete(live_loop.DRAIN_QUEUED_KEY)  # its hold lapsed
    live_loop.ensure_drain(60)
    live_loop.ensure_drain(60)
    assert queue.count == 1
    assert redis_connection.get(live_loop.DRAIN_QUEUED_KEY) == b"1"


# -- claims, leases and the watchdog ----------


def test_a_drain_holds_its_examples_in_a_claim_under_a_lease_while_it_works(
    client, worker, sentiment_task, owner, model_server_factory, redis_connection, no_wait
):
    """While the model answers, the drain's examples are in its claim (not in the pending
    list) and its lease lives; once stored, claim, lease and token are gone."""
    seen = {}

    class WatchingHandler(CountingHandler):
        def predict(self, batch):
            tokens = [token.decode() for token in redis_connection.smembers(drain.DRAINS_KEY)]
            seen["tokens"] = tokens
            seen["claimed"] = [redis_connection.llen(drain.claimed_key(t)) for t in tokens]
            seen["leases"] = [redis_connection.exists(drain.lease_key(t)) for t in tokens]
            seen["pending"] = redis_connection.llen(live_loop.PENDING_KEY)
            return super().predict(batch)

    serve_in_loop(sentiment_task, owner, model_server_factory, WatchingHandler(), "watched")
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE])
    run_jobs()
    assert seen == {"tokens": seen["tokens"], "claimed": [2], "leases": [1], "pending": 0}
    [token] = seen["tokens"]
    assert not redis_connection.exists(drain.claimed_key(token), drain.lease_key(token))
    assert not redis_connection.smembers(drain.DRAINS_KEY)
    assert not Example.objects.exclude(status=ExampleStatus.MODEL_ANSWERED).exists()


def test_a_drain_that_raises_gives_its_claim_back_to_the_list(
    client, worker, counting_model, no_wait, monkeypatch, redis_connection
):
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE])
    django_rq.get_queue(LIVE_QUEUE).empty()

    def broken(pending):
        raise RuntimeError("a bug in the drain")

    monkeypatch.setattr(drain, "answer_batch", broken)
    with pytest.raises(RuntimeError):
        drain.live_drain_job()
    assert redis_connection.llen(live_loop.PENDING_KEY) == 2
    assert not redis_connection.smembers(drain.DRAINS_KEY)
    monkeypatch.undo()
    assert drain.live_drain_job() == {"examples": 2}
    assert not Example.objects.exclude(status=ExampleStatus.MODEL_ANSWERED).exists()


def test_the_watchdog_gives_a_dead_drains_claim_back_and_queues_a_drain(
    client, worker, counting_model, no_wait, redis_connection
):
    """A drain killed mid-batch leaves its claim and its token; its lease lapses. The
    periodic check puts the claimed examples back on the list and queues a drain."""
    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE])
    queue = django_rq.get_queue(LIVE_QUEUE)
    queue.empty()
    items = redis_connection.lpop(live_loop.PENDING_KEY, 2)
    redis_connection.rpush(drain.claimed_key("dead"), *items)
    redis_connection.sadd(drain.DRAINS_KEY, "dead", "alive")
    redis_connection.rpush(drain.claimed_key("alive"), "999999:1")
    redis_connection.set(drain.lease_key("alive"), "1", px=60_000)
    redis_connection.delete(live_loop.DRAIN_QUEUED_KEY)

    outcome = watchdog.live_watchdog_job()

    assert outcome == {"reclaimed": 2, "stranded": 0, "drain_queued": 1}
    assert redis_connection.lrange(live_loop.PENDING_KEY, 0, -1) == items
    assert redis_connection.smembers(drain.DRAINS_KEY) == {b"alive"}  # a live lease is kept
    assert redis_connection.llen(drain.claimed_key("alive")) == 1
    assert queue.count == 1
    redis_connection.srem(drain.DRAINS_KEY, "alive")
    run_jobs()
    assert not Example.objects.exclude(status=ExampleStatus.MODEL_ANSWERED).exists()


def test_the_watchdog_requeues_examples_that_waited_too_long_in_no_list(
    client, worker, counting_model, no_wait, redis_connection, settings
):
    """Redis lost the list (a restart without persistence): examples awaiting their model for
    longer than ``ANNOTATION_SLOW_MODEL_SECONDS`` that are in no list go back on it; one
    still in the list, or not yet waiting that long, is left alone."""
    from datetime import timedelta

    from django.utils import timezone

    client.force_login(worker)
    _submit_many(client, [POSITIVE, NEGATIVE, "Ok."])
    lost, listed, recent = Example.objects.order_by("pk")
    redis_connection.flushdb()  # the restart
    redis_connection.rpush(live_loop.PENDING_KEY, live_loop.pending_item(listed.pk, 1))
    long_ago = timezone.now() - timedelta(seconds=settings.ANNOTATION_SLOW_MODEL_SECONDS + 5)
    Example.objects.filter(pk__in=[lost.pk, listed.pk]).update(updated_at=long_ago)

    outcome = watchdog.live_watchdog_job()

    assert outcome["stranded"] == 1 and outcome["drain_queued"] == 1
    pending = redis_connection.lrange(live_loop.PENDING_KEY, 0, -1)
    assert pending == [f"{listed.pk}:1".encode(), f"{lost.pk}:1".encode()]
    run_jobs()
    statuses = dict(Example.objects.values_list("pk", "status"))
    assert statuses[lost.pk] == statuses[listed.pk] == ExampleStatus.MODEL_ANSWERED
    assert statuses[recent.pk] == ExampleStatus.AWAITING_MODEL


def test_a_slow_batch_keeps_its_lease_and_the_watchdog_leaves_it(
    client,
    worker,
    sentiment_task,
    owner,
    model_server_factory,
    redis_connection,
    no_wait,
    monkeypatch,
):
    """The lease is renewed while the model answers, however long it takes."""
    monkeypatch.setattr(drain, "LEASE_MS", 300)
    monkeypatch.setattr(drain, "LEASE_RENEW_SECONDS", 0.05)
    handler = SlowPerItemHandler(1.0)
    serve_in_loop(sentiment_task, owner, model_server_factory, handler, "slow")
    client.force_login(worker)
    _submit_many(client, [POSITIVE])
    django_rq.get_queue(LIVE_QUEUE).empty()
    results: list = []
    thread = _drain_in_thread(results)
    deadline = time.monotonic() + 10
    while not handler.batches and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.6)  # twice the lease, inside the model call
    assert watchdog.live_watchdog_job()["reclaimed"] == 0
    thread.join(timeout=10)
    assert results == [{"examples": 1}]
    assert redis_connection.llen(live_loop.PENDING_KEY) == 0
    assert handler.batches == [1]
