"""The counters' buffer in Redis and its flush into the counter rows."""

from __future__ import annotations

import socket

import pytest

from annotation.models import RoundStats, WorkerStats
from annotation.stats import buffer, counters
from annotation.stats.counters import CounterDeltas, CounterRow
from tasks.models import Context
from tests.factories import ContextFactory, ExampleFactory, UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("redis_connection")]


@pytest.fixture
def example(task):
    return ExampleFactory(
        task=task, context=ContextFactory(task=task), time_spent_ms=900, model_wrong=None
    )


def test_increments_wait_in_redis_until_a_flush_applies_them(example, redis_connection):
    buffer.counters_add(counters.example_created(example))
    buffer.counters_add(counters.context_served(example.context_id))
    assert not RoundStats.objects.exists()
    assert buffer.counters_buffered() == counters.example_created(example).merge(
        counters.context_served(example.context_id)
    )

    assert buffer.counters_flush() == 3

    assert RoundStats.objects.get(round_id=example.round_id).collected == 1
    worker = WorkerStats.objects.get(user_id=example.user_id)
    assert (worker.examples, worker.time_spent_ms, worker.task_id) == (1, 900, example.task_id)
    context = Context.objects.get(pk=example.context_id)
    assert (context.example_count, context.times_served) == (1, 1)
    assert not buffer.counters_buffered()
    assert not redis_connection.smembers(buffer.DIRTY_KEY)
    assert buffer.counters_flush() == 0  # nothing left


def test_increments_that_arrive_during_a_flush_wait_for_the_next(example, monkeypatch):
    buffer.counters_add(counters.example_created(example))
    apply = buffer.counters_apply

    def apply_while_another_arrives(deltas):
        apply(deltas)
        buffer.counters_add(CounterDeltas().add(CounterRow.round(example.round_id), {"fooled": 1}))

    monkeypatch.setattr(buffer, "counters_apply", apply_while_another_arrives)
    buffer.counters_flush()
    monkeypatch.undo()
    row = RoundStats.objects.get(round_id=example.round_id)
    assert (row.collected, row.fooled) == (1, 0)
    assert dict(buffer.counters_buffered().items()) == {
        CounterRow.round(example.round_id): {"fooled": 1}
    }
    buffer.counters_flush()
    row.refresh_from_db()
    assert (row.collected, row.fooled) == (1, 1)


def test_a_flush_that_fails_before_its_commit_keeps_the_buffer(example, monkeypatch):
    deltas = counters.example_created(example)
    buffer.counters_add(deltas)

    def broken(deltas):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(buffer, "counters_apply", broken)
    with pytest.raises(RuntimeError):
        buffer.counters_flush()
    monkeypatch.undo()
    assert buffer.counters_buffered() == deltas
    assert buffer.counters_flush() == 3
    assert RoundStats.objects.get(round_id=example.round_id).collected == 1


def test_one_flush_at_a_time(example, redis_connection):
    buffer.counters_add(counters.example_created(example))
    redis_connection.set(buffer.FLUSH_LOCK_KEY, "another flush", ex=30)
    assert buffer.counters_flush() == 0
    assert not RoundStats.objects.exists()
    redis_connection.delete(buffer.FLUSH_LOCK_KEY)
    assert buffer.counters_flush() == 3


def test_a_counter_never_goes_below_zero_and_missing_rows_are_created(task):
    user = UserFactory()
    round_id = task.rounds.get().pk
    row = CounterRow.worker(
        task_id=task.pk, round_id=round_id, user_id=user.pk, campaign_worker_id=None
    )
    buffer.counters_add(CounterDeltas().add(row, {"examples": -1, "retracted": 1}))
    buffer.counters_flush()
    worker = WorkerStats.objects.get(user=user)
    assert (worker.examples, worker.retracted) == (0, 1)
    buffer.counters_add(CounterDeltas().add(row, {"examples": -3}))
    buffer.counters_flush()
    worker.refresh_from_db()
    assert worker.examples == 0


def test_rows_of_deleted_contexts_and_rounds_are_skipped(task):
    deltas = CounterDeltas().add(CounterRow.context(987654), {"times_served": 1})
    deltas.add(CounterRow.round(987654), {"collected": 1})
    buffer.counters_add(deltas)
    assert buffer.counters_flush() == 2
    assert not RoundStats.objects.exists()
    assert not buffer.counters_buffered()


def test_a_malformed_row_in_redis_is_dropped_and_logged(example, redis_connection, caplog):
    redis_connection.sadd(buffer.DIRTY_KEY, "table:1")
    redis_connection.hincrby(buffer.ROW_KEY_PREFIX + "table:1", "rows", 1)
    buffer.counters_add(counters.context_served(example.context_id))
    assert buffer.counters_flush() == 1
    assert "malformed counter row" in caplog.text
    assert not redis_connection.smembers(buffer.DIRTY_KEY)


def test_a_flush_writes_one_statement_per_row(task, django_assert_max_num_queries):
    users = [UserFactory() for _ in range(3)]
    examples = [
        ExampleFactory(task=task, user=user, model_wrong=None) for user in users for _ in range(2)
    ]
    for example in examples:
        buffer.counters_add(counters.example_created(example))
    buffer.counters_flush()  # creates the rows
    for example in examples:
        buffer.counters_add(counters.example_created(example))
    contexts = {example.context_id for example in examples}
    rows = len(contexts) + len(users) + 1
    # The rows' UPDATEs, and a savepoint at most (the transaction of one flush).
    with django_assert_max_num_queries(rows + 2):
        assert buffer.counters_flush() == rows


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_without_redis_the_increments_go_to_the_database_at_once(example, settings, caplog):
    url = f"redis://127.0.0.1:{_closed_port()}/0"
    settings.RQ_QUEUES = {
        name: {**options, "URL": url} for name, options in settings.RQ_QUEUES.items()
    }
    import django_rq.settings

    original = dict(django_rq.settings.QUEUES)
    django_rq.settings.QUEUES.update(settings.RQ_QUEUES)
    try:
        buffer.counters_add(counters.example_created(example))
    finally:
        django_rq.settings.QUEUES.update(original)
    assert RoundStats.objects.get(round_id=example.round_id).collected == 1
    assert "applied to the database at once" in caplog.text
