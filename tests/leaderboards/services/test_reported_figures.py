"""A model's own figures cannot stall its run or break its scores (issue 30, point 6).

The model is a real loopback server whose /health answers the hostile figure; rows stored
before the probe checked figures are written directly.
"""

from __future__ import annotations

import pytest

from leaderboards.models import EvaluationRun, RunStatus, Score
from leaderboards.services.runs import evaluation_run_create
from leaderboards.services.scores import run_finalize
from models_hub.models import RegisteredModel
from tests.leaderboards.evalkit import import_sentiment, make_model, run_worker
from tests.models_hub.servers import RecordingServer, ReportingHandler, running

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "figure", [b"1e400", b"-1e400", b"1e308", b"-1", b"true", b"5000", b'"12"']
)
def test_a_run_of_a_model_reporting_a_bad_figure_ends_without_it(
    eval_task, eval_owner, redis_connection, fast_client, figure
):
    body = b'{"status": "ok", "memory_gb": ' + figure + b"}"
    with running(RecordingServer(ReportingHandler, health_body=body)) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 12, evaluate=False)
        run = evaluation_run_create(model, dataset, shard_size=6)
        run_worker()
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, (run.error_code, run.error_message)
    assert run.memory_gb is None
    score = Score.objects.get(model=model, dataset=dataset)
    assert score.memory_gb is None
    assert score.metrics["memory_utilization"] is None
    assert score.examples_per_second is not None


@pytest.mark.parametrize("stored", [float("inf"), float("-inf"), float("nan"), 1e308, -3.0])
def test_a_bad_figure_stored_on_a_run_before_the_check_is_dropped_at_finalize(
    eval_task, eval_owner, redis_connection, fast_client, stored
):
    body = b'{"status": "ok", "memory_gb": 1.5}'
    with running(RecordingServer(ReportingHandler, health_body=body)) as server:
        model = make_model(eval_task, eval_owner, server.url)
        dataset = import_sentiment(eval_task, 6, evaluate=False)
        run = evaluation_run_create(model, dataset, shard_size=6)
        EvaluationRun.objects.filter(pk=run.pk).update(memory_gb=stored)
        run_worker()
        run.refresh_from_db()
        if run.status == RunStatus.FINALIZING:
            run_finalize(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, (run.error_code, run.error_message)
    score = Score.objects.get(model=model, dataset=dataset)
    assert score.metrics["memory_utilization"] in (None, 1.5)
    assert RegisteredModel.objects.get(pk=model.pk).memory_gb in (None, 1.5)
