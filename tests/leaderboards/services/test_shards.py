"""Evaluation shards against real loopback model servers: resumable, skipping stored
predictions, failing with the first bad response, one raw response kept per batch."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.urls import reverse

from leaderboards.models import EvaluationRun, Prediction, RunStatus, Score
from leaderboards.services import shards
from leaderboards.services.runs import evaluation_run_create, evaluation_run_retry
from tests.leaderboards.evalkit import (
    KeywordSentiment,
    TricklingSentiment,
    import_sentiment,
    make_model,
    run_worker,
    serving,
    trickling,
)

pytestmark = pytest.mark.django_db(transaction=True)


def _score_fields(score):
    return (score.metrics["macro_f1"], score.per_tag, score.ci_low, score.ci_high)


def test_killed_shard_resumes_without_resending(
    eval_task, eval_owner, redis_connection, fast_client
):
    # Reference: an uninterrupted run on its own server.
    with serving(KeywordSentiment()) as server:
        reference_model = make_model(eval_task, eval_owner, server.url, name="reference")
        dataset = import_sentiment(eval_task, 30, evaluate=False)
        evaluation_run_create(reference_model, dataset, shard_size=100)
        run_worker()
    reference = Score.objects.get(model=reference_model, dataset=dataset)

    crashing = KeywordSentiment(fail_after=3)  # 3 batches of 4 succeed, then a crash
    with serving(crashing) as server:
        model = make_model(eval_task, eval_owner, server.url, name="crashing", max_concurrency=1)
        run = evaluation_run_create(model, dataset, shard_size=100)
        run_worker()
        run.refresh_from_db()
        assert run.status == RunStatus.FAILED
        assert run.error_code == "model.server_error"
        stored = Prediction.objects.filter(run=run).count()
        assert stored == 12
        first_uids = list(crashing.uids)

        crashing.fail_after = None  # the model is back
        evaluation_run_retry(run, user=eval_owner)
        run_worker()
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert run.done == 30
    resent = crashing.uids[len(first_uids) :]
    assert len(resent) == 30 - stored
    assert not set(resent) & set(first_uids)
    score = Score.objects.get(model=model, dataset=dataset)
    assert _score_fields(score) == _score_fields(reference)


def test_preinserted_predictions_are_skipped(eval_task, eval_owner, redis_connection, fast_client):
    handler = KeywordSentiment()
    with serving(handler) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 12, evaluate=False)
        run = evaluation_run_create(model, dataset, shard_size=100)
        for example in dataset.examples.order_by("position")[:5]:
            Prediction.objects.create(
                run=run, example=example, output={"label": "neutral", "prob": None}
            )
        run_worker()
    assert len(handler.uids) == 7
    assert Prediction.objects.filter(run=run).count() == 12


def test_bad_response_fails_run_with_excerpt_and_retry(
    eval_task, eval_owner, redis_connection, fast_client
):
    handler = KeywordSentiment(bad_label=True)
    with serving(handler) as server:
        model = make_model(eval_task, eval_owner, server.url, auth_token="sekret-token")
        dataset = import_sentiment(eval_task, 8, evaluate=False)
        run = evaluation_run_create(model, dataset)
        run_worker()
        run.refresh_from_db()
        assert run.status == RunStatus.FAILED
        assert run.error_code == "model.bad_response"
        assert "banana" in run.first_bad_response
        assert "sekret-token" not in run.first_bad_response + run.error_message
        assert not Score.objects.filter(model=model).exists()

        handler.bad_label = False
        evaluation_run_retry(run, user=eval_owner)
        run_worker()
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert run.first_bad_response == ""
    assert Score.objects.filter(model=model, dataset=dataset).count() == 1


def test_shard_writes_keep_one_raw_response_per_batch(
    eval_task, eval_owner, redis_connection, fast_client
):
    with serving(KeywordSentiment()) as server:
        model = make_model(eval_task, eval_owner, server.url, batch_size=4)
        dataset = import_sentiment(eval_task, 10, evaluate=False)
        run = evaluation_run_create(model, dataset, shard_size=100)
        run_worker()
    run.refresh_from_db()
    assert (run.status, run.done, run.model_version) == (RunStatus.DONE, 10, "keyword-1")
    rows = list(
        Prediction.objects.filter(run=run)
        .order_by("example__position")
        .values_list("output", "latency_ms", "model_version", "raw_excerpt", "error_code")
    )
    assert len(rows) == 10
    assert rows[0][0] == {
        "label": "positive",
        "prob": {"negative": 0.1, "positive": 0.8, "neutral": 0.1},
    }
    assert all(latency > 0 and version == "keyword-1" for _, latency, version, _, _ in rows)
    # Batches of 4: positions 0, 4 and 8 start one and carry its raw response.
    excerpts = [bool(excerpt) for _, _, _, excerpt, _ in rows]
    assert excerpts == [index in (0, 4, 8) for index in range(10)]
    assert '"positive"' in rows[0][3]
    assert all(code == "" for *_, code in rows)
    shard = run.shards.get()
    assert shard.done == 10 and len(shard.batch_latencies_ms) == 3 and shard.work_seconds > 0


def testpending_batches_read_a_small_first_chunk_then_whole_ones(
    eval_task, eval_owner, redis_connection, monkeypatch
):
    """Every example without a prediction comes once, in position order, whatever the
    first read's size (the shard's first requests leave after it)."""
    monkeypatch.setattr(shards, "READ_CHUNK", 5)
    model = make_model(eval_task, eval_owner, "http://127.0.0.1:9/")
    dataset = import_sentiment(eval_task, 23, evaluate=False)
    run = evaluation_run_create(model, dataset, shard_size=100)
    shard = run.shards.get()
    examples = list(dataset.examples.order_by("position").values_list("pk", flat=True))
    Prediction.objects.bulk_create(
        Prediction(run=run, example_id=pk, output={}) for pk in examples[3:6] + examples[20:]
    )
    expected = examples[:3] + examples[6:20]
    for first_chunk in (1, 2, 3, 5, 50):
        batches = list(shards.pending_batches(run, shard, 4, first_chunk=first_chunk))
        assert [pk for ids, _ in batches for pk in ids] == expected, first_chunk
        assert all(len(ids) <= 4 for ids, _ in batches)
        assert [len(inputs) for _, inputs in batches] == [len(ids) for ids, _ in batches]


class GatedSentiment(KeywordSentiment):
    """``KeywordSentiment`` that answers a batch only once the test lets one through."""

    def __init__(self):
        super().__init__()
        self.gate = threading.Semaphore(0)

    def predict(self, batch: list[dict]) -> list[dict]:
        if not self.gate.acquire(timeout=30):
            raise RuntimeError("the test let no batch through")
        return super().predict(batch)


def _run_in_thread(function, *args) -> threading.Thread:
    def target():
        try:
            function(*args)
        finally:
            connection.close()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def _next_done(run_id: int, previous: int, thread: threading.Thread) -> int:
    """Wait until the run's done count moves past ``previous``; return it (a sync, not a
    timing assertion: the wait only bounds a hung test)."""
    for _ in range(3000):
        done = EvaluationRun.objects.values_list("done", flat=True).get(pk=run_id)
        if done != previous:
            return done
        if not thread.is_alive():
            break
        time.sleep(0.01)
    raise AssertionError(f"the done count stayed at {previous}")


def test_a_run_smaller_than_a_write_chunk_shows_progress_within_its_shard(
    client, eval_task, eval_owner, redis_connection, fast_client, settings
):
    # Each answered batch is due at once, so every batch the server lets through shows.
    settings.EVAL_PROGRESS_SECONDS = 0
    handler = GatedSentiment()
    with serving(handler) as server:
        model = make_model(
            eval_task, eval_owner, server.url, name="gated", batch_size=50, max_concurrency=1
        )
        dataset = import_sentiment(eval_task, 241, evaluate=False)
        run = evaluation_run_create(model, dataset, include_perturbations=False)
        (shard,) = run.shards.all()
        thread = _run_in_thread(shards.shard_execute, shard.pk)
        client.force_login(eval_owner)
        observed = [0]
        pages = []
        while observed[-1] < 241:
            handler.gate.release()
            observed.append(_next_done(run.pk, observed[-1], thread))
            url = reverse("leaderboards:run_progress", args=[run.pk])
            pages.append(client.get(url).content.decode())
        thread.join(timeout=30)
    assert observed == [0, 50, 100, 150, 200, 241]
    assert any(0 < done < 241 for done in observed)
    assert "50 / 241 examples" in pages[0] and "20.7%" in pages[0]
    assert "100.0%" not in "".join(pages[:-1])
    run.refresh_from_db()
    assert run.status == RunStatus.FINALIZING and Prediction.objects.filter(run=run).count() == 241


# -- turns enforced by time ------------------------------------------------------------------
# The deadlines below are short so that a turn ends while a trickled answer is still coming;
# the tests assert what each turn did (states, counts, which examples were sent), never how
# long it took.
TURN_SECONDS = 0.3


def _turn(shard_id: int) -> dict:
    return shards.shard_execute(shard_id, deadline=time.monotonic() + TURN_SECONDS)


def test_a_turn_ends_at_its_deadline_and_the_shard_resumes_exactly(
    eval_task, eval_owner, redis_connection, fast_client
):
    """Each batch trickles for longer than a turn: a turn sends its first batch, cancels
    the queued ones at the deadline and pauses; the turns together send every example once
    and store one prediction each (before, the first turn queued all six batches and held
    the worker until the last one was answered)."""
    handler = TricklingSentiment("slow", seconds=0.6)
    with trickling(handler) as server:
        model = make_model(
            eval_task,
            eval_owner,
            server.url,
            name="trickler",
            batch_size=1,
            max_concurrency=1,
            connect_timeout=0.5,
            read_timeout=3.0,
        )
        dataset = import_sentiment(eval_task, 6, evaluate=False)
        run = evaluation_run_create(model, dataset, include_perturbations=False)
        shard = run.shards.get()
        outcomes = [_turn(shard.pk)]
        assert outcomes[0]["status"] == "paused"
        assert Prediction.objects.filter(run=run).count() < 6
        while outcomes[-1]["status"] == "paused" and len(outcomes) < 20:
            outcomes.append(_turn(shard.pk))
    assert outcomes[-1]["status"] == "done"
    assert len(outcomes) > 1
    uids = [uid for _, uid in handler.events]
    assert sorted(uids) == sorted(f"u{index}" for index in range(6))  # each sent once
    run.refresh_from_db()
    shard.refresh_from_db()
    assert run.done == 6 and shard.done == 6 and run.status == RunStatus.FINALIZING
    assert Prediction.objects.filter(run=run).count() == 6


def test_a_batch_stopped_by_the_end_of_its_turn_is_sent_again_not_failed(
    eval_task, eval_owner, redis_connection, fast_client
):
    """A later batch whose answer still trickles at the deadline is given up, not counted
    as the model's failure: the shard pauses with the first batch stored, and the next turn
    sends the rest again. There the batch is a first one, which gets one full attempt
    (connect plus read timeout) and whose error is final: a body that never ends fails the
    shard instead of pausing it forever."""
    handler = TricklingSentiment("slow", seconds=30.0, slow_uids={"u1"})
    with trickling(handler) as server:
        model = make_model(
            eval_task,
            eval_owner,
            server.url,
            name="trickler",
            batch_size=1,
            max_concurrency=1,
            connect_timeout=0.5,
            read_timeout=1.0,
        )
        dataset = import_sentiment(eval_task, 2, evaluate=False)
        run = evaluation_run_create(model, dataset, include_perturbations=False)
        shard = run.shards.get()
        first = _turn(shard.pk)
        stored = list(Prediction.objects.filter(run=run).values_list("example__uid", flat=True))
        run.refresh_from_db()
        assert first["status"] == "paused" and run.status == RunStatus.RUNNING
        assert stored == ["u0"]
        second = _turn(shard.pk)
    assert second == {"status": "failed", "error_code": "model.timeout", "sent": 1}
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error_code == "model.timeout"
    uids = [uid for _, uid in handler.events]
    assert uids[:3] == ["u0", "u1", "u1"] and set(uids[1:]) == {"u1"}  # (retries of u1)
    assert Prediction.objects.filter(run=run).count() == 1
