"""kill -9 of an eval worker in the middle of a run, then a new worker: the run completes and
its Score equals that of an uninterrupted run of the same model outputs on the same dataset.

The workers are real ``manage.py rqworker eval`` processes (forking RQ workers, with
``leaderboards.jobs.EvalWorker``, which re-enqueues the shards whose job died with its worker).
They see the test's data because the test commits (``transaction=True``) and they are given
the test database's real name.
"""

from __future__ import annotations

import time

import pytest

from leaderboards.models import EvaluationRun, EvaluationShard, Prediction, RunStatus, Score
from leaderboards.services.runs import evaluation_run_create
from tests.faults.conftest import WorkerProcess, wait_for
from tests.leaderboards.evalkit import (  # noqa: F401 - fixtures
    KeywordSentiment,
    eval_owner,
    eval_task,
    import_sentiment,
    make_model,
    run_worker,
)
from tests.leaderboards.evalkit import serving as serving_model

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = 200
SHARD_SIZE = 50
# Job metrics depend on timing, not on the model's outputs.
JOB_METRICS = {"examples_per_second", "latency_p50_ms", "latency_p95_ms", "memory_utilization"}


class SlowKeywordSentiment(KeywordSentiment):
    """The deterministic keyword model, 20 ms per batch: a run of 200 takes a few seconds."""

    def predict(self, batch):
        time.sleep(0.02)
        return super().predict(batch)


def comparable(score: Score) -> dict:
    return {
        "metrics": {k: v for k, v in score.metrics.items() if k not in JOB_METRICS},
        "per_tag": score.per_tag,
        "main_value": score.main_value,
        "ci": (score.ci_low, score.ci_high),
        "example_count": score.example_count,
    }


def test_eval_worker_killed_mid_run_recovers_and_scores_like_an_uninterrupted_run(
    eval_task,  # noqa: F811
    eval_owner,  # noqa: F811
    redis_connection,
    tmp_path,
):
    log_path = tmp_path / "rqworker.log"
    dataset = import_sentiment(eval_task, EXAMPLES, evaluate=False)
    assert dataset.row_count == EXAMPLES
    workers: list[WorkerProcess] = []
    with serving_model(SlowKeywordSentiment()) as server:
        fields = {"batch_size": 1, "max_concurrency": 1}
        reference = make_model(eval_task, eval_owner, server.url, name="reference", **fields)
        victim = make_model(eval_task, eval_owner, server.url, name="interrupted", **fields)
        try:
            # 1. The uninterrupted run (an in-process RQ worker, burst mode).
            baseline = evaluation_run_create(
                reference, dataset, shard_size=SHARD_SIZE, include_perturbations=False
            )
            started = time.monotonic()
            while time.monotonic() - started < 60:
                run_worker()
                baseline.refresh_from_db()
                if baseline.status in (RunStatus.DONE, RunStatus.FAILED):
                    break
            assert baseline.status == RunStatus.DONE, baseline.error_message

            # 2. The same outputs, run by a real worker process killed -9 mid-run.
            run = evaluation_run_create(
                victim, dataset, shard_size=SHARD_SIZE, include_perturbations=False
            )
            assert run.shards.count() == EXAMPLES // SHARD_SIZE
            first = WorkerProcess(log_path).start()
            workers.append(first)

            def mid_run():
                # A later shard has just started: an earlier one is stored, and the running
                # one has written no progress yet (it writes every EVAL_PROGRESS_SECONDS, so
                # a shard with progress may be about to end).
                stored = Prediction.objects.filter(run=run).count()
                fresh = run.shards.filter(status=RunStatus.RUNNING, done=0).exists()
                return 0 < stored < EXAMPLES - SHARD_SIZE and fresh

            wait_for(mid_run, 60, "some predictions of a running run", log_path)
            time.sleep(0.2)  # into the shard (~1 s of model calls), not at its edge
            first.kill()
            run.refresh_from_db()
            stored_at_kill = Prediction.objects.filter(run=run).count()
            states = list(run.shards.values_list("index", "status", "done"))
            assert run.status in (RunStatus.QUEUED, RunStatus.RUNNING), (run.status, states)
            assert 0 < stored_at_kill < EXAMPLES, states
            # The shard whose job died with the worker.
            orphan = run.shards.get(status=RunStatus.RUNNING)

            # 3. A new worker: the orphaned shard is enqueued again and the run completes.
            workers.append(WorkerProcess(log_path).start())

            def finished():
                run.refresh_from_db()
                return run.status in (RunStatus.DONE, RunStatus.FAILED)

            wait_for(finished, 90, "the run to finish after the restart", log_path)
            assert run.status == RunStatus.DONE, (run.error_code, run.error_message)
        finally:
            for worker in workers:
                worker.stop()

    orphan.refresh_from_db()
    assert orphan.status == RunStatus.DONE and orphan.attempts >= 2
    assert not EvaluationShard.objects.filter(run=run).exclude(status=RunStatus.DONE).exists()
    # Exactly one prediction per example, and the same Score as the uninterrupted run.
    assert Prediction.objects.filter(run=run).count() == EXAMPLES
    assert run.done == EXAMPLES
    interrupted = Score.objects.get(model=victim, dataset=dataset)
    uninterrupted = Score.objects.get(model=reference, dataset=dataset)
    assert interrupted.run_id == run.pk
    assert comparable(interrupted) == comparable(uninterrupted)
    assert interrupted.example_count == EXAMPLES
    assert EvaluationRun.objects.get(pk=run.pk).finished_at is not None
