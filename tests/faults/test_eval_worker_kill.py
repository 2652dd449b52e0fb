"""kill -9 of an eval worker in the middle of a run, then a new worker: the run completes and
its Score equals that of an uninterrupted run of the same model outputs on the same dataset.

The workers are real ``manage.py rqworker eval`` processes (forking RQ workers, with
``leaderboards.jobs.EvalWorker``, which re-enqueues the shards whose job died with its worker).
They see the test's data because the test commits (``transaction=True``) and they are given
the test database's real name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from django.db import connection

from leaderboards import services
from leaderboards.models import EvaluationRun, EvaluationShard, Prediction, RunStatus, Score
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

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = 200
SHARD_SIZE = 50
# Job metrics depend on timing, not on the model's outputs.
JOB_METRICS = {"examples_per_second", "latency_p50_ms", "latency_p95_ms", "memory_utilization"}


class SlowKeywordSentiment(KeywordSentiment):
    """The deterministic keyword model, 20 ms per batch: a run of 200 takes a few seconds."""

    def predict(self, batch):
        time.sleep(0.02)
        return super().predict(batch)


def _database_url() -> str:
    """The URL of the database this test really uses (pytest-django's ``test_<name>``)."""
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    user = settings.get("USER") or ""
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    credentials = f"{user}{password}@" if user else ""
    host = settings.get("HOST") or "127.0.0.1"
    port = f":{settings['PORT']}" if settings.get("PORT") else ""
    return f"postgres://{credentials}{host}{port}/{settings['NAME']}"


class EvalWorkerProcess:
    """``manage.py rqworker eval`` in its own process group (killed with its job horse)."""

    def __init__(self, log_path: Path):
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        self.log = None

    def start(self) -> EvalWorkerProcess:
        from django.conf import settings

        env = dict(os.environ)
        env.update(
            DJANGO_SETTINGS_MODULE="dynatask_site.settings.test",
            DATABASE_URL=_database_url(),
            REDIS_URL=settings.RQ_QUEUES["eval"]["URL"],
            PYTHONUNBUFFERED="1",
        )
        self.log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "rqworker", "eval"]
            + ["--worker-class", "leaderboards.jobs.EvalWorker"],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def signal(self, number: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, number)

    def kill(self) -> None:
        """kill -9 the worker, then its job horse (RQ puts the horse in its own group)."""
        if self.process is None or self.process.poll() is not None:
            return
        horses = psutil.Process(self.process.pid).children(recursive=True)
        self.signal(signal.SIGKILL)  # first the worker: it must not see its horse die
        for horse in horses:
            with contextlib.suppress(psutil.NoSuchProcess):
                horse.kill()
        self.process.wait(timeout=10)
        psutil.wait_procs(horses, timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.signal(signal.SIGTERM)  # a warm shutdown: the horse ends its job
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.log is not None:
            self.log.close()
            self.log = None


def wait_for(predicate, seconds: float, what: str, log_path: Path | None = None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    tail = log_path.read_text(errors="replace")[-3000:] if log_path else ""
    raise AssertionError(f"timed out after {seconds}s waiting for {what}\n{tail}")


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
    workers: list[EvalWorkerProcess] = []
    with serving_model(SlowKeywordSentiment()) as server:
        fields = {"batch_size": 1, "max_concurrency": 1}
        reference = make_model(eval_task, eval_owner, server.url, name="reference", **fields)
        victim = make_model(eval_task, eval_owner, server.url, name="interrupted", **fields)
        try:
            # 1. The uninterrupted run (an in-process RQ worker, burst mode).
            baseline = services.evaluation_run_create(
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
            run = services.evaluation_run_create(
                victim, dataset, shard_size=SHARD_SIZE, include_perturbations=False
            )
            assert run.shards.count() == EXAMPLES // SHARD_SIZE
            first = EvalWorkerProcess(log_path).start()
            workers.append(first)

            def mid_run():
                stored = Prediction.objects.filter(run=run).count()
                running = run.shards.filter(status=RunStatus.RUNNING).exists()
                return 0 < stored < EXAMPLES - SHARD_SIZE and running

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
            workers.append(EvalWorkerProcess(log_path).start())

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
