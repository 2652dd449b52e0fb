"""Finalize streams the stored predictions and scores distinct (prediction, gold) pairs: its
Score must equal the metric library applied to whole lists, and the shard writes keep one
raw response per batch."""

from __future__ import annotations

import pytest

from leaderboards import evaluation, services
from leaderboards.models import DatasetExample, EvaluationRun, Prediction, RunStatus, Score
from tasks.metrics import delta_consistency, get_metric, metric_bootstrap_ci, metric_per_tag
from tests.leaderboards.evalkit import (
    KeywordSentiment,
    import_sentiment,
    make_model,
    run_worker,
    serving,
)

pytestmark = pytest.mark.django_db(transaction=True)


def _values(run, name):
    """Return the run's predicted and gold ``name`` values and tags, in position order."""
    outputs = dict(Prediction.objects.filter(run=run).values_list("example_id", "output"))
    rows = DatasetExample.objects.filter(dataset=run.dataset).order_by("position")
    predictions, golds, tags, uids = [], [], [], []
    for pk, uid, gold, example_tags in rows.values_list("pk", "uid", "gold", "tags"):
        output = outputs.get(pk)
        predictions.append(output.get(name) if isinstance(output, dict) else None)
        golds.append(gold.get(name))
        tags.append(example_tags)
        uids.append(uid)
    return predictions, golds, tags, uids


def test_streamed_score_equals_the_metric_library(
    eval_task, eval_owner, redis_connection, fast_client
):
    # Small reads and a small score chunk, so that every boundary is crossed.
    original = (evaluation.READ_CHUNK, evaluation.SCORE_CHUNK, evaluation.WRITE_CHUNK)
    evaluation.READ_CHUNK, evaluation.SCORE_CHUNK, evaluation.WRITE_CHUNK = 7, 11, 5
    try:
        with serving(KeywordSentiment()) as server:
            model = make_model(eval_task, eval_owner, server.url, batch_size=3)
            dataset = import_sentiment(eval_task, 60, evaluate=False)
            services.dataset_generate_perturbation(dataset, "robustness", evaluate=False)
            run = services.evaluation_run_create(model, dataset, shard_size=25)
            # One example of the original left without a prediction: it counts as wrong.
            missing = dataset.examples.get(position=4)
            run_worker()
    finally:
        evaluation.READ_CHUNK, evaluation.SCORE_CHUNK, evaluation.WRITE_CHUNK = original
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.done == 60
    Prediction.objects.filter(run=run, example=missing).delete()
    score = evaluation.score_refresh(model.pk, dataset.pk)

    config = eval_task.config
    main = config.main_perf_metric
    metric = get_metric(main.type)
    predictions, golds, tags, uids = _values(run, main.reference_name)
    assert predictions[4] is None
    assert score.example_count == 60
    assert score.metrics[main.name] == round(metric.score(predictions, golds), 4)
    expected_tags = metric_per_tag(metric, predictions, golds, tags)
    assert score.per_tag == {
        tag: {"count": value.count, main.name: round(value.score, 4)}
        for tag, value in expected_tags.items()
    }
    low, high = metric_bootstrap_ci(metric, predictions, golds, n_resamples=1000, seed=0)
    assert (score.ci_low, score.ci_high) == (round(low, 4), round(high, 4))

    copy_run = EvaluationRun.objects.get(model=model, dataset__perturbation_of=dataset)
    copy_predictions, _, _, _ = _values(copy_run, main.reference_name)
    input_ids = list(
        copy_run.dataset.examples.order_by("position").values_list("input_id", flat=True)
    )
    originals = dict(zip(uids, predictions, strict=True))
    expected_delta = delta_consistency(
        main, originals, list(zip(input_ids, copy_predictions, strict=False))
    )
    assert score.metrics["robustness"] == round(expected_delta, 4)
    assert Score.objects.get(model=model, dataset=dataset).metrics == score.metrics


def test_shard_writes_keep_one_raw_response_per_batch(
    eval_task, eval_owner, redis_connection, fast_client
):
    with serving(KeywordSentiment()) as server:
        model = make_model(eval_task, eval_owner, server.url, batch_size=4)
        dataset = import_sentiment(eval_task, 10, evaluate=False)
        run = services.evaluation_run_create(model, dataset, shard_size=100)
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


def test_pending_batches_read_a_small_first_chunk_then_whole_ones(
    eval_task, eval_owner, redis_connection, monkeypatch
):
    """Every example without a prediction comes once, in position order, whatever the
    first read's size (the shard's first requests leave after it)."""
    monkeypatch.setattr(evaluation, "READ_CHUNK", 5)
    model = make_model(eval_task, eval_owner, "http://127.0.0.1:9/")
    dataset = import_sentiment(eval_task, 23, evaluate=False)
    run = services.evaluation_run_create(model, dataset, shard_size=100)
    shard = run.shards.get()
    examples = list(dataset.examples.order_by("position").values_list("pk", flat=True))
    Prediction.objects.bulk_create(
        Prediction(run=run, example_id=pk, output={}) for pk in examples[3:6] + examples[20:]
    )
    expected = examples[:3] + examples[6:20]
    for first_chunk in (1, 2, 3, 5, 50):
        batches = list(evaluation._pending_batches(run, shard, 4, first_chunk=first_chunk))
        assert [pk for ids, _ in batches for pk in ids] == expected, first_chunk
        assert all(len(ids) <= 4 for ids, _ in batches)
        assert [len(inputs) for _, inputs in batches] == [len(ids) for ids, _ in batches]
