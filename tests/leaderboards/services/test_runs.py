"""Evaluation runs: created for new models and datasets, retried by their owners only."""

from __future__ import annotations

import pytest

from leaderboards.models import EvaluationRun, RunStatus, Score
from leaderboards.services.datasets import dataset_generate_perturbation
from leaderboards.services.runs import evaluation_run_create, evaluation_run_retry
from tests.leaderboards.evalkit import (
    KeywordSentiment,
    import_sentiment,
    make_model,
    run_worker,
    serving,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_retry_needs_owner_and_failed_run(eval_task, eval_owner, redis_connection, fast_client):
    from core.errors import PermissionDenied, ServiceError
    from tests.factories import UserFactory

    with serving(KeywordSentiment()) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 4, evaluate=False)
        run = evaluation_run_create(model, dataset)
        run_worker()
    with pytest.raises(PermissionDenied):
        evaluation_run_retry(run, user=UserFactory(username="stranger"))
    with pytest.raises(ServiceError) as caught:
        evaluation_run_retry(run, user=eval_owner)
    assert caught.value.code == "run.not_failed"


def test_model_registered_signal_creates_runs(eval_task, eval_owner, redis_connection):
    from models_hub.signals import model_registered

    with serving(KeywordSentiment()) as server:
        dataset = import_sentiment(eval_task, 6, evaluate=False)
        dataset_generate_perturbation(dataset, "robustness", evaluate=False)
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
