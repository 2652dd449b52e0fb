"""Finalize and scores: one Score per (model, dataset), equal to the metric library applied
to whole lists, recomputed without calling the model when the config changes."""

from __future__ import annotations

import pytest

from leaderboards.models import DatasetExample, EvaluationRun, Prediction, RunStatus, Score
from leaderboards.selectors.cubes import leaderboard_data_version
from leaderboards.services import eval_queue, scores, shards
from leaderboards.services.datasets import dataset_generate_perturbation
from leaderboards.services.runs import evaluation_run_create
from leaderboards.services.scores import run_finalize, score_refresh
from leaderboards.services.shards import shard_complete, shard_execute
from tasks.metrics import delta_consistency, get_metric, metric_bootstrap_ci, metric_per_tag
from tests.leaderboards.evalkit import (
    KeywordSentiment,
    import_sentiment,
    make_model,
    run_worker,
    serving,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_run_is_sharded_scored_once(eval_task, eval_owner, redis_connection, fast_client):
    handler = KeywordSentiment()
    with serving(handler) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 25, evaluate=False)
        run = evaluation_run_create(model, dataset, shard_size=10)
        assert run.shards.count() == 3
        assert [(s.start, s.end) for s in run.shards.all()] == [(0, 10), (10, 20), (20, 25)]
        run_worker()
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, (run.error_code, run.error_message)
    assert run.done == 25
    assert Prediction.objects.filter(run=run).count() == 25
    assert sorted(handler.uids) == sorted(f"u{i}" for i in range(25))
    score = Score.objects.get(model=model, dataset=dataset)
    assert score.main_metric == "macro_f1"
    assert score.main_value is not None
    assert score.ci_low <= score.main_value <= score.ci_high
    assert set(score.per_tag) == {"even", "odd"}
    assert score.main_per_tag == {tag: score.per_tag[tag]["macro_f1"] for tag in score.per_tag}
    assert score.examples_per_second > 0
    assert score.latency_p95_ms >= score.latency_p50_ms > 0
    assert score.memory_gb is not None
    # The finalize job rebuilt the leaderboard's score cube: pages read it as it is.
    from leaderboards.cubes import cube_decode
    from leaderboards.models import BoardCube

    eval_task.refresh_from_db()
    stored = BoardCube.objects.get(task=eval_task)
    assert stored.version == leaderboard_data_version(eval_task)
    cube = cube_decode(bytes(stored.payload))
    assert cube.model_ids.tolist() == [model.pk] and cube.dataset_ids == [dataset.pk]
    assert cube.main[0, 0] == score.main_value


def test_finalize_runs_once_and_one_score_after_reruns(
    eval_task, eval_owner, redis_connection, fast_client
):
    with serving(KeywordSentiment()) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 20, evaluate=False)
        run = evaluation_run_create(model, dataset, shard_size=5)
        run_worker()
        finalize_jobs = [
            job
            for job in eval_queue.queue().finished_job_registry.get_job_ids()
            if eval_queue.queue().fetch_job(job).func_name.endswith("finalize_run_job")
        ]
        assert len(finalize_jobs) == 1
        # Running finalize or a shard again changes nothing.
        assert run_finalize(run.pk)["status"] == "skipped"
        assert shard_execute(run.shards.first().pk)["status"] == "skipped"
        assert shard_complete(run.shards.first().pk) is False
        for _ in range(2):
            evaluation_run_create(model, dataset, trigger="rerun")
            run_worker()
    assert EvaluationRun.objects.filter(model=model, dataset=dataset).count() == 3
    assert Score.objects.filter(model=model, dataset=dataset).count() == 1


def test_rescore_on_config_change_does_not_call_model(
    eval_task, eval_owner, redis_connection, fast_client
):
    from tasks import services as task_services
    from tests.factories import demo_config

    handler = KeywordSentiment()
    with serving(handler) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 10, evaluate=False)
        evaluation_run_create(model, dataset)
        run_worker()
        calls = handler.calls
        assert "accuracy" not in Score.objects.get(model=model).metrics
        new_yaml = demo_config("sentiment").replace(
            "perf_metric:\n  type: macro_f1\n  reference_name: label",
            "perf_metric:\n  - type: macro_f1\n    reference_name: label\n"
            "  - type: accuracy\n    reference_name: label",
        )
        task_services.task_update_config(eval_task, new_yaml, user=eval_owner)
        run_worker()
        assert handler.calls == calls
    score = Score.objects.get(model=model, dataset=dataset)
    assert score.metrics["accuracy"] is not None
    assert score.config_version_id == eval_task.config_versions.order_by("-version")[0].pk


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
    eval_task, eval_owner, redis_connection, fast_client, monkeypatch
):
    # Small reads and a small score chunk, so that every boundary is crossed.
    monkeypatch.setattr(shards, "READ_CHUNK", 7)
    monkeypatch.setattr(shards, "WRITE_CHUNK", 5)
    monkeypatch.setattr(scores, "SCORE_CHUNK", 11)
    with serving(KeywordSentiment()) as server:
        model = make_model(eval_task, eval_owner, server.url, batch_size=3)
        dataset = import_sentiment(eval_task, 60, evaluate=False)
        dataset_generate_perturbation(dataset, "robustness", evaluate=False)
        run = evaluation_run_create(model, dataset, shard_size=25)
        # One example of the original left without a prediction: it counts as wrong.
        missing = dataset.examples.get(position=4)
        run_worker()
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.done == 60
    Prediction.objects.filter(run=run, example=missing).delete()
    score = score_refresh(model.pk, dataset.pk)

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
    low, high = metric_bootstrap_ci(
        metric, predictions, golds, n_resamples=1000, seed=(0, dataset.pk)
    )
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
