"""Evaluation runs against real loopback model servers, run by a burst RQ worker."""

from __future__ import annotations

import pytest

from leaderboards import services
from leaderboards.models import EvaluationRun, Prediction, RunStatus, Score
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
        run = services.evaluation_run_create(model, dataset, shard_size=10)
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
    from leaderboards.selectors import _data_version

    eval_task.refresh_from_db()
    stored = BoardCube.objects.get(task=eval_task)
    assert stored.version == _data_version(eval_task)
    cube = cube_decode(bytes(stored.payload))
    assert cube.model_ids.tolist() == [model.pk] and cube.dataset_ids == [dataset.pk]
    assert cube.main[0, 0] == score.main_value


def _score_fields(score):
    return (score.metrics["macro_f1"], score.per_tag, score.ci_low, score.ci_high)


def test_killed_shard_resumes_without_resending(
    eval_task, eval_owner, redis_connection, fast_client
):
    # Reference: an uninterrupted run on its own server.
    with serving(KeywordSentiment()) as server:
        reference_model = make_model(eval_task, eval_owner, server.url, name="reference")
        dataset = import_sentiment(eval_task, 30, evaluate=False)
        services.evaluation_run_create(reference_model, dataset, shard_size=100)
        run_worker()
    reference = Score.objects.get(model=reference_model, dataset=dataset)

    crashing = KeywordSentiment(fail_after=3)  # 3 batches of 4 succeed, then a crash
    with serving(crashing) as server:
        model = make_model(eval_task, eval_owner, server.url, name="crashing", max_concurrency=1)
        run = services.evaluation_run_create(model, dataset, shard_size=100)
        run_worker()
        run.refresh_from_db()
        assert run.status == RunStatus.FAILED
        assert run.error_code == "model.server_error"
        stored = Prediction.objects.filter(run=run).count()
        assert stored == 12
        first_uids = list(crashing.uids)

        crashing.fail_after = None  # the model is back
        services.evaluation_run_retry(run, user=eval_owner)
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
        run = services.evaluation_run_create(model, dataset, shard_size=100)
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
        run = services.evaluation_run_create(model, dataset)
        run_worker()
        run.refresh_from_db()
        assert run.status == RunStatus.FAILED
        assert run.error_code == "model.bad_response"
        assert "banana" in run.first_bad_response
        assert "sekret-token" not in run.first_bad_response + run.error_message
        assert not Score.objects.filter(model=model).exists()

        handler.bad_label = False
        services.evaluation_run_retry(run, user=eval_owner)
        run_worker()
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert run.first_bad_response == ""
    assert Score.objects.filter(model=model, dataset=dataset).count() == 1


def test_retry_needs_owner_and_failed_run(eval_task, eval_owner, redis_connection, fast_client):
    from tasks.errors import PermissionDenied, ServiceError
    from tests.factories import UserFactory

    with serving(KeywordSentiment()) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 4, evaluate=False)
        run = services.evaluation_run_create(model, dataset)
        run_worker()
    with pytest.raises(PermissionDenied):
        services.evaluation_run_retry(run, user=UserFactory(username="stranger"))
    with pytest.raises(ServiceError) as caught:
        services.evaluation_run_retry(run, user=eval_owner)
    assert caught.value.code == "run.not_failed"


def test_finalize_runs_once_and_one_score_after_reruns(
    eval_task, eval_owner, redis_connection, fast_client
):
    from leaderboards import evaluation, jobs

    with serving(KeywordSentiment()) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 20, evaluate=False)
        run = services.evaluation_run_create(model, dataset, shard_size=5)
        run_worker()
        finalize_jobs = [
            job
            for job in jobs.queue().finished_job_registry.get_job_ids()
            if jobs.queue().fetch_job(job).func_name.endswith("finalize_run_job")
        ]
        assert len(finalize_jobs) == 1
        # Running finalize or a shard again changes nothing.
        assert evaluation.run_finalize(run.pk)["status"] == "skipped"
        assert evaluation.shard_execute(run.shards.first().pk)["status"] == "skipped"
        assert evaluation.shard_complete(run.shards.first().pk) is False
        for _ in range(2):
            services.evaluation_run_create(model, dataset, trigger="rerun")
            run_worker()
    assert EvaluationRun.objects.filter(model=model, dataset=dataset).count() == 3
    assert Score.objects.filter(model=model, dataset=dataset).count() == 1


def test_model_registered_signal_creates_runs(eval_task, eval_owner, redis_connection):
    from models_hub.signals import model_registered

    with serving(KeywordSentiment()) as server:
        dataset = import_sentiment(eval_task, 6, evaluate=False)
        services.dataset_generate_perturbation(dataset, "robustness", evaluate=False)
        model = make_model(eval_task, eval_owner, server.url)
        model_registered.send(sender=type(model), model=model)
        runs = EvaluationRun.objects.filter(model=model)
        assert {run.dataset.slug for run in runs} == {"test", "test-robustness"}
        run_worker()
    score = Score.objects.get(model=model, dataset=dataset)
    assert score.metrics["robustness"] is not None
    assert not Score.objects.filter(dataset__perturbation_of__isnull=False).exists()


def test_dataset_upload_evaluates_existing_models(eval_task, eval_owner, redis_connection):
    with serving(KeywordSentiment()) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 6)
        run_worker()
    assert EvaluationRun.objects.get(model=model, dataset=dataset).status == RunStatus.DONE
    assert Score.objects.filter(model=model, dataset=dataset).exists()


def test_rescore_on_config_change_does_not_call_model(
    eval_task, eval_owner, redis_connection, fast_client
):
    from tasks import services as task_services
    from tests.factories import demo_config

    handler = KeywordSentiment()
    with serving(handler) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 10, evaluate=False)
        services.evaluation_run_create(model, dataset)
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
