"""End to end: ``seed_demo --model-url sentiment=<demo server>`` with evaluation on, then the
eval queue run by a burst RQ worker, gives the demo sentiment model a Score on every scoring
demo dataset and a row on the leaderboard (real PostgreSQL, Redis and model server)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command
from django.http import QueryDict

from leaderboards.models import AccessType, Dataset, EvaluationRun, RunStatus, Score
from leaderboards.selectors.boards import leaderboard_datasets, leaderboard_table
from leaderboards.tables.query import parse_leaderboard_query
from models_hub.demo.catalog import demo_model
from models_hub.demo.sentiment import SentimentHandler
from models_hub.models import Model
from models_hub.server import make_server
from tasks.models import Task
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
    model = Model.objects.get(task=task, name=demo_model("sentiment").name)
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
