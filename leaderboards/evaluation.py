"""Shard execution and run finalization (called by ``leaderboards.jobs``).

Shards
    ``shard_execute(shard_id)`` reads the shard's examples (positions ``[start, end)``) in
    position order, ``READ_CHUNK`` at a time, **skipping those that already have a
    prediction in the run**: a shard whose worker was killed resumes where it stopped, and
    the finished run holds exactly one prediction per example. Batches of
    ``model.batch_size`` go to the endpoint through ``models_hub.client`` on
    ``model.max_concurrency`` HTTP threads, with up to ``IN_FLIGHT_BATCHES_PER_SLOT`` batches
    per thread queued ahead, so the threads never wait while this thread reads the next chunk
    or writes. Every ``WRITE_CHUNK`` examples the answered batches are written by
    ``leaderboards.sql.predictions_insert`` (``INSERT ... ON CONFLICT DO NOTHING``, plain
    parameters, no model instance per row), in one transaction with the ``F()`` counters,
    so counters and rows never fall out of step. Retryable errors are retried by the client
    (``EVAL_RETRY``); a terminal error fails the shard and the run, keeping the predictions
    already made, the error code and the first bad response (an excerpt, token scrubbed by
    the client).

Finalize
    The shard that completes last claims the run with a conditional update
    (``running -> finalizing``, under a row lock), so ``finalize_run_job`` is enqueued
    exactly once. ``run_finalize`` marks the run done and ``score_refresh`` upserts the one
    Score of (model, original dataset): every perf metric, per-tag scores, a seeded 95%
    bootstrap interval of the main metric, the delta metrics from the latest done runs of
    the perturbed copies, and the job metrics: ``examples_per_second`` = examples sent /
    seconds of shard work (per worker, so it does not depend on how many workers ran),
    latency p50/p95 over the batch requests, memory from the endpoint's health report.
    Predictions and gold are streamed ``SCORE_CHUNK`` rows at a time, PostgreSQL extracting
    only the scored keys; each example keeps an ``int32`` code of its distinct
    (prediction, gold) pair (``_PairColumn``), so memory does not grow with the outputs,
    and the scores equal the ``tasks.metrics`` functions applied to whole lists.
"""

from __future__ import annotations

import json
import logging
import time
from array import array
from collections import deque
from collections.abc import Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
from django.db import transaction
from django.db.models import Exists, F, FilteredRelation, OuterRef, Q, Subquery, TextField
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Cast
from django.utils import timezone

from leaderboards.models import (
    Dataset,
    DatasetExample,
    EvaluationRun,
    EvaluationShard,
    Prediction,
    RunStatus,
    RunTrigger,
    Score,
    main_per_tag_of,
)
from leaderboards.sql import predictions_insert
from models_hub import client as model_client
from models_hub.errors import ModelCallError
from models_hub.selectors import endpoint_spec
from models_hub.transport import RetryPolicy
from tasks.config.types import TaskConfig
from tasks.metrics import (
    CORPUS_METRIC_MAX_RESAMPLES,
    MetricError,
    MetricUnsupported,
    bootstrap_ci,
    get_metric,
)

logger = logging.getLogger(__name__)

READ_CHUNK = 2000
WRITE_CHUNK = 1000
IN_FLIGHT_BATCHES_PER_SLOT = 8
SCORE_CHUNK = 5000
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
# Index rows drawn per bootstrap batch (int32: 4 MB), whatever the dataset size.
BOOTSTRAP_INDICES_PER_BATCH = 1_000_000
# Evaluation can wait: more attempts and longer backoff than a live call.
EVAL_RETRY = RetryPolicy(max_attempts=4, backoff_seconds=0.5, backoff_max_seconds=5.0)
RAW_EXCERPT_CHARS = 1000

# Tests and the benchmark may swap the client (e.g. quicker retries); production uses the
# default one with the system resolver.
_client_override: model_client.ModelClient | None = None
_retry_override: RetryPolicy | None = None


def use_client(client: model_client.ModelClient | None, retry: RetryPolicy | None = None) -> None:
    """Set the client and retry policy shards use (None restores the defaults)."""
    global _client_override, _retry_override
    _client_override = client
    _retry_override = retry


# -- shards ----------------------------------------------------------------------------------
@dataclass
class _Flush:
    """Batches answered since the last write, and their latencies."""

    batches: list[list[Any]] = field(default_factory=list)
    examples: int = 0
    latencies: list[float] = field(default_factory=list)
    model_version: str = ""


def _pending_batches(
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


def shard_execute(shard_id: int) -> dict[str, Any]:
    """Run one shard (idempotent: done shards and finished runs are skipped)."""
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
    client = _client_override or model_client._default_client
    retry = _retry_override or EVAL_RETRY
    latencies: list[float] = list(shard.batch_latencies_ms or [])
    state = _Flush()
    sent = 0
    error: ModelCallError | None = None
    last_flush = time.perf_counter()

    def call(example_ids: list[int], inputs: list[dict]):
        return example_ids, client.predict(endpoint, config, task_code, inputs, retry=retry)

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
        batches = _pending_batches(
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
            pending.append(pool.submit(call, example_ids, inputs))
            sent += len(example_ids)
            if state.examples >= WRITE_CHUNK:
                flush()
        while pending:
            collect(pending.popleft())
            if state.examples >= WRITE_CHUNK:
                flush()
    flush()
    if error is not None:
        shard_fail(shard.pk, error.code, str(error), error.excerpt)
        return {"status": "failed", "error_code": error.code, "sent": sent}
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
    from leaderboards import jobs

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


# -- finalize --------------------------------------------------------------------------------
def run_finalize(run_id: int) -> dict[str, Any]:
    """Mark a finalizing run done and refresh its Score (idempotent)."""
    run = EvaluationRun.objects.select_related("model", "dataset").filter(pk=run_id).first()
    if run is None:
        return {"status": "missing"}
    if run.status != RunStatus.FINALIZING:
        return {"status": "skipped", "run_status": run.status}
    memory = run.memory_gb
    if memory is None and run.trigger != RunTrigger.PREDICTIONS_UPLOAD and run.model.has_endpoint:
        try:
            report = (_client_override or model_client._default_client).health(
                endpoint_spec(run.model)
            )
            memory = report.memory_gb
        except ModelCallError:
            memory = None
    try:
        with transaction.atomic():
            locked = EvaluationRun.objects.select_for_update().get(pk=run_id)
            if locked.status != RunStatus.FINALIZING:
                return {"status": "skipped", "run_status": locked.status}
            locked.done = Prediction.objects.filter(run_id=run_id).count()
            locked.status = RunStatus.DONE
            locked.memory_gb = memory
            locked.finished_at = timezone.now()
            locked.save(update_fields=["done", "status", "memory_gb", "finished_at", "updated_at"])
            original_id = run.dataset.perturbation_of_id or run.dataset_id
            score = score_refresh(run.model_id, original_id)
    except MetricError as error:
        EvaluationRun.objects.filter(pk=run_id).update(
            status=RunStatus.FAILED,
            error_code=getattr(error, "code", "run.finalize_failed")[:64],
            error_message=f"the scores could not be computed: {error}"[:2000],
            finished_at=timezone.now(),
        )
        return {"status": "failed", "error": str(error)}
    if score is not None:
        board_cube_refresh(run.dataset.task_id)
    return {"status": "done", "score_id": score.pk if score else None}


def board_cube_refresh(task_id: int) -> None:
    """Rebuild the leaderboard's score cube of task ``task_id`` now that a Score changed.

    So that the next page reads it instead of rebuilding it. A failure here loses nothing:
    the page rebuilds a cube that is not current.
    """
    from leaderboards.selectors import score_cube
    from tasks.models import Task

    task = Task.objects.select_related("current_config").filter(pk=task_id).first()
    if task is None:
        return
    try:
        score_cube(task)  # rebuilt and stored unless already current
    except Exception:  # noqa: BLE001 - logged; the page rebuilds the cube
        logger.exception("board cube of task %s not rebuilt", task_id)


def _latest_done_run(model_id: int, dataset_id: int) -> EvaluationRun | None:
    return (
        EvaluationRun.objects.filter(
            model_id=model_id, dataset_id=dataset_id, status=RunStatus.DONE
        )
        .order_by("-finished_at", "-pk")
        .first()
    )


class _PairColumn:
    """One scored field of a run, streamed: a code per example for its (prediction, gold) pair.

    Every metric's statistics row depends only on the example's prediction and gold, so the
    statistics are computed once per *distinct* pair and the corpus, per-tag and bootstrap
    scores are sums of ``counts @ pair statistics``. A classification run of 100k examples
    holds one ``int32`` per example and a few pairs, not 100k values or statistics rows.
    """

    def __init__(self) -> None:
        self.codes = array("i")
        self.pairs: dict[tuple[Hashable, Hashable], int] = {}
        self.predictions: list[Any] = []
        self.golds: list[Any] = []

    def add(self, prediction: Any, gold: Any) -> None:
        key = (_pair_key(prediction), _pair_key(gold))
        code = self.pairs.get(key)
        if code is None:
            code = self.pairs[key] = len(self.predictions)
            self.predictions.append(prediction)
            self.golds.append(gold)
        self.codes.append(code)

    def __len__(self) -> int:
        return len(self.codes)

    def code_array(self) -> np.ndarray:
        return np.frombuffer(self.codes, dtype=np.int32) if self.codes else np.zeros(0, np.int32)


def _pair_key(value: Any) -> Hashable:
    # Strings (labels, answers) are their own key. Anything else is keyed by its canonical
    # JSON, which never merges values the metrics tell apart (True and 1 stay distinct).
    if type(value) is str:
        return value
    return ("json", json.dumps(value, sort_keys=True, default=repr))


@dataclass
class _RunData:
    """A run's scored fields (one ``_PairColumn`` per reference name) and example tags."""

    columns: dict[str, _PairColumn]
    tag_codes: array = field(default_factory=lambda: array("i"))
    tag_sets: dict[tuple[str, ...], int] = field(default_factory=dict)
    count: int = 0

    def add_tags(self, tags: Any) -> None:
        names = [tags] if isinstance(tags, str) else list(tags or ())
        key = tuple(dict.fromkeys(str(name) for name in names))  # a repeated tag counts once
        code = self.tag_sets.get(key)
        if code is None:
            code = self.tag_sets[key] = len(self.tag_sets)
        self.tag_codes.append(code)

    def tag_masks(self) -> dict[str, np.ndarray]:
        """Return ``{tag: boolean mask over the examples}``, sorted by tag."""
        codes = np.frombuffer(self.tag_codes, dtype=np.int32)
        sets_by_tag: dict[str, list[int]] = {}
        for key, code in self.tag_sets.items():
            for name in key:
                sets_by_tag.setdefault(name, []).append(code)
        return {name: np.isin(codes, sets_by_tag[name]) for name in sorted(sets_by_tag)}


def _load_run(run: EvaluationRun, names: tuple[str, ...]) -> _RunData:
    """Stream a run's predicted and gold values of ``names``, with tags, in position order.

    PostgreSQL extracts the scored keys (``output -> name``), so whole outputs are neither
    sent nor decoded; ``SCORE_CHUNK`` rows are held at a time.
    """
    data = _RunData(columns={name: _PairColumn() for name in names})
    fields = {}
    for index, name in enumerate(names):
        fields[f"prediction_{index}"] = KeyTransform(name, "prediction__output")
        fields[f"gold_{index}"] = KeyTransform(name, "gold")
    queryset = (
        DatasetExample.objects.filter(dataset_id=run.dataset_id)
        .annotate(
            prediction=FilteredRelation("predictions", condition=Q(predictions__run_id=run.pk))
        )
        .annotate(**fields)
        .order_by("position")
        .values_list("position", "tags", *fields)
    )
    columns = [data.columns[name] for name in names]
    cursor = -1
    while True:
        rows = list(queryset.filter(position__gt=cursor)[:SCORE_CHUNK])
        if not rows:
            return data
        cursor = rows[-1][0]
        for row in rows:
            data.add_tags(row[1])
            for index, column in enumerate(columns):
                column.add(row[2 + 2 * index], row[3 + 2 * index])
        data.count += len(rows)


def _pair_statistics(metric, column: _PairColumn, options) -> np.ndarray:
    """Return the statistics rows of ``column``'s distinct pairs (raises MetricUnsupported)."""
    return metric.compute_statistics(column.predictions, column.golds, options=options)


def _summed(codes: np.ndarray, statistics: np.ndarray) -> np.ndarray:
    return np.bincount(codes, minlength=statistics.shape[0]).astype(np.float64) @ statistics


def _bootstrap_interval(
    metric, codes: np.ndarray, statistics: np.ndarray, options
) -> tuple[float, float]:
    """Return the seeded 95% percentile bootstrap interval, as ``metric_bootstrap_ci`` does.

    A mean metric resamples the example scores; a corpus metric (F1, BLEU) recomputes the
    score from each resample's summed statistics, capped at ``CORPUS_METRIC_MAX_RESAMPLES``.
    """
    if metric.is_decomposable:
        per_pair = statistics[:, 0] / statistics[:, 1]
        return bootstrap_ci(per_pair[codes], n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)
    resamples = min(BOOTSTRAP_RESAMPLES, CORPUS_METRIC_MAX_RESAMPLES)
    size = codes.shape[0]
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    per_batch = max(1, BOOTSTRAP_INDICES_PER_BATCH // size)
    values: list[float] = []
    while len(values) < resamples:
        rows = min(per_batch, resamples - len(values))
        for indices in rng.integers(0, size, size=(rows, size), dtype=np.int32):
            values.append(
                metric.score_from_statistics(_summed(codes[indices], statistics), options)
            )
    low, high = np.percentile(np.asarray(values, dtype=np.float64), [2.5, 97.5])
    return float(low), float(high)


def _job_metrics(run: EvaluationRun) -> dict[str, float | None]:
    shards = list(run.shards.values_list("done", "work_seconds", "batch_latencies_ms"))
    examples = sum(done for done, _, _ in shards)
    seconds = sum(work for _, work, _ in shards)
    latencies = [value for _, _, values in shards for value in (values or [])]
    metrics: dict[str, float | None] = {
        "examples_per_second": round(examples / seconds, 3) if seconds > 0 and examples else None,
        "latency_p50_ms": None,
        "latency_p95_ms": None,
        "memory_utilization": run.memory_gb,
    }
    if latencies:
        p50, p95 = np.percentile(np.asarray(latencies, dtype=np.float64), [50, 95])
        metrics["latency_p50_ms"] = round(float(p50), 3)
        metrics["latency_p95_ms"] = round(float(p95), 3)
    return metrics


def score_refresh(model_id: int, dataset_id: int) -> Score | None:
    """Recompute and upsert the Score of (model, original dataset) from stored predictions.

    Uses the latest done run of the dataset and of each perturbed copy, and the task's
    current config (so a metric added to the config is scored without calling the model).
    Returns None when the dataset has no done run for the model.
    """
    dataset = Dataset.objects.select_related("task__current_config").get(pk=dataset_id)
    run = _latest_done_run(model_id, dataset_id)
    if run is None:
        return None
    config = dataset.task.config
    main = config.main_perf_metric
    names = tuple(dict.fromkeys(perf.reference_name for perf in config.perf_metrics))
    delta_runs = {}
    for kind in config.delta_metrics:
        copy = dataset.perturbations.filter(perturbation_kind=kind).first()
        copy_run = _latest_done_run(model_id, copy.pk) if copy is not None else None
        if copy_run is not None:
            delta_runs[kind] = copy_run
    data = _load_run(run, names)
    if not data.count:
        return None
    metrics: dict[str, float | None] = {}
    per_tag: dict[str, dict[str, float]] = {}
    ci: tuple[float | None, float | None] = (None, None)
    tag_masks = data.tag_masks() if data.tag_sets else {}
    for perf in config.perf_metrics:
        metric = get_metric(perf.type)
        column = data.columns[perf.reference_name]
        try:
            statistics = _pair_statistics(metric, column, perf.options)
        except MetricUnsupported:
            # e.g. sp_bleu without a SentencePiece model: reported as not available.
            metrics[perf.name] = None
            continue
        codes = column.code_array()
        value = metric.score_from_statistics(_summed(codes, statistics), perf.options)
        metrics[perf.name] = round(float(value), 4)
        for tag, mask in tag_masks.items():
            count = int(mask.sum())
            if not count:
                continue
            tag_value = metric.score_from_statistics(_summed(codes[mask], statistics), perf.options)
            entry = per_tag.setdefault(tag, {"count": count})
            entry[perf.name] = round(float(tag_value), 4)
        if perf is main:
            low, high = _bootstrap_interval(metric, codes, statistics, perf.options)
            ci = (round(low, 4), round(high, 4))
    for kind in config.delta_metrics:
        copy_run = delta_runs.get(kind)
        metrics[kind] = _delta(copy_run, run, main) if copy_run is not None else None
    job = _job_metrics(run) if run.trigger != RunTrigger.PREDICTIONS_UPLOAD else {}
    metrics.update(job)
    score, _ = Score.objects.update_or_create(
        model_id=model_id,
        dataset_id=dataset_id,
        defaults={
            "run": run,
            "config_version_id": dataset.task.current_config_id,
            "metrics": metrics,
            "per_tag": per_tag,
            "main_per_tag": main_per_tag_of(per_tag, main.name),
            "main_metric": main.name,
            "main_value": metrics.get(main.name),
            "ci_low": ci[0],
            "ci_high": ci[1],
            "examples_per_second": job.get("examples_per_second"),
            "latency_p50_ms": job.get("latency_p50_ms"),
            "latency_p95_ms": job.get("latency_p95_ms"),
            "memory_gb": job.get("memory_utilization"),
            "example_count": data.count,
        },
    )
    return score


def _delta(copy_run: EvaluationRun, run: EvaluationRun, main) -> float | None:
    """Score a perturbed copy's run against the same model's original predictions.

    The pairs are (copy prediction, original prediction of the example named by
    ``input_id``), streamed like ``_load_run``; with no original prediction the pair counts
    as inconsistent (``delta_consistency``'s rule). Copy rows whose ``input_id`` names no
    original example (made for an earlier version of the original) are ignored.
    """
    name = main.reference_name
    original = Prediction.objects.filter(
        run_id=run.pk, example__dataset_id=run.dataset_id, example__uid=OuterRef("input_id")
    ).values(value=KeyTransform(name, "output"))[:1]
    queryset = (
        DatasetExample.objects.filter(dataset_id=copy_run.dataset_id)
        .filter(
            Exists(
                DatasetExample.objects.filter(dataset_id=run.dataset_id, uid=OuterRef("input_id"))
            )
        )
        .annotate(
            prediction=FilteredRelation(
                "predictions", condition=Q(predictions__run_id=copy_run.pk)
            ),
            value=KeyTransform(name, "prediction__output"),
            original=Subquery(original),
        )
        .order_by("position")
        .values_list("position", "value", "original")
    )
    column = _PairColumn()
    cursor = -1
    while True:
        rows = list(queryset.filter(position__gt=cursor)[:SCORE_CHUNK])
        if not rows:
            break
        cursor = rows[-1][0]
        for _, value, original_value in rows:
            column.add(None if original_value is None else value, original_value)
    if not len(column):
        return None
    metric = get_metric(main.type)
    statistics = _pair_statistics(metric, column, main.options)
    value = metric.score_from_statistics(_summed(column.code_array(), statistics), main.options)
    return round(float(value), 4)
