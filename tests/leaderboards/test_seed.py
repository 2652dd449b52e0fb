"""End to end: ``seed_demo --model-url sentiment=<demo server>`` with evaluation on, then the
eval queue run by a burst RQ worker, gives the demo sentiment model a Score on every scoring
demo dataset and a row on the leaderboard (real PostgreSQL, Redis and model server); with
every demo model served, each demo task's leaderboard ranks at least three models."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command
from django.http import QueryDict

from leaderboards.models import AccessType, Dataset, EvaluationRun, RunStatus, Score
from leaderboards.selectors.boards import leaderboard_datasets, leaderboard_table
from leaderboards.selectors.models import browsable_datasets
from leaderboards.tables.query import parse_leaderboard_query
from models_hub.demo.catalog import (
    RANKED_DEMO_TASKS,
    demo_model,
    predictions_file_models,
)
from models_hub.demo.sentiment import SentimentHandler
from models_hub.models import RegisteredModel
from models_hub.server import make_server
from tasks.models import Task
from tests.factories import ModelFactory, UserFactory
from tests.leaderboards.evalkit import run_worker

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sentiment_server():
    server = make_server(SentimentHandler(), "127.0.0.1", 0)
    server.start_in_thread()
    yield server
    server.shutdown()
    server.server_close()


def test_seeded_demo_model_is_scored_and_ranked(sentiment_server, redis_connection):
    out = io.StringIO()
    call_command("seed_demo", f"--model-url=sentiment={sentiment_server.url}", stdout=out)
    assert "healthy" in out.getvalue(), out.getvalue()
    task = Task.objects.get(code="sentiment")
    model = RegisteredModel.objects.get(task=task, name=demo_model("sentiment").name)
    runs = EvaluationRun.objects.filter(model=model)
    assert runs.exists(), "seed_demo queued no evaluation"

    run_worker()

    statuses = {run.dataset.slug: (run.status, run.error_code) for run in runs}
    assert all(status == RunStatus.DONE for status, _ in statuses.values()), statuses
    scoring = Dataset.objects.filter(
        task=task, access_type=AccessType.SCORING, perturbation_of__isnull=True
    )
    assert scoring.exists()
    for dataset in scoring:
        score = Score.objects.filter(model=model, dataset=dataset).first()
        assert score is not None, f"no score on {dataset.slug}"
        assert score.main_value is not None and score.example_count == dataset.row_count
        # The perturbed copies were evaluated too and feed the delta metrics.
        for kind in task.config.delta_metrics:
            copy = dataset.perturbations.filter(perturbation_kind=kind, row_count__gt=0).first()
            if copy is not None:
                assert score.metrics[kind] is not None, kind

    user = AnonymousUser()
    datasets = leaderboard_datasets(task, user)
    query = parse_leaderboard_query(QueryDict(""), task.config, datasets)
    table = leaderboard_table(
        task, weights=query.weights, sort=query.sort, user=user, datasets=datasets
    )
    assert table.error is None, table.error
    row = next((row for row in table.rows if row.model_id == model.pk), None)
    assert row is not None, [row.model_name for row in table.rows]
    assert row.model_name == model.name
    assert row.dynascore is not None


def ranked(task: Task) -> list:
    user = AnonymousUser()
    datasets = leaderboard_datasets(task, user)
    query = parse_leaderboard_query(QueryDict(""), task.config, datasets)
    table = leaderboard_table(
        task, weights=query.weights, sort=query.sort, user=user, datasets=datasets
    )
    assert table.error is None, table.error
    return table.rows


def test_every_demo_task_ranks_at_least_three_models(demo_servers, redis_connection):
    """The demo's leaderboards rank something out of the box: three served models per task,
    and the predictions-file model scored from the file the seeder generated."""
    arguments = [f"--model-url={key}={url}" for key, url in demo_servers.items()]
    out = io.StringIO()
    call_command("seed_demo", *arguments, stdout=out)
    run_worker()
    for code in RANKED_DEMO_TASKS:
        task = Task.objects.get(code=code)
        rows = ranked(task)
        scored = [row for row in rows if row.dynascore is not None]
        assert len(scored) >= 3, (code, [(row.model_name, row.dynascore) for row in rows])
        [spec] = predictions_file_models(code)
        from_file = RegisteredModel.objects.get(task=task, name=spec.name)
        assert from_file.protocol == "none" and from_file.is_published
        for dataset in Dataset.objects.filter(task=task):
            run = EvaluationRun.objects.get(model=from_file, dataset=dataset)
            assert (run.status, run.trigger) == (RunStatus.DONE, "predictions_upload")
            assert run.done == dataset.row_count and run.failed_count == 0
        assert from_file.pk in [row.model_id for row in rows]
    assert "from a predictions file" in out.getvalue()

    # A dataset whose gold is public: any model's owner browses its per-example results.
    sentiment = Task.objects.get(code="sentiment")
    researcher = UserFactory(username="demo-researcher")
    own = ModelFactory(task=sentiment, owner=researcher, name="researchers-model")
    browsable = browsable_datasets(own, researcher)
    assert [dataset.access_type for dataset in browsable] == [AccessType.PUBLIC]
    assert browsable[0].row_count > 0

    # Again: nothing new is scored, no run is added.
    runs = EvaluationRun.objects.count()
    out = io.StringIO()
    call_command("seed_demo", *arguments, stdout=out)
    assert "from a predictions file" not in out.getvalue()
    assert EvaluationRun.objects.filter(trigger="predictions_upload").count() == sum(
        Dataset.objects.filter(task__code=code).count() for code in RANKED_DEMO_TASKS
    )
    assert EvaluationRun.objects.count() == runs


def test_no_predictions_file_is_scored_without_evaluation():
    call_command("seed_demo", "--no-evaluate", stdout=io.StringIO())
    assert not EvaluationRun.objects.exists()
    names = {spec.name for spec in predictions_file_models()}
    assert not RegisteredModel.objects.filter(name__in=names).exists()
