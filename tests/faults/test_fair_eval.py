"""A slow model cannot starve the others: with two real eval workers, a model that answers
each batch in 20 s holds one of them, and another model's one-shard run is done before the
slow model has answered its first batch. With one worker, a model that trickles its answers
gives the worker back at the end of its turn (``EVAL_SHARD_SLICE_SECONDS``), and a fast model
whose run was created later finishes first.

The workers are real ``manage.py rqworker eval`` processes (``leaderboards.jobs.EvalWorker``)
on the test's committed data; the model servers are real loopback HTTP servers.
"""

from __future__ import annotations

import threading

import pytest

from leaderboards.models import EvaluationRun, RunStatus
from leaderboards.services.runs import evaluation_run_create
from tests.faults.conftest import WorkerProcess, wait_for
from tests.leaderboards.evalkit import (  # noqa: F401 - fixtures
    KeywordSentiment,
    TricklingSentiment,
    eval_owner,
    eval_task,
    import_sentiment,
    make_model,
    trickling,
)
from tests.leaderboards.evalkit import serving as serving_model

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_BATCH_SECONDS = 20


class SlowSentiment(KeywordSentiment):
    """Answers each batch after ``SLOW_BATCH_SECONDS`` (at once after ``release``); counts the
    batches it is answering at the same time."""

    def __init__(self):
        super().__init__()
        self.released = threading.Event()
        self.started = 0
        self.answered = 0
        self.in_flight = 0
        self.most_in_flight = 0

    def predict(self, batch):
        with self.lock:
            self.started += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.released.wait(SLOW_BATCH_SECONDS)
        try:
            return super().predict(batch)
        finally:
            with self.lock:
                self.in_flight -= 1
                self.answered += 1


def test_a_slow_model_holds_one_worker_and_the_others_go_on(
    eval_task,  # noqa: F811
    eval_owner,  # noqa: F811
    redis_connection,
    tmp_path,
):
    log_path = tmp_path / "rqworker.log"
    dataset = import_sentiment(eval_task, 8, evaluate=False)
    slow_handler = SlowSentiment()
    workers: list[WorkerProcess] = []
    with serving_model(slow_handler) as slow, serving_model(KeywordSentiment()) as fast:
        slow_model = make_model(
            eval_task,
            eval_owner,
            slow.url,
            name="slow",
            batch_size=2,
            max_concurrency=1,
            read_timeout=SLOW_BATCH_SECONDS + 10,
        )
        fast_model = make_model(eval_task, eval_owner, fast.url, name="fast")
        try:
            workers = [WorkerProcess(log_path).start() for _ in range(2)]
            # Four shards of one batch each: before, each worker took one and waited 20 s.
            slow_run = evaluation_run_create(
                slow_model, dataset, shard_size=2, include_perturbations=False
            )
            wait_for(lambda: slow_handler.started, 60, "the slow model's first batch", log_path)
            fast_run = evaluation_run_create(fast_model, dataset, include_perturbations=False)

            def fast_run_done():
                fast_run.refresh_from_db()
                return fast_run.status in (RunStatus.DONE, RunStatus.FAILED)

            wait_for(fast_run_done, SLOW_BATCH_SECONDS - 5, "the fast model's run", log_path)
            assert fast_run.status == RunStatus.DONE and fast_run.done == 8
            # The slow model answered nothing meanwhile, and held one slot only.
            assert slow_handler.answered == 0
            assert slow_handler.most_in_flight == 1
            assert EvaluationRun.objects.get(pk=slow_run.pk).status == RunStatus.RUNNING
            slow_handler.released.set()  # answer at once from now on: the slow run finishes

            def slow_run_done():
                slow_run.refresh_from_db()
                return slow_run.status in (RunStatus.DONE, RunStatus.FAILED)

            wait_for(slow_run_done, 60, "the slow model's run", log_path)
            assert slow_run.status == RunStatus.DONE and slow_run.done == 8
            assert slow_handler.most_in_flight == 1
        finally:
            slow_handler.released.set()
            for worker in workers:
                worker.stop()


TRICKLE_BATCH_SECONDS = 2.0
TRICKLED_EXAMPLES = 6


def _finished(run) -> bool:
    run.refresh_from_db()
    return run.status in (RunStatus.DONE, RunStatus.FAILED)


def test_a_trickling_model_gives_the_only_worker_back_at_the_end_of_its_turn(
    eval_task,  # noqa: F811
    eval_owner,  # noqa: F811
    redis_connection,
    tmp_path,
):
    """One eval worker, turns of 1 s. The trickling model answers each one-example batch
    over 2 s (within its timeouts, so it is not failing); its run is one shard of six
    batches. Before, its first job queued all six and held the worker until the last was
    answered, and the fast model's run, created meanwhile, came after. Now its turn ends
    after the batch in flight (the margin: one batch per HTTP thread), the queued ones are
    cancelled, and its shard waits again behind the fast model's: the fast model's
    examples all reach it before the trickling model's third batch, and both runs end with
    one prediction per example. Asserted by order and state, not by time."""
    log_path = tmp_path / "rqworker.log"
    dataset = import_sentiment(eval_task, TRICKLED_EXAMPLES, evaluate=False)
    events: list[tuple[str, str]] = []
    slow_handler = TricklingSentiment("slow", TRICKLE_BATCH_SECONDS, events=events)
    fast_handler = TricklingSentiment("fast", 0.0, events=events)
    worker = None
    with trickling(slow_handler) as slow, trickling(fast_handler) as fast:
        slow_model = make_model(
            eval_task,
            eval_owner,
            slow.url,
            name="trickler",
            batch_size=1,
            max_concurrency=1,
            connect_timeout=0.5,
            read_timeout=5.0,
        )
        fast_model = make_model(eval_task, eval_owner, fast.url, name="fast")
        try:
            worker = WorkerProcess(log_path, env={"EVAL_SHARD_SLICE_SECONDS": "1"}).start()
            slow_run = evaluation_run_create(slow_model, dataset, include_perturbations=False)
            wait_for(lambda: events, 60, "the trickling model's first batch", log_path)
            fast_run = evaluation_run_create(fast_model, dataset, include_perturbations=False)
            wait_for(lambda: _finished(fast_run), 120, "the fast model's run", log_path)
            wait_for(lambda: _finished(slow_run), 120, "the trickling model's run", log_path)
        finally:
            if worker is not None:
                worker.stop()
    assert fast_run.status == RunStatus.DONE and fast_run.done == TRICKLED_EXAMPLES
    assert slow_run.status == RunStatus.DONE and slow_run.done == TRICKLED_EXAMPLES
    order = [name for name, _ in events]
    assert order.count("fast") == TRICKLED_EXAMPLES
    assert order.index("fast") <= 2, order  # before the trickling model's third batch
    slow_uids = [uid for name, uid in events if name == "slow"]
    assert sorted(slow_uids) == sorted(f"u{index}" for index in range(TRICKLED_EXAMPLES))
    assert slow_run.predictions.count() == TRICKLED_EXAMPLES
