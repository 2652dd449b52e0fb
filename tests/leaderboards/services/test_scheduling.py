"""Fair evaluation: a model's shards take its slots in turn, wait without holding a worker,
give their turn after a time slice, and a dead job's slot is given on."""

from __future__ import annotations

import threading

import django_rq
import pytest

from leaderboards import jobs
from leaderboards.models import EvaluationRun, EvaluationShard, RunStatus
from leaderboards.services import scheduling
from leaderboards.services.runs import evaluation_run_create
from tests.factories import UserFactory
from tests.leaderboards.evalkit import (
    KeywordSentiment,
    import_sentiment,
    make_model,
    run_worker,
    serving,
)

pytestmark = pytest.mark.django_db(transaction=True)


def _queued_shards() -> list[int]:
    return [job.args[0] for job in django_rq.get_queue("eval").get_jobs()]


# -- slots and waiting shards (Redis only) ------------------------------------------------------
def test_a_model_holds_at_most_its_slots_and_waiting_shards_go_first_come(
    redis_connection, settings
):
    settings.EVAL_SHARDS_PER_MODEL = 2
    assert scheduling.model_slot_acquire(7, 1, "job-1", redis_connection)
    assert scheduling.model_slot_acquire(7, 2, "job-2", redis_connection)
    # A live job would hold its slot: this test's holders are live as far as RQ knows.
    django_rq.get_queue("eval").enqueue_call("builtins.print", job_id="job-1")
    django_rq.get_queue("eval").enqueue_call("builtins.print", job_id="job-2")
    assert not scheduling.model_slot_acquire(7, 3, "job-3", redis_connection)
    assert not scheduling.model_slot_acquire(7, 4, "job-4", redis_connection)
    assert not scheduling.model_slot_acquire(7, 3, "job-3b", redis_connection)  # keeps its place
    assert scheduling.shard_is_waiting(7, 3, redis_connection)
    # Another model's slots are its own.
    assert scheduling.model_slot_acquire(8, 5, "job-5", redis_connection)
    handed = scheduling.model_slot_release(7, "job-1", connection=redis_connection)
    assert [shard for shard, _ in handed] == [3]
    # The job enqueued for shard 3 finds its slot reserved.
    assert scheduling.model_slot_acquire(7, 3, handed[0][1], redis_connection)
    assert not scheduling.shard_is_waiting(7, 3, redis_connection)
    # Waiting again (a paused shard) goes after those already waiting.
    handed = scheduling.model_slot_release(7, "job-2", wait_again=2, connection=redis_connection)
    assert [shard for shard, _ in handed] == [4]


def test_the_slot_of_a_dead_job_is_dropped_when_another_shard_wants_it(redis_connection):
    assert scheduling.model_slot_acquire(7, 1, "killed-with-its-worker", redis_connection)
    # No such job in RQ: its worker died with it, so the slot is free again.
    assert scheduling.model_slot_acquire(7, 2, "job-2", redis_connection)
    assert not scheduling.shard_is_waiting(7, 2, redis_connection)


# -- shard jobs --------------------------------------------------------------------------------
def test_a_models_shards_run_one_at_a_time_and_hand_the_slot_on(
    eval_task, eval_owner, redis_connection, fast_client
):
    with serving(KeywordSentiment()) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 12, evaluate=False)
        run = evaluation_run_create(model, dataset, shard_size=4, include_perturbations=False)
        shards = list(run.shards.order_by("index").values_list("pk", flat=True))
        # One slot: one shard job is enqueued, the others wait without a job.
        assert _queued_shards() == shards[:1]
        assert all(scheduling.shard_is_waiting(model.pk, pk) for pk in shards[1:])
        # A job of a waiting shard (e.g. enqueued by hand) waits: it holds no worker.
        django_rq.get_queue("eval").enqueue_call(jobs.eval_shard_job, args=(shards[2],))
        run_worker()
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.done == 12
    assert not any(scheduling.shard_is_waiting(model.pk, pk) for pk in shards)


def test_slow_models_take_turns_with_the_others(
    eval_task, eval_owner, redis_connection, fast_client, settings
):
    """With a slice of 0 s a shard job sends one batch per HTTP thread, then waits again
    behind the other models' shards: the later, smaller run finishes first."""
    settings.EVAL_SHARD_SLICE_SECONDS = 0
    calls: list[str] = []
    lock = threading.Lock()

    class Logged(KeywordSentiment):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def predict(self, batch):
            with lock:
                calls.append(self.name)
            return super().predict(batch)

    with serving(Logged("big")) as big_server, serving(Logged("small")) as small_server:
        fields = {"batch_size": 2, "max_concurrency": 1}
        big = make_model(eval_task, eval_owner, big_server.url, name="big", **fields)
        small = make_model(eval_task, eval_owner, small_server.url, name="small", **fields)
        dataset = import_sentiment(eval_task, 20, evaluate=False)
        big_run = evaluation_run_create(big, dataset, include_perturbations=False)
        small_run = evaluation_run_create(small, dataset, include_perturbations=False)
        run_worker()
    for run in (big_run, small_run):
        run.refresh_from_db()
        assert run.status == RunStatus.DONE and run.done == 20
    # One shard each; each turn is one batch of 2: the two models alternate.
    assert calls[:6] == ["big", "small", "big", "small", "big", "small"]
    assert calls.count("big") == calls.count("small") == 10


def test_a_dataset_that_stops_sharing_its_inputs_fails_the_queued_runs_of_others(
    eval_task, eval_owner, redis_connection, fast_client
):
    stranger = UserFactory(username="stranger")
    handler = KeywordSentiment()
    with serving(handler) as server:
        model = make_model(eval_task, stranger, server.url)
        dataset = import_sentiment(eval_task, 4, evaluate=False, access_type="hidden")
        dataset.inputs_to_others = True
        dataset.save()
        run = evaluation_run_create(model, dataset)
        dataset.inputs_to_others = False
        dataset.save()
        run_worker()
    assert handler.calls == 0
    run.refresh_from_db()
    assert (run.status, run.error_code) == (RunStatus.FAILED, "run.inputs_private")
    assert run.done == 0


def test_recovery_leaves_waiting_shards_alone_and_gives_a_dead_jobs_slot_on(
    eval_task, eval_owner, redis_connection
):
    model = make_model(eval_task, eval_owner, "http://127.0.0.1:9/")
    dataset = import_sentiment(eval_task, 8, evaluate=False)
    run = evaluation_run_create(model, dataset, shard_size=4, include_perturbations=False)
    first, second = run.shards.order_by("index")
    # The first shard's job was taken by a worker that died: its slot is held by a dead job.
    django_rq.get_queue("eval").empty()
    EvaluationShard.objects.filter(pk=first.pk).update(status=RunStatus.RUNNING)
    EvaluationRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    assert scheduling.shard_is_waiting(model.pk, second.pk)
    assert jobs.shards_recover(redis_connection) == 2
    # The dead shard is enqueued again, and the waiting one gets the freed slot.
    assert sorted(_queued_shards()) == [first.pk, second.pk]
    assert not scheduling.shard_is_waiting(model.pk, second.pk)
