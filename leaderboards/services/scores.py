"""Run finalization and scores: the one Score of (model, original dataset).

``run_finalize`` marks a finalizing run done and ``score_refresh`` upserts the one Score of
(model, original dataset): its coverage (examples with a prediction, of the dataset's
examples: a predictions file accepted as partial covers fewer), every perf metric, per-tag
scores, the main metric on 1,000 seeded bootstrap resamples and their 95% percentile
interval (``leaderboards.scoring``), the delta metrics from the latest done runs of the
perturbed copies, and the job metrics: ``examples_per_second`` = examples sent / seconds
of shard work (per worker, so it does not depend on how many workers ran), latency
p50/p95 over the batch requests, memory from the endpoint's health report. Predictions
and gold are streamed ``SCORE_CHUNK`` rows at a time, the database extracting only the
scored keys, into ``leaderboards.scoring`` columns. A written Score rebuilds the task's
score cube (``board_cube_refresh``) for the next leaderboard page.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.db.models import Exists, FilteredRelation, OuterRef, Q, Subquery
from django.db.models.fields.json import KeyTransform
from django.http import QueryDict
from django.utils import timezone

from leaderboards.models import (
    Dataset,
    DatasetExample,
    EvaluationRun,
    Prediction,
    RunStatus,
    RunTrigger,
    Score,
    main_per_tag_of,
)
from leaderboards.scoring import (
    PairColumn,
    RunData,
    bootstrap_interval,
    bootstrap_resamples,
    bootstrap_seed,
    pair_statistics,
    resamples_encode,
    summed,
)
from leaderboards.selectors.boards import cache_seconds, leaderboard_table_for_query
from leaderboards.selectors.cubes import score_cube
from leaderboards.services import client
from models_hub.errors import ModelCallError
from models_hub.selectors import endpoint_spec
from tasks.metrics import MetricError, MetricUnsupported, get_metric
from tasks.metrics.jobs import plausible_job_value
from tasks.models import Task

logger = logging.getLogger(__name__)

SCORE_CHUNK = 5000
MEMORY_METRIC = "memory_utilization"
# The job metric whose plausible range a Score figure that is not one itself follows.
PLAUSIBILITY_OF = {"latency_p50_ms": "latency_p95_ms"}


def run_finalize(run_id: int) -> dict[str, Any]:
    """Mark a finalizing run done and refresh its Score (idempotent)."""
    run = EvaluationRun.objects.select_related("model", "dataset").filter(pk=run_id).first()
    if run is None:
        return {"status": "missing"}
    if run.status != RunStatus.FINALIZING:
        return {"status": "skipped", "run_status": run.status}
    # A figure stored before the health probe checked them counts as none.
    memory = plausible_job_value(MEMORY_METRIC, run.memory_gb)
    if memory is None and run.trigger != RunTrigger.PREDICTIONS_UPLOAD and run.model.has_endpoint:
        try:
            memory = client.health(endpoint_spec(run.model)).memory_gb
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

    So that the next page reads it instead of rebuilding it, and compute the default page
    that visitors who are not signed in see, with its bootstrap intervals (a thousand
    Dynascores per model, ``leaderboards.intervals``), into the page cache: the job pays for
    them rather than the first visitor. A failure here loses nothing: the page rebuilds a
    cube that is not current and computes what is not cached.
    """
    task = Task.objects.select_related("current_config").filter(pk=task_id).first()
    if task is None:
        return
    try:
        score_cube(task)  # rebuilt and stored unless already current
        if cache_seconds() > 0:
            leaderboard_table_for_query(task, QueryDict(), AnonymousUser())
    except Exception:  # noqa: BLE001 - logged; the page rebuilds the cube
        logger.exception("board cube of task %s not rebuilt", task_id)


def scores_recompute_for_task(task: Task) -> int:
    """Recompute every Score of ``task`` from stored predictions; the models are not called.

    Used when the config changed (a metric added or re-weighted). Returns the number of
    scores written.
    """
    pairs = (
        EvaluationRun.objects.filter(
            dataset__task=task, status=RunStatus.DONE, dataset__perturbation_of__isnull=True
        )
        .values_list("model_id", "dataset_id")
        .distinct()
    )
    written = 0
    for model_id, dataset_id in sorted(set(pairs)):
        if score_refresh(model_id, dataset_id) is not None:
            written += 1
    if written:
        board_cube_refresh(task.pk)
    return written


def _latest_done_run(model_id: int, dataset_id: int) -> EvaluationRun | None:
    return (
        EvaluationRun.objects.filter(
            model_id=model_id, dataset_id=dataset_id, status=RunStatus.DONE
        )
        .order_by("-finished_at", "-pk")
        .first()
    )


def _load_run(run: EvaluationRun, names: tuple[str, ...]) -> RunData:
    """Stream a run's predicted and gold values of ``names``, with tags, in position order.

    PostgreSQL extracts the scored keys (``output -> name``), so whole outputs are neither
    sent nor decoded; ``SCORE_CHUNK`` rows are held at a time.
    """
    data = RunData(columns={name: PairColumn() for name in names})
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
        .values_list("position", "tags", *fields, "prediction__id")
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
            if row[-1] is not None:
                data.covered += 1
        data.count += len(rows)


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
    # Only plausible measurements are kept (``tasks.metrics.jobs``): a JSON column stores no
    # infinity, and an absurd figure would overflow the leaderboard's AMRS.
    return {
        name: plausible_job_value(PLAUSIBILITY_OF.get(name, name), value)
        for name, value in metrics.items()
    }


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
    delta_runs = _latest_delta_runs(dataset, config, model_id)
    data = _load_run(run, names)
    if not data.count:
        return None
    perf = _perf_scores(config, data, dataset_id)
    metrics = perf.metrics
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
            "per_tag": perf.per_tag,
            "main_per_tag": main_per_tag_of(perf.per_tag, main.name),
            "main_metric": main.name,
            "main_value": metrics.get(main.name),
            "ci_low": perf.ci[0],
            "ci_high": perf.ci[1],
            "main_resamples": perf.main_resamples,
            "examples_per_second": job.get("examples_per_second"),
            "latency_p50_ms": job.get("latency_p50_ms"),
            "latency_p95_ms": job.get("latency_p95_ms"),
            "memory_gb": job.get("memory_utilization"),
            "example_count": data.count,
            "covered_count": data.covered,
        },
    )
    return score


def _latest_delta_runs(dataset: Dataset, config, model_id: int) -> dict[str, EvaluationRun]:
    """Return the latest done run of the model on each perturbed copy the config scores."""
    delta_runs = {}
    for kind in config.delta_metrics:
        copy = dataset.perturbations.filter(perturbation_kind=kind).first()
        copy_run = _latest_done_run(model_id, copy.pk) if copy is not None else None
        if copy_run is not None:
            delta_runs[kind] = copy_run
    return delta_runs


@dataclass(frozen=True)
class _PerfScores:
    """The perf metrics of a run (None: not available), per tag, and the main one's interval
    and encoded bootstrap resamples."""

    metrics: dict[str, float | None]
    per_tag: dict[str, dict[str, float]]
    ci: tuple[float | None, float | None]
    main_resamples: bytes | None


def _perf_scores(config, data, dataset_id: int) -> _PerfScores:
    """Score every perf metric of ``config`` on the run's ``data``, overall and per tag."""
    main = config.main_perf_metric
    metrics: dict[str, float | None] = {}
    per_tag: dict[str, dict[str, float]] = {}
    ci: tuple[float | None, float | None] = (None, None)
    main_resamples: bytes | None = None
    tag_masks = data.tag_masks() if data.tag_sets else {}
    for perf in config.perf_metrics:
        metric = get_metric(perf.type)
        column = data.columns[perf.reference_name]
        try:
            statistics = pair_statistics(metric, column, perf.options)
        except MetricUnsupported:
            # e.g. sp_bleu without a SentencePiece model: reported as not available.
            metrics[perf.name] = None
            continue
        codes = column.code_array()
        value = metric.score_from_statistics(summed(codes, statistics), perf.options)
        metrics[perf.name] = round(float(value), 4)
        for tag, mask in tag_masks.items():
            count = int(mask.sum())
            if not count:
                continue
            tag_value = metric.score_from_statistics(summed(codes[mask], statistics), perf.options)
            entry = per_tag.setdefault(tag, {"count": count})
            entry[perf.name] = round(float(tag_value), 4)
        if perf is main:
            resamples = bootstrap_resamples(
                metric, codes, statistics, perf.options, seed=bootstrap_seed(dataset_id)
            )
            low, high = bootstrap_interval(resamples)
            ci = (round(low, 4), round(high, 4))
            main_resamples = resamples_encode(resamples)
    return _PerfScores(metrics, per_tag, ci, main_resamples)


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
    column = PairColumn()
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
    statistics = pair_statistics(metric, column, main.options)
    value = metric.score_from_statistics(summed(column.code_array(), statistics), main.options)
    return round(float(value), 4)
