"""Evaluation shards: read the examples, call the model, write the predictions.

``shard_execute(shard_id)`` reads the shard's examples (positions ``[start, end)``) in
position order, ``READ_CHUNK`` at a time, **skipping those that already have a prediction
in the run**: a shard whose worker was killed resumes where it stopped, and the finished
run holds exactly one prediction per example. Batches of ``model.batch_size`` go to the
endpoint through ``leaderboards.services.client`` on ``model.max_concurrency`` HTTP
threads, with up to ``IN_FLIGHT_BATCHES_PER_SLOT`` batches per thread queued ahead, so the
threads never wait while this thread reads the next chunk or writes. Every ``WRITE_CHUNK``
examples, and at least every ``progress_seconds()`` (``EVAL_PROGRESS_SECONDS``, default 1)
while answers come in, the answered batches are written by
``leaderboards.sql.predictions_insert`` (``INSERT ... ON CONFLICT DO NOTHING``, plain
parameters, no model instance per row), in one transaction with the ``F()`` counters, so
counters and rows never fall out of step. The progress bar reads those counters: a run
smaller than a write chunk moves by the second instead of jumping from 0 to done, and a
fast endpoint still writes a thousand examples at a time.
Retryable errors are retried by the client (``EVAL_RETRY``); a terminal error fails the
shard and the run, keeping the predictions already made, the error code and the first bad
response (an excerpt, token scrubbed by the client).

The shard that completes last claims the run with a conditional update
(``running -> finalizing``, under a row lock), so ``finalize_run_job`` is enqueued exactly
once (``leaderboards.services.scores.run_finalize`` then scores the run).
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from leaderboards.models import (
    DatasetExample,
    EvaluationRun,
    EvaluationShard,
    Prediction,
    RunStatus,
)
from leaderboards.services import client
from leaderboards.sql import predictions_insert
from models_hub.errors import ModelCallError
from models_hub.selectors import endpoint_spec
from tasks.config.types import TaskConfig

logger = logging.getLogger(__name__)

READ_CHUNK = 2000
WRITE_CHUNK = 1000
IN_FLIGHT_BATCHES_PER_SLOT = 8
RAW_EXCERPT_CHARS = 1000
DEFAULT_PROGRESS_SECONDS = 1.0


def progress_seconds() -> float:
    """Return how often a running shard writes what was answered (``EVAL_PROGRESS_SECONDS``)."""
    return float(getattr(settings, "EVAL_PROGRESS_SECONDS", DEFAULT_PROGRESS_SECONDS))


@dataclass
class _Flush:
    """Batches answered since the last write, and their latencies."""

    batches: list[list[Any]] = field(default_factory=list)
    examples: int = 0
    latencies: list[float] = field(default_factory=list)
    model_version: str = ""


def pending_batches(
    run: EvaluationRun, shard: EvaluationShard, batch_size: int, first_chunk: int = READ_CHUNK
):
    """Yield ``(example ids, inputs)`` batches of the shard's examples without a prediction.

    Examples are read ``READ_CHUNK`` at a time in position order; the caller keeps requests
    in flight while the next chunk is read. The first read takes ``first_chunk`` rows, so
    that the first requests leave before a whole chunk is read and decoded.
    """
    has_prediction = Prediction.objects.filter(run_id=run.pk, example_id=OuterRef("pk"))
    cursor = shard.start
    chunk = max(1, min(first_chunk, READ_CHUNK))
    while cursor < shard.end:
        rows = list(
            DatasetExample.objects.filter(
                dataset_id=run.dataset_id, position__gte=cursor, position__lt=shard.end
            )
            .filter(~Exists(has_prediction))
            .order_by("position")
            .values_list("pk", "position", Cast("inputs", output_field=TextField()))[:chunk]
        )
        if not rows:
            return
        cursor = rows[-1][1] + 1
        chunk = READ_CHUNK
        # The chunk's inputs as their JSON text, decoded in one call: a decode per row (the
        # JSON field's converter) cost this thread, and with it the HTTP threads waiting for
        # the GIL, as much again.
        inputs = json.loads("[" + ",".join(text for _, _, text in rows) + "]")
        for first in range(0, len(rows), batch_size):
            yield (
                [pk for pk, _, _ in rows[first : first + batch_size]],
                inputs[first : first + batch_size],
            )


def _output_text(output: Any) -> str:
    """Return ``output`` as JSON text (orjson; ``json`` for what orjson refuses)."""
    try:
        return orjson.dumps(output).decode()
    except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
        return json.dumps(output, allow_nan=False, separators=(",", ":"))


def _write_predictions(run_id: int, batches: list[list[Any]]) -> int:
    """Insert the predictions of ``batches`` (existing ones are kept); return rows written.

    Each batch is ``[latency_ms, model_version, raw_excerpt, [example ids], [outputs]]``; its
    raw response is kept once, with its first example.
    """
    return predictions_insert(
        [
            (run_id, example_id, _output_text(output), latency, version, "" if index else excerpt)
            for latency, version, excerpt, example_ids, outputs in batches
            for index, (example_id, output) in enumerate(zip(example_ids, outputs, strict=True))
        ]
    )


def shard_execute(shard_id: int, deadline: float | None = None) -> dict[str, Any]:
    """Run one shard (idempotent: done shards and finished runs are skipped).

    With ``deadline`` (a ``time.monotonic()`` value) the shard stops sending once it has
    passed, after one batch per HTTP thread at least: batches not yet sent are dropped, those
    in flight are answered and written, and ``{"status": "paused"}`` is returned; the next
    run of the shard resumes from the stored predictions (``leaderboards.services.scheduling``
    gives the turn to other models meanwhile).
    """
    shard = (
        EvaluationShard.objects.select_related(
            "run__model", "run__dataset__task", "run__config_version"
        )
        .filter(pk=shard_id)
        .first()
    )
    if shard is None:
        return {"status": "missing"}
    run = shard.run
    if shard.status == RunStatus.DONE or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
        return {"status": "skipped", "run_status": run.status}
    EvaluationShard.objects.filter(pk=shard.pk).update(
        status=RunStatus.RUNNING, attempts=F("attempts") + 1, error_code="", error_message=""
    )
    EvaluationRun.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
        status=RunStatus.RUNNING, started_at=timezone.now()
    )
    model = run.model
    # Parsed once per worker process (``TaskConfigVersion.parsed`` caches by version).
    config: TaskConfig = run.config_version.parsed
    task_code = run.dataset.task.code
    try:
        endpoint = endpoint_spec(model)
    except ModelCallError as error:
        shard_fail(shard.pk, error.code, str(error), error.excerpt)
        return {"status": "failed", "error_code": error.code}
    latencies: list[float] = list(shard.batch_latencies_ms or [])
    state = _Flush()
    sent = 0
    submitted = 0
    paused = False
    error: ModelCallError | None = None
    last_flush = time.perf_counter()
    progress_every = progress_seconds()

    def flush_due() -> bool:
        # A full write chunk, or answers waiting longer than the progress interval.
        if state.examples >= WRITE_CHUNK:
            return True
        return state.examples > 0 and time.perf_counter() - last_flush >= progress_every

    def call(example_ids: list[int], inputs: list[dict]):
        return example_ids, client.predict(endpoint, config, task_code, inputs)

    def collect(future: Future) -> None:
        nonlocal error
        try:
            example_ids, result = future.result()
        except ModelCallError as failure:
            if error is None:
                error = failure
            return
        latency = result.request_latencies_ms[0] if result.request_latencies_ms else None
        latency = round(latency if latency is not None else result.latency_ms, 3)
        state.latencies.append(latency)
        version = (result.model_version or "")[:200]
        state.model_version = state.model_version or version
        # No per-row work here: the batch is written as it came (see _write_predictions);
        # its raw response is kept once, with its first example.
        state.batches.append(
            [latency, version, result.raw_excerpt[:RAW_EXCERPT_CHARS], example_ids, result.outputs]
        )
        state.examples += len(example_ids)

    def flush() -> None:
        nonlocal last_flush
        now = time.perf_counter()
        latencies.extend(state.latencies)
        updates: dict[str, Any] = {}
        if state.model_version:
            updates["model_version"] = state.model_version
        # One transaction per flush (the rows and both counters): a crash can never leave
        # counters and rows out of step, and the resumable shard sends what was lost again.
        # (On PostgreSQL, eval workers started with PGOPTIONS="-c synchronous_commit=off"
        # commit without waiting for the WAL flush; that loses at most the last flushes.)
        with transaction.atomic():
            written = _write_predictions(run.pk, state.batches)
            EvaluationShard.objects.filter(pk=shard.pk).update(
                done=F("done") + written,
                work_seconds=F("work_seconds") + (now - last_flush),
                batch_latencies_ms=latencies,
            )
            if written or updates:
                EvaluationRun.objects.filter(pk=run.pk).update(done=F("done") + written, **updates)
        state.batches = []
        state.examples = 0
        state.latencies = []
        last_flush = time.perf_counter()

    # Requests queued ahead of the HTTP threads, so that they never wait for this thread
    # while it reads the next chunk or writes predictions.
    in_flight_cap = endpoint.max_concurrency * IN_FLIGHT_BATCHES_PER_SLOT
    pending: deque[Future] = deque()
    with ThreadPoolExecutor(endpoint.max_concurrency, thread_name_prefix="eval-shard") as pool:
        # The first read is one batch per HTTP thread: they start while the rest is read.
        batches = pending_batches(
            run,
            shard,
            endpoint.batch_size,
            first_chunk=endpoint.batch_size * endpoint.max_concurrency,
        )
        for example_ids, inputs in batches:
            while len(pending) >= in_flight_cap or (pending and pending[0].done()):
                collect(pending.popleft())
            if error is not None:
                break
            if (
                deadline is not None
                and submitted >= endpoint.max_concurrency
                and time.monotonic() >= deadline
            ):
                paused = True
                break
            pending.append(pool.submit(call, example_ids, inputs))
            submitted += 1
            sent += len(example_ids)
            if flush_due():
                flush()
        if paused:
            # Batches no HTTP thread has taken yet are dropped: sent again next turn.
            for future in pending:
                future.cancel()
        while pending:
            future = pending.popleft()
            if future.cancelled():
                continue
            collect(future)
            if flush_due():
                flush()
    flush()
    if error is not None:
        shard_fail(shard.pk, error.code, str(error), error.excerpt)
        return {"status": "failed", "error_code": error.code, "sent": sent}
    if paused:
        return {"status": "paused", "sent": sent}
    finalize = shard_complete(shard.pk)
    return {"status": "done", "sent": sent, "finalize": finalize}


def shard_fail(shard_id: int, code: str, message: str, excerpt: str = "") -> None:
    """Mark a shard and its run failed; the run keeps the first error and bad response."""
    with transaction.atomic():
        shard = EvaluationShard.objects.select_for_update().get(pk=shard_id)
        EvaluationShard.objects.filter(pk=shard_id).update(
            status=RunStatus.FAILED, error_code=code[:64], error_message=message[:2000]
        )
        EvaluationRun.objects.filter(pk=shard.run_id).exclude(
            status__in=(RunStatus.FAILED, RunStatus.DONE)
        ).update(
            status=RunStatus.FAILED,
            error_code=code[:64],
            error_message=message[:2000],
            first_bad_response=excerpt or "",
            finished_at=timezone.now(),
        )
    logger.warning("evaluation shard %s failed: %s %s", shard_id, code, message)


def shard_complete(shard_id: int) -> bool:
    """Mark a shard done; return True when it was the last one and claimed finalize.

    The run row is locked first, so two shards finishing at once see each other's status
    and exactly one of them moves the run to ``finalizing``.
    """
    from leaderboards import jobs  # the jobs run this module: imported at use

    with transaction.atomic():
        shard = EvaluationShard.objects.select_related("run").get(pk=shard_id)
        run_id = shard.run_id
        EvaluationRun.objects.select_for_update().filter(pk=run_id).first()
        # Walk the shard's positions and probe each example's prediction, rather than join
        # every prediction of the run: that grew with the run, once per shard.
        stored = (
            DatasetExample.objects.filter(
                dataset_id=shard.run.dataset_id,
                position__gte=shard.start,
                position__lt=shard.end,
            )
            .filter(Exists(Prediction.objects.filter(run_id=run_id, example_id=OuterRef("pk"))))
            .count()
        )
        EvaluationShard.objects.filter(pk=shard_id).update(status=RunStatus.DONE, done=stored)
        if EvaluationShard.objects.filter(run_id=run_id).exclude(status=RunStatus.DONE).exists():
            return False
        claimed = EvaluationRun.objects.filter(
            pk=run_id, status__in=(RunStatus.RUNNING, RunStatus.QUEUED)
        ).update(status=RunStatus.FINALIZING)
        if claimed:
            transaction.on_commit(lambda: jobs.enqueue_finalize(run_id))
        return bool(claimed)
