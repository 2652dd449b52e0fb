"""Evaluation runs against real loopback model servers, run by a burst RQ worker."""

from __future__ import annotations

import pytest

from leaderboards import services
from leaderboards.models import EvaluationRun, Prediction, RunStatus, Score
from tests.leaderboards.evalkit import (  # noqa: F401
    KeywordSentiment,
    eval_owner,
    eval_task,
    fast_client,
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
    assert score.examples_per_second > 0
    assert score.latency_p95_ms >= score.latency_p50_ms > 0
    assert score.memory_gb is not None
