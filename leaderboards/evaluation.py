"""Shard execution and run finalization (called by ``leaderboards.jobs``).

Shards
    ``shard_execute(shard_id)`` reads the shard's examples (positions ``[start, end)``) in
    position order, in chunks, **skipping those that already have a prediction in the run**:
    a shard whose worker was killed resumes where it stopped, and the finished run holds
    exactly one prediction per example. Batches of ``model.batch_size`` go to the endpoint
    through ``models_hub.client``, with up to ``model.max_concurrency`` requests in flight
    (worker threads only do HTTP; this thread reads and writes the database, overlapping
    both). Predictions are bulk-written every ``WRITE_CHUNK`` examples with
    ``ignore_conflicts`` and the counters move with ``F()``. Retryable errors are retried
    by the client (``EVAL_RETRY``); a terminal error fails the shard and the run, keeping
    the predictions already made, the error code and the first bad response (an excerpt,
    token scrubbed by the client).

Finalize
    The shard that completes last claims the run with a conditional update
    (``running -> finalizing``, under a row lock), so ``finalize_run_job`` is enqueued
    exactly once. ``run_finalize`` marks the run done and ``score_refresh`` upserts the one
    Score of (model, original dataset): every perf metric, per-tag scores, a seeded 95%
    bootstrap interval of the main metric, the delta metrics from the latest done runs of
    the perturbed copies, and the job metrics: ``examples_per_second`` = examples sent /
    seconds of shard work (per worker, so it does not depend on how many workers ran),
    latency p50/p95 over the batch requests, memory from the endpoint's health report.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Exists, F, OuterRef
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
)
from models_hub import client as model_client
from models_hub.errors import ModelCallError
from models_hub.selectors import endpoint_spec
from models_hub.transport import RetryPolicy
from tasks.config.types import TaskConfig
from tasks.metrics import (
    MetricError,
    MetricUnsupported,
    delta_consistency,
    get_metric,
    metric_bootstrap_ci,
    metric_per_tag,
)

logger = logging.getLogger(__name__)

READ_CHUNK = 2000
WRITE_CHUNK = 1000
IN_FLIGHT_BATCHES_PER_SLOT = 8
SHARD_SWITCH_INTERVAL_SECONDS = 0.0005
SCORE_CHUNK = 5000
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
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
    """Predictions made since the last write, and the batch latencies."""

    predictions: list[Prediction] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    model_version: str = ""


def _pending_examples(run: EvaluationRun, shard: EvaluationShard):
    """Yield chunks of ``(example_id, inputs)`` of the shard that have no prediction yet."""
    has_prediction = Prediction.objects.filter(run_id=run.pk, example_id=OuterRef("pk"))
    cursor = shard.start
    while cursor < shard.end:
        rows = list(
            DatasetExample.objects.filter(
                dataset_id=run.dataset_id, position__gte=cursor, position__lt=shard.end
            )
            .filter(~Exists(has_prediction))
            .order_by("position")
            .values_list("pk", "position", "inputs")[:READ_CHUNK]
        )
        if not rows:
            return
        cursor = rows[-1][1] + 1
        yield [(pk, inputs) for pk, _, inputs in rows]


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

    def call(batch: list[tuple[int, dict]]):
        return batch, client.predict(
            endpoint, config, task_code, [inputs for _, inputs in batch], retry=retry
        )

    def collect(future: Future) -> None:
        nonlocal error
        try:
            batch, result = future.result()
        except ModelCallError as failure:
            if error is None:
                error = failure
            return
        latency = result.request_latencies_ms[0] if result.request_latencies_ms else None
        latency = latency if latency is not None else result.latency_ms
        state.latencies.append(round(latency, 3))
        version = (result.model_version or "")[:200]
        state.model_version = state.model_version or version
        excerpt = result.raw_excerpt[:RAW_EXCERPT_CHARS]
        for index, ((example_id, _), output) in enumerate(zip(batch, result.outputs, strict=True)):
            state.predictions.append(
                Prediction(
                    run_id=run.pk,
                    example_id=example_id,
                    output=output,
                    latency_ms=latency,
                    model_version=version,
                    # The raw response of a batch is kept once, with its first example.
                    raw_excerpt=excerpt if index == 0 else "",
                )
            )

    def flush() -> None:
        nonlocal last_flush
        now = time.perf_counter()
        if state.predictions:
            Prediction.objects.bulk_create(state.predictions, ignore_conflicts=True)
        latencies.extend(state.latencies)
        count = len(state.predictions)
        EvaluationShard.objects.filter(pk=shard.pk).update(
            done=F("done") + count,
            work_seconds=F("work_seconds") + (now - last_flush),
            batch_latencies_ms=latencies,
        )
        updates: dict[str, Any] = {"done": F("done") + count}
        if state.model_version:
            updates["model_version"] = state.model_version
        EvaluationRun.objects.filter(pk=run.pk).update(**updates)
        state.predictions = []
        state.latencies = []
        last_flush = time.perf_counter()

    batch_size = endpoint.batch_size
    # Keep the workers busy while this thread reads and writes the database.
    in_flight_cap = endpoint.max_concurrency * IN_FLIGHT_BATCHES_PER_SLOT
    pending: deque[Future] = deque()
    # This thread's database work (JSON decoding, building and writing rows) would otherwise
    # hold the GIL for whole switch intervals while the HTTP threads wait to read replies.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(min(switch_interval, SHARD_SWITCH_INTERVAL_SECONDS))
    try:
        with ThreadPoolExecutor(endpoint.max_concurrency, thread_name_prefix="eval-shard") as pool:
            for chunk in _pending_examples(run, shard):
                for first in range(0, len(chunk), batch_size):
                    while len(pending) >= in_flight_cap:
                        collect(pending.popleft())
                    if error is not None:
                        break
                    batch = chunk[first : first + batch_size]
                    pending.append(pool.submit(call, batch))
                    sent += len(batch)
                    if len(state.predictions) >= WRITE_CHUNK:
                        flush()
                if error is not None:
                    break
            while pending:
                collect(pending.popleft())
    finally:
        sys.setswitchinterval(switch_interval)
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
        shard = EvaluationShard.objects.get(pk=shard_id)
        EvaluationRun.objects.select_for_update().filter(pk=shard.run_id).first()
        stored = Prediction.objects.filter(
            run_id=shard.run_id,
            example__position__gte=shard.start,
            example__position__lt=shard.end,
        ).count()
        EvaluationShard.objects.filter(pk=shard_id).update(status=RunStatus.DONE, done=stored)
        if EvaluationShard.objects.filter(run_id=shard.run_id).exclude(status=RunStatus.DONE):
            return False
        claimed = EvaluationRun.objects.filter(
            pk=shard.run_id, status__in=(RunStatus.RUNNING, RunStatus.QUEUED)
        ).update(status=RunStatus.FINALIZING)
        if claimed:
            run_id = shard.run_id
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
    return {"status": "done", "score_id": score.pk if score else None}


def _latest_done_run(model_id: int, dataset_id: int) -> EvaluationRun | None:
    return (
        EvaluationRun.objects.filter(
            model_id=model_id, dataset_id=dataset_id, status=RunStatus.DONE
        )
        .order_by("-finished_at", "-pk")
        .first()
    )


@dataclass
class _RunData:
    """One run's predicted and gold values of the scored fields, aligned by position.

    Only the fields the metrics read are kept (interned short strings, shared tag lists),
    so finalizing 100k examples holds a few small lists, not 100k output dicts.
    """

    predictions: dict[str, list[Any]] = field(default_factory=dict)
    golds: dict[str, list[Any]] = field(default_factory=dict)
    tags: list[list[str]] = field(default_factory=list)
    uids: list[str] = field(default_factory=list)
    input_ids: list[str] = field(default_factory=list)
    count: int = 0


def _compact(value: Any) -> Any:
    if isinstance(value, str) and len(value) <= 64:
        return sys.intern(value)
    return value


def _load_run(run: EvaluationRun, names: tuple[str, ...], *, with_ids: bool) -> _RunData:
    """Load a run's values of ``names`` with each example's gold and tags, in chunks."""
    data = _RunData(predictions={name: [] for name in names}, golds={name: [] for name in names})
    shared_tags: dict[tuple, list[str]] = {}
    cursor = -1
    while True:
        rows = list(
            DatasetExample.objects.filter(dataset_id=run.dataset_id, position__gt=cursor)
            .order_by("position")
            .values_list("pk", "position", "uid", "input_id", "gold", "tags")[:SCORE_CHUNK]
        )
        if not rows:
            return data
        cursor = rows[-1][1]
        outputs = dict(
            Prediction.objects.filter(
                run_id=run.pk, example_id__in=[row[0] for row in rows]
            ).values_list("example_id", "output")
        )
        for pk, _, uid, input_id, gold, tags in rows:
            output = outputs.get(pk)
            gold = gold or {}
            for name in names:
                data.predictions[name].append(
                    _compact(output.get(name)) if isinstance(output, dict) else None
                )
                data.golds[name].append(_compact(gold.get(name)))
            key = tuple(tags or ())
            data.tags.append(shared_tags.setdefault(key, [sys.intern(tag) for tag in key]))
            if with_ids:
                data.uids.append(uid)
                data.input_ids.append(input_id)
            data.count += 1


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
    data = _load_run(run, names, with_ids=bool(delta_runs))
    if not data.count:
        return None
    metrics: dict[str, float | None] = {}
    per_tag: dict[str, dict[str, float]] = {}
    ci: tuple[float | None, float | None] = (None, None)
    for perf in config.perf_metrics:
        metric = get_metric(perf.type)
        predictions = data.predictions[perf.reference_name]
        golds = data.golds[perf.reference_name]
        try:
            metrics[perf.name] = round(metric.score(predictions, golds, options=perf.options), 4)
        except MetricUnsupported:
            # e.g. sp_bleu without a SentencePiece model: reported as not available.
            metrics[perf.name] = None
            continue
        for tag, tag_score in metric_per_tag(
            metric, predictions, golds, data.tags, options=perf.options
        ).items():
            entry = per_tag.setdefault(tag, {"count": tag_score.count})
            entry[perf.name] = round(tag_score.score, 4)
        if perf is main:
            low, high = metric_bootstrap_ci(
                metric,
                predictions,
                golds,
                options=perf.options,
                n_resamples=BOOTSTRAP_RESAMPLES,
                seed=BOOTSTRAP_SEED,
            )
            ci = (round(low, 4), round(high, 4))
    original_predictions = (
        dict(zip(data.uids, data.predictions[main.reference_name], strict=True))
        if delta_runs
        else {}
    )
    for kind in config.delta_metrics:
        copy_run = delta_runs.get(kind)
        metrics[kind] = (
            _delta(copy_run, main, original_predictions) if copy_run is not None else None
        )
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


def _delta(run: EvaluationRun, main, original_predictions) -> float | None:
    """Score a perturbed copy's run against the same model's original predictions."""
    data = _load_run(run, (main.reference_name,), with_ids=True)
    pairs = [
        (input_id, value)
        for input_id, value in zip(
            data.input_ids, data.predictions[main.reference_name], strict=True
        )
        # Rows of a copy made for an earlier version of the original are ignored.
        if input_id in original_predictions
    ]
    if not pairs:
        return None
    return round(delta_consistency(main, original_predictions, pairs), 4)
