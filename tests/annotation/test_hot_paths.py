"""Hot-path guarantees: one lock order for the cached counters, deadlocks retried, the
parsed config shared by every request of a process."""

from __future__ import annotations

import psycopg
import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext

from annotation import services, stats
from tasks import models as task_models
from tests.factories import ContextFactory, ExampleFactory, UserFactory


def _updated_tables(queries) -> list[str]:
    order = []
    for query in queries:
        sql = query["sql"]
        if sql.startswith(("UPDATE", "INSERT")):
            table = sql.split('"')[1]
            counters = ("tasks_context", "annotation_workerstats", "annotation_roundstats")
            # A missing row is an UPDATE then an INSERT of the same table: count it once.
            if table in counters and (not order or order[-1] != table):
                order.append(table)
    return order


LOCK_ORDER = ["tasks_context", "annotation_workerstats", "annotation_roundstats"]


@pytest.mark.django_db
def test_counters_are_taken_context_then_worker_then_round(task):
    context = ContextFactory(task=task)
    example = ExampleFactory(task=task, context=context, model_wrong=None, time_spent_ms=1200)
    with CaptureQueriesContext(connection) as created:
        stats.stats_example_created(example)
    assert _updated_tables(created) == ["annotation_workerstats", "annotation_roundstats"]

    example.model_wrong = True
    with CaptureQueriesContext(connection) as verdict:
        stats.stats_example_verdict(example)
    assert _updated_tables(verdict) == LOCK_ORDER

    with CaptureQueriesContext(connection) as retracted:
        stats.stats_example_retracted(example)
    assert _updated_tables(retracted) == LOCK_ORDER  # one move, not two


@pytest.mark.django_db
def test_time_spent_moves_with_the_example_in_one_update(task):
    example = ExampleFactory(task=task, model_wrong=None, time_spent_ms=1500)
    stats.stats_example_created(example)  # creates the rows
    again = ExampleFactory(task=task, user=example.user, model_wrong=None, time_spent_ms=500)
    with CaptureQueriesContext(connection) as queries:
        stats.stats_example_created(again)
    assert _updated_tables(queries) == ["annotation_workerstats", "annotation_roundstats"]
    row = stats.WorkerStats.objects.get(user=example.user)
    assert (row.examples, row.time_spent_ms) == (2, 2000)


def _deadlock() -> OperationalError:
    error = OperationalError("deadlock detected")
    error.__cause__ = psycopg.errors.DeadlockDetected("deadlock detected")
    return error


@pytest.mark.django_db(transaction=True)
def test_a_deadlocked_service_runs_again():
    calls = []

    @services._retry_on_deadlock
    def service():
        calls.append(1)
        if len(calls) < 3:
            raise _deadlock()
        return "done"

    assert service() == "done" and len(calls) == 3


@pytest.mark.django_db(transaction=True)
def test_other_errors_and_endless_deadlocks_are_raised():
    @services._retry_on_deadlock
    def broken():
        raise OperationalError("connection lost")

    with pytest.raises(OperationalError, match="connection lost"):
        broken()

    calls = []

    @services._retry_on_deadlock
    def stuck():
        calls.append(1)
        raise _deadlock()

    with pytest.raises(OperationalError):
        stuck()
    assert len(calls) == services.DEADLOCK_ATTEMPTS


@pytest.mark.django_db
def test_no_retry_inside_an_outer_transaction():
    calls = []

    @services._retry_on_deadlock
    def service():
        calls.append(1)
        raise _deadlock()

    with pytest.raises(OperationalError):
        service()  # the test's own transaction is the outer block
    assert len(calls) == 1


@pytest.mark.django_db
def test_parsed_config_is_shared_between_objects_and_follows_the_text(task):
    version = task.current_config
    first = task_models.TaskConfigVersion.objects.get(pk=version.pk).parsed
    second = task_models.TaskConfigVersion.objects.get(pk=version.pk).parsed
    assert first is second  # parsed once for the process

    edited = task_models.TaskConfigVersion.objects.get(pk=version.pk)
    edited.yaml_text = version.yaml_text.replace("\n", "\n\n", 1)
    assert edited.parsed is not first  # another text is parsed again
    assert edited.parsed == first


def test_the_parsed_config_cache_is_bounded(monkeypatch):
    from tests.factories import demo_config

    monkeypatch.setattr(task_models, "PARSED_CACHE_SIZE", 2)
    monkeypatch.setattr(task_models, "_parsed_cache", {})
    text = demo_config("sentiment")
    for version_id in range(5):
        task_models.parsed_config_cached(version_id, text)
    assert len(task_models._parsed_cache) == 2


@pytest.mark.django_db
def test_worker_without_rows_gets_them_created(task):
    user = UserFactory()
    example = ExampleFactory(task=task, user=user, model_wrong=None, time_spent_ms=700)
    stats.stats_example_created(example)
    row = stats.WorkerStats.objects.get(user=user)
    assert (row.examples, row.time_spent_ms) == (1, 700)


def _count_round_trips(monkeypatch, call):
    from redis.connection import AbstractConnection

    sent = []
    send = AbstractConnection.send_packed_command

    def counted(self, command, check_health=True):
        sent.append(command)
        return send(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    try:
        result = call()
    finally:
        monkeypatch.undo()
    return result, len(sent)


def test_a_live_example_is_queued_in_one_round_trip_and_a_drain_in_one_more(
    redis_connection, monkeypatch
):
    """The first example queues a drain job (two round trips: the list and the flag, then
    RQ's job); while that drain has not started, later examples only join the list (one)."""
    from rq import Queue
    from rq.job import Job, JobStatus

    from annotation import jobs

    # Warm-up: the queue object, its connection and RQ's check of the server's version.
    jobs.enqueue_live_prediction(40, 1, timeout=30)
    jobs._queue().empty()
    redis_connection.delete(jobs.PENDING_KEY, jobs.DRAIN_QUEUED_KEY)
    wait_id, trips = _count_round_trips(
        monkeypatch, lambda: jobs.enqueue_live_prediction(41, 1, timeout=30)
    )
    assert (wait_id, trips) == (jobs.live_job_id(41, 1), 2)
    [drain_id] = jobs._queue().job_ids
    drain = Job.fetch(drain_id, connection=redis_connection)
    assert drain.get_status() == JobStatus.QUEUED
    assert drain.func_name == "annotation.jobs.live_drain_job"
    assert drain.timeout == jobs.drain_timeout(30)
    assert "live" in [queue.name for queue in Queue.all(connection=redis_connection)]

    _, trips = _count_round_trips(
        monkeypatch, lambda: jobs.enqueue_live_prediction(42, 2, timeout=30)
    )
    assert trips == 1
    assert jobs._queue().job_ids == [drain_id]
    assert redis_connection.lrange(jobs.PENDING_KEY, 0, -1) == [b"41:1", b"42:2"]


@pytest.mark.django_db
def test_the_actor_holds_the_loaded_user_not_the_lazy_proxy(client):
    """Every read of an attribute through ``request.user``'s SimpleLazyObject costs a failed
    lookup and an exception: the actor and the annotation views hold the loaded user."""
    from django.contrib.auth.models import AnonymousUser
    from django.test import RequestFactory
    from django.utils.functional import SimpleLazyObject

    from annotation.actors import actor_from_request

    user = UserFactory()
    request = RequestFactory().get("/")
    request.session = {}
    request.user = SimpleLazyObject(lambda: user)
    actor = actor_from_request(request)
    assert type(actor.user) is type(user) and actor.user.pk == user.pk
    request.user = user  # already a model instance: kept as is
    assert actor_from_request(request).user is user
    request.user = SimpleLazyObject(AnonymousUser)
    assert actor_from_request(request) is None

    client.force_login(user)
    response = client.get("/tasks/no-such-task/create")
    assert type(response.wsgi_request.user) is type(user)


def _counters(task):
    return (
        sorted(
            stats.WorkerStats.objects.filter(task=task).values_list(
                "user_id", "campaign_worker_id", "examples", "fooled", "time_spent_ms"
            ),
            key=repr,
        ),
        list(stats.RoundStats.objects.filter(round__task=task).values_list("collected", "fooled")),
        sorted(task_models.Context.objects.filter(task=task).values_list("pk", "example_count")),
    )


# Both paths of the create and validate POSTs' writes where the database chains writes (one
# statement), else the transaction of one statement per write only.
_PATHS = (True, False) if connection.vendor == "postgresql" else (False,)


def _five_examples_of_a_crowd():
    """A task with five examples on two contexts: two users (one writes two) and a campaign
    worker (two). Returns the task and the user who wrote two."""
    from tests.factories import CampaignFactory, CampaignWorkerFactory, TaskFactory

    task = TaskFactory(config_name="sentiment")
    contexts = [ContextFactory(task=task) for _ in range(2)]
    first, second = UserFactory(), UserFactory()
    campaign = CampaignFactory(task=task, round=task.rounds.get(number=1))
    worker = CampaignWorkerFactory(campaign=campaign)
    people = [first, second, first, worker, worker]
    _submit_all(task, people, [contexts[0], contexts[1], contexts[0], contexts[1], contexts[0]])
    return task, first


def _answer_counters(task):
    """The workers' and the round's counters (``_counters``), the round's retracted count,
    and each context's fooled count."""
    return (
        _counters(task),
        list(stats.RoundStats.objects.filter(round__task=task).values_list("retracted")),
        sorted(task_models.Context.objects.filter(task=task).values_list("pk", "fooled_count")),
    )


def _submit_all(task, people, contexts):
    from annotation.actors import Actor

    round_ = task.rounds.get(number=1)
    for index, (person, context) in enumerate(zip(people, contexts, strict=True)):
        actor = (
            Actor(user=person) if not hasattr(person, "campaign") else Actor(campaign_worker=person)
        )
        services.example_submit(
            task=task,
            round_=round_,
            actor=actor,
            context=context,
            data={"statement": f"It is fine {index}", "label": "positive"},
            time_spent_ms=100 * (index + 1),
        )


@pytest.mark.django_db
def test_one_statement_moves_the_counters_the_orm_path_moves(monkeypatch):
    """On PostgreSQL the new example and its counters are one statement; elsewhere a
    transaction of four. Both leave the same counters, missing rows created (a first example
    of a worker, of a round; a campaign worker), and equal to a recount."""
    results = []
    for chained in _PATHS:
        monkeypatch.setattr(services, "chains_writes", lambda chained=chained: chained)
        task, _first = _five_examples_of_a_crowd()
        moved = _counters(task)
        stats.stats_recompute(task)
        assert _counters(task) == moved
        workers = sorted(row[2:] for row in moved[0])  # (examples, fooled, time spent)
        results.append((workers, moved[1], sorted(n for _, n in moved[2])))
    assert results[0] == results[-1]
    assert results[0] == ([(1, 0, 200), (2, 0, 400), (2, 0, 900)], [(5, 0)], [2, 3])


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="chained writes: PostgreSQL")
def test_the_statement_takes_the_counter_rows_context_then_worker_then_round(task):
    context = ContextFactory(task=task)
    with CaptureQueriesContext(connection) as captured:
        _submit_all(task, [UserFactory()], [context])
    [statement] = [q["sql"] for q in captured if q["sql"].startswith("WITH")]
    positions = [statement.index(f'AS (UPDATE "{LOCK_ORDER[0]}"')] + [
        statement.index(f'AS (INSERT INTO "{table}"') for table in LOCK_ORDER[1:]
    ]
    assert positions == sorted(positions)
    # Each write joins the row count of the one before it: PostgreSQL runs them in order.
    for previous in ("inserted", "write_0", "write_1"):
        assert f"FROM (SELECT count(*) FROM {previous}) AS after_{previous}" in statement


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="chained writes: PostgreSQL")
def test_the_statement_stays_within_psycopgs_cache_of_converted_statements(task):
    """psycopg converts a statement's text once and caches it, but only for statements of at
    most 50 parameters and 4096 bytes: the counter rows' upserts write their fixed columns'
    defaults into the text, so the chained statement of the create POST stays cached."""
    from psycopg import _queries

    from tests.factories import CampaignFactory, CampaignWorkerFactory

    captured = []

    def record(execute, sql, params, many, context):
        captured.append((sql, params))
        return execute(sql, params, many, context)

    campaign = CampaignFactory(task=task, round=task.rounds.get(number=1))
    people = [UserFactory(), CampaignWorkerFactory(campaign=campaign)]
    with connection.execute_wrapper(record):
        _submit_all(task, people, [ContextFactory(task=task) for _ in people])
    statements = [(sql, params) for sql, params in captured if sql.startswith("WITH")]
    assert len(statements) == 2
    for sql, params in statements:
        assert len(params) <= _queries.MAX_CACHED_STATEMENT_PARAMS
        assert len(sql.encode()) <= _queries.MAX_CACHED_STATEMENT_LENGTH


def _validation_counters(task):
    examples = sorted(
        stats.Example.objects.filter(task=task).values_list(
            "validation_count",
            "correct_count",
            "incorrect_count",
            "flagged_count",
            "flag_count",
            "validation_state",
        )
    )
    workers = sorted(
        stats.WorkerStats.objects.filter(task=task, validations__gt=0).values_list(
            "validations", "time_spent_ms", "verified_fooled", "rejected"
        )
    )
    rounds = list(
        stats.RoundStats.objects.filter(round__task=task).values_list(
            "validated", "verified_fooled"
        )
    )
    return examples, workers, rounds


@pytest.mark.django_db
def test_one_statement_counts_a_validation_as_the_orm_path_does(monkeypatch):
    """On PostgreSQL the validation, the example's counters and the validator's row are one
    statement; elsewhere three. Both leave the same counters (a validator's first row
    created, a campaign worker, an owner's verdict, settling by consensus), equal to a
    recount."""
    from annotation.actors import Actor
    from annotation.models import Example, ExampleStatus
    from tests.factories import CampaignFactory, CampaignWorkerFactory, TaskFactory

    results = []
    for chained in _PATHS:
        monkeypatch.setattr(services, "chains_writes", lambda chained=chained: chained)
        owner, writer = UserFactory(), UserFactory()
        task = TaskFactory(config_name="sentiment", owners=[owner])
        context = ContextFactory(task=task)
        _submit_all(task, [writer, writer, writer], [context] * 3)
        Example.objects.filter(task=task).update(
            status=ExampleStatus.MODEL_ANSWERED, model_wrong=True
        )
        examples = list(Example.objects.filter(task=task).order_by("pk"))
        campaign = CampaignFactory(task=task, kind="validate")
        crowd = [
            Actor(user=UserFactory()),
            Actor(user=UserFactory()),
            Actor(campaign_worker=CampaignWorkerFactory(campaign=campaign)),
        ]
        plan = [
            (examples[0], crowd[0], "correct"),
            (examples[0], crowd[1], "correct"),  # a consensus settles it
            (examples[1], crowd[0], "flagged"),
            (examples[1], crowd[2], "incorrect"),
            (examples[2], crowd[2], "correct"),
            (examples[2], Actor(user=owner), "incorrect"),  # the owner settles it
        ]
        for index, (example, actor, label) in enumerate(plan):
            services.validation_submit(
                example_id=example.pk,
                actor=actor,
                label=label,
                metadata={"flag_reason": "unclear"} if label == "flagged" else {},
                time_spent_ms=1000 * (index + 1),
            )
        counted = _validation_counters(task)
        stats.stats_recompute(task)
        assert _validation_counters(task) == counted
        results.append(counted)
    assert results[0] == results[-1]
    examples, workers, rounds = results[0]
    assert [row[:4] for row in examples] == [(2, 0, 1, 1), (2, 1, 1, 0), (2, 2, 0, 0)]
    assert [row[:2] for row in workers] == [(1, 2000), (2, 4000), (2, 9000)]


@pytest.mark.django_db
def test_one_statement_stores_an_answer_and_its_counters_as_the_transaction_does(monkeypatch):
    """On PostgreSQL the live job stores each answer with its verdict's counters in one
    statement; elsewhere the batch is one transaction. Both leave the same examples and
    counters (a campaign worker; a verdict that moves nothing; an example retracted after the
    job read it, whose answer is stored without counting), equal to a recount."""
    from annotation import jobs
    from annotation.actors import Actor
    from annotation.models import Example, ExampleStatus

    results = []
    for chained in _PATHS:
        monkeypatch.setattr(services, "chains_writes", lambda chained=chained: chained)
        task, first = _five_examples_of_a_crowd()
        Example.objects.filter(task=task).update(status=ExampleStatus.AWAITING_MODEL)
        read = jobs._examples_for_job(
            list(Example.objects.filter(task=task).values_list("pk", flat=True))
        )
        ids = sorted(read)
        services.example_retract(Example.objects.get(pk=ids[2]), Actor(user=first))
        labels = ["negative", "positive", "negative", "neutral", "positive"]  # 3 fool it
        stored = services.examples_record_model_answers(
            [
                services.ModelAnswer(read[pk], {"label": label}, 12.5, "v1")
                for pk, label in zip(ids, labels, strict=True)
            ]
        )
        assert [stored[pk].model_wrong for pk in ids] == [True, False, True, True, False]
        rows = list(
            Example.objects.filter(task=task)
            .order_by("pk")
            .values_list("status", "model_wrong", "model_output", "model_version", "retracted")
        )
        counted = _answer_counters(task)
        stats.stats_recompute(task)
        assert _answer_counters(task) == counted
        results.append((rows, *counted))
    for rows, *_ in results:
        assert [row[0] for row in rows] == [ExampleStatus.MODEL_ANSWERED] * 5
        assert [row[4] for row in rows] == [False, False, True, False, False]
    normalised = [
        (rows, [row[2:] for row in workers], rounds, retracted, [n for _, n in contexts])
        for rows, (workers, rounds, _example_counts), retracted, contexts in results
    ]
    assert normalised[0] == normalised[-1]
    workers, rounds, retracted, fooled = normalised[0][1:]
    assert sorted(workers) == [(1, 0, 200), (1, 1, 400), (2, 1, 900)]  # examples, fooled, ms
    assert (rounds, retracted, sorted(fooled)) == ([(4, 2)], [(1,)], [1, 1])
