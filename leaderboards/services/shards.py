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

A job runs one **turn** of its shard (``ShardTurn``), and the turn is enforced by time: at
its deadline nothing more is sent, queued batches are cancelled, and each batch's HTTP
budget ends with the turn, so a slow or trickling model gives the worker back on time and
its shard waits again behind the other models' work (``leaderboards.services.scheduling``).

The shard that completes last claims the run with a conditional update
(``running -> finalizing``, under a row lock), so ``finalize_run_job`` is enqueued exactly
once (``leaderboards.services.scores.run_finalize`` then scores the run).
"""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
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
from leaderboards.services.eval_queue import enqueue_finalize
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
# A retryable error this close to the end of the turn is the turn's doing (a socket timeout
# set to the time left may fire a hair early).
CUT_SLACK_SECONDS = 0.05


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
    """Run one turn of a shard (idempotent: done shards and finished runs are skipped).

    With ``deadline`` (a ``time.monotonic()`` value: the end of the turn) the turn is
    enforced by time (``ShardTurn``): no batch is sent once it has passed, the batches no
    HTTP thread has taken are cancelled, every batch's HTTP budget ends with the turn, what
    was answered is written, and ``{"status": "paused"}`` is returned; the next turn resumes
    from the stored predictions (``leaderboards.services.scheduling`` gives the worker to
    other models meanwhile).
    """
    shard = _shard_start(shard_id)
    if not isinstance(shard, EvaluationShard):
        return shard
    try:
        endpoint = endpoint_spec(shard.run.model)
    except ModelCallError as error:
        shard_fail(shard.pk, error.code, str(error), error.excerpt)
        return {"status": "failed", "error_code": error.code}
    turn = ShardTurn(shard, endpoint, deadline)
    turn.play()
    return turn.outcome()


def _shard_start(shard_id: int) -> EvaluationShard | dict[str, Any]:
    """Return the shard, marked running (its run too), or the outcome of a shard not to run."""
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
    return shard


class ShardTurn:
    """One turn of one shard: send its batches, collect the answers, write them.

    The turn ends at ``deadline`` (None: when the shard is done). Its first batches, one per
    HTTP thread, are always sent and may each run for one full attempt of the endpoint
    (connect plus read timeout) when that is longer than the turn: a model that answers
    within its own timeouts always moves on, and their errors are final. Every later batch
    is sent only before the deadline, and its HTTP budget (all attempts, backoffs and a body
    trickled byte by byte) ends with the turn. At the deadline the batches not taken by an
    HTTP thread are cancelled, and a later batch stopped by the end of the turn (a retryable
    error at the deadline) is not a failure: like the cancelled ones, it is sent again next
    turn. So a turn holds its worker for at most ``max(turn, connect + read timeout)`` plus
    the last write.
    """

    def __init__(self, shard: EvaluationShard, endpoint, deadline: float | None):
        self.shard = shard
        self.run = shard.run
        self.endpoint = endpoint
        self.deadline = deadline
        # Parsed once per worker process (``TaskConfigVersion.parsed`` caches by version).
        self.config: TaskConfig = self.run.config_version.parsed
        self.task_code = self.run.dataset.task.code
        self.latencies: list[float] = list(shard.batch_latencies_ms or [])
        self.state = _Flush()
        self.pending: list[Future] = []
        self.sent = 0
        self.submitted = 0
        self.left_over = False  # batches left for the next turn
        self.error: ModelCallError | None = None
        self.last_flush = time.perf_counter()
        self.progress_every = progress_seconds()

    # -- time ---------------------------------------------------------------------------
    def over(self, slack: float = 0.0) -> bool:
        """Return True once the turn's deadline (less ``slack`` seconds) has passed."""
        return self.deadline is not None and time.monotonic() >= self.deadline - slack

    def time_left(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def batch_deadline(self, first_wave: bool) -> float | None:
        """Return when the HTTP budget of a batch starting now ends (None: its own policy)."""
        if self.deadline is None or not first_wave:
            return self.deadline
        one_attempt = self.endpoint.connect_timeout + self.endpoint.read_timeout
        return max(self.deadline, time.monotonic() + one_attempt)

    # -- the turn -----------------------------------------------------------------------
    def play(self) -> None:
        """Send the shard's batches until it is done, fails or the turn ends; write them."""
        concurrency = self.endpoint.max_concurrency
        # Requests queued ahead of the HTTP threads, so that they never wait for this thread
        # while it reads the next chunk or writes predictions.
        in_flight_cap = concurrency * IN_FLIGHT_BATCHES_PER_SLOT
        with ThreadPoolExecutor(concurrency, thread_name_prefix="eval-shard") as pool:
            # The first read is one batch per HTTP thread: they start while the rest is read.
            batches = pending_batches(
                self.run,
                self.shard,
                self.endpoint.batch_size,
                first_chunk=self.endpoint.batch_size * concurrency,
            )
            for example_ids, inputs in batches:
                self.wait_for_room(in_flight_cap)
                if self.error is not None:
                    break
                first_wave = self.submitted < concurrency
                if not first_wave and self.over():
                    self.left_over = True
                    break
                self.pending.append(pool.submit(self.call, example_ids, inputs, first_wave))
                self.submitted += 1
                self.sent += len(example_ids)
                self.flush_if_due()
            self.drain()
        self.flush()

    def call(self, example_ids: list[int], inputs: list[dict], first_wave: bool):
        """Send one batch (in an HTTP thread); ``(ids, None)`` when the turn stopped it."""
        if not first_wave and self.over():
            return example_ids, None  # taken by a thread after the deadline: never sent
        try:
            result = client.predict(
                self.endpoint,
                self.config,
                self.task_code,
                inputs,
                deadline=self.batch_deadline(first_wave),
            )
        except ModelCallError as error:
            if not first_wave and error.retryable and self.over(CUT_SLACK_SECONDS):
                return example_ids, None  # stopped by the end of the turn: sent again
            raise
        return example_ids, result

    def wait_for_room(self, cap: int) -> None:
        """Collect the answered batches; while ``cap`` batches are queued, wait for one (or
        for the end of the turn)."""
        self.collect_done()
        while len(self.pending) >= cap and not self.over():
            wait(self.pending, timeout=self.time_left(), return_when=FIRST_COMPLETED)
            self.collect_done()

    def drain(self) -> None:
        """Collect every queued batch; at the deadline or on an error, cancel those that no
        HTTP thread has taken (the running ones end by their own deadline)."""
        while self.pending:
            stopping = self.over() or self.error is not None
            if stopping:
                for future in self.pending:
                    future.cancel()
            timeout = None if stopping else self.time_left()
            wait(self.pending, timeout=timeout, return_when=FIRST_COMPLETED)
            self.collect_done()

    def collect_done(self) -> None:
        """Take the answers of the finished batches out of ``pending``; write when due."""
        waiting = []
        for future in self.pending:
            if future.done():
                self.collect(future)
            else:
                waiting.append(future)
        self.pending = waiting
        self.flush_if_due()

    def collect(self, future: Future) -> None:
        if future.cancelled():
            self.left_over = True
            return
        try:
            example_ids, result = future.result()
        except ModelCallError as failure:
            self.error = self.error or failure
            return
        if result is None:
            self.left_over = True
            return
        latency = result.request_latencies_ms[0] if result.request_latencies_ms else None
        latency = round(latency if latency is not None else result.latency_ms, 3)
        state = self.state
        state.latencies.append(latency)
        version = (result.model_version or "")[:200]
        state.model_version = state.model_version or version
        # No per-row work here: the batch is written as it came (see _write_predictions);
        # its raw response is kept once, with its first example.
        state.batches.append(
            [latency, version, result.raw_excerpt[:RAW_EXCERPT_CHARS], example_ids, result.outputs]
        )
        state.examples += len(example_ids)

    # -- writes -------------------------------------------------------------------------
    def flush_if_due(self) -> None:
        """Write on a full write chunk, or when answers waited the progress interval."""
        examples = self.state.examples
        if examples >= WRITE_CHUNK or (
            examples > 0 and time.perf_counter() - self.last_flush >= self.progress_every
        ):
            self.flush()

    def flush(self) -> None:
        """Write the answered batches and both counters in one transaction.

        A crash can never leave counters and rows out of step, and the resumable shard sends
        what was lost again. (On PostgreSQL, eval workers started with
        PGOPTIONS="-c synchronous_commit=off" commit without waiting for the WAL flush; that
        loses at most the last flushes.)
        """
        state, run = self.state, self.run
        now = time.perf_counter()
        self.latencies.extend(state.latencies)
        updates: dict[str, Any] = {}
        if state.model_version:
            updates["model_version"] = state.model_version
        with transaction.atomic():
            written = _write_predictions(run.pk, state.batches)
            EvaluationShard.objects.filter(pk=self.shard.pk).update(
                done=F("done") + written,
                work_seconds=F("work_seconds") + (now - self.last_flush),
                batch_latencies_ms=self.latencies,
            )
            if written or updates:
                EvaluationRun.objects.filter(pk=run.pk).update(done=F("done") + written, **updates)
        self.state = _Flush()
        self.last_flush = time.perf_counter()

    def outcome(self) -> dict[str, Any]:
        """Fail, pause or complete the shard after the turn; return what happened."""
        if self.error is not None:
            error = self.error
            shard_fail(self.shard.pk, error.code, str(error), error.excerpt)
            return {"status": "failed", "error_code": error.code, "sent": self.sent}
        if self.left_over:
            return {"status": "paused", "sent": self.sent}
        finalize = shard_complete(self.shard.pk)
        return {"status": "done", "sent": self.sent, "finalize": finalize}


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
            transaction.on_commit(lambda: enqueue_finalize(run_id))
        return bool(claimed)
