# ruff: noqa: F811 - the evaluation fixtures are imported, then requested by name
"""Every JSON surface stays strict JSON whatever the models report (issue 30, point 6).

A board of real loopback models whose /health answers hostile figures (``1e400``, which
Python's json reads as infinity, ``1e308``, ``-1``, ``true``), models with extreme but valid
figures, and rows stored before the probe checked figures (infinities, NaN, absurd and
negative values, resamples holding NaN and infinity). Then every API endpoint of the URL
conf, the leaderboard's JSON, the schema and the JSON Lines exports are read, anonymously
and as the task's owner, and each answer is parsed with a strict parser: no ``NaN``, no
``Infinity``, no number beyond a 64-bit float, and no 500.
"""

from __future__ import annotations

import contextlib
import json
import math

import numpy as np
import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from leaderboards.models import EvaluationRun, Score
from leaderboards.scoring import BOOTSTRAP_RESAMPLES
from leaderboards.services.runs import evaluation_run_create
from models_hub.calls import model_record_health
from models_hub.models import RegisteredModel
from tests.api.conftest import client_for
from tests.factories import ExampleFactory
from tests.leaderboards.evalkit import (  # noqa: F401 - fixtures
    eval_owner,
    eval_task,
    fast_client,
    import_sentiment,
    make_model,
    run_worker,
)
from tests.models_hub.servers import RecordingServer, ReportingHandler, running

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE_FIGURES = [b"1e400", b"1e308", b"-1", b"true"]
EXTREME_BUT_VALID = [b"0", b"1024", b"0.0001"]


def strict_loads(text: str):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    def finite(number: str) -> float:
        value = float(number)
        if not math.isfinite(value):
            raise ValueError(f"{number} is beyond a 64-bit float")
        return value

    return json.loads(text, parse_constant=refuse, parse_float=finite)


def api_routes() -> list[tuple[str, list[str]]]:
    """Return (name, URL parameter names) of every route of the ``api`` namespace."""
    namespace = get_resolver().namespace_dict["api"][1]
    routes = []

    def walk(patterns):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns)
            elif isinstance(pattern, URLPattern) and pattern.name:
                routes.append((f"api:{pattern.name}", list(pattern.pattern.converters)))

    walk(namespace.url_patterns)
    return routes


def body_of(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def assert_strict(response, where: str) -> int:
    """Parse ``response`` strictly (JSON or JSON Lines); return how many documents it held."""
    assert response.status_code < 500, (where, response.status_code, body_of(response)[:500])
    kind = response.get("Content-Type", "")
    text = body_of(response)
    if "ndjson" in kind or "octet-stream" in kind:
        lines = [line for line in text.splitlines() if line.strip()]
        for line in lines:
            strict_loads(line)
        return len(lines)
    assert "json" in kind, (where, kind)
    strict_loads(text)
    return 1


@pytest.fixture
def hostile_board(eval_task, eval_owner, redis_connection, fast_client):
    """The sentiment board described in the module docstring; yields its objects."""
    dataset = import_sentiment(eval_task, 28, evaluate=False)
    with contextlib.ExitStack() as stack:
        models = []
        for index, figure in enumerate(HOSTILE_FIGURES + EXTREME_BUT_VALID):
            body = b'{"status": "ok", "memory_gb": ' + figure + b"}"
            server = stack.enter_context(
                running(RecordingServer(ReportingHandler, health_body=body, right=7 - index))
            )
            model = make_model(eval_task, eval_owner, server.url, name=f"m{index}")
            RegisteredModel.objects.filter(pk=model.pk).update(is_published=True)
            model_record_health(model.pk)
            evaluation_run_create(model, dataset, shard_size=6)
            models.append(model)
        run_worker()
    # Rows stored before the probe checked figures.
    first, second, third = models[:3]
    RegisteredModel.objects.filter(pk=first.pk).update(memory_gb=float("inf"))
    RegisteredModel.objects.filter(pk=second.pk).update(memory_gb=float("-inf"))
    RegisteredModel.objects.filter(pk=third.pk).update(memory_gb=float("nan"))
    EvaluationRun.objects.filter(model=first).update(memory_gb=float("inf"))
    Score.objects.filter(model=first).update(
        memory_gb=float("inf"), examples_per_second=float("nan"), latency_p95_ms=float("-inf")
    )
    score = Score.objects.get(model=second)
    score.metrics = {**score.metrics, "memory_utilization": 1e308, "latency_p95_ms": -5.0}
    score.memory_gb = 1e308
    score.main_resamples = np.array(
        [np.inf, np.nan, -np.inf] + [50.0] * (BOOTSTRAP_RESAMPLES - 3), dtype="<f4"
    ).tobytes()
    score.save()
    Score.objects.filter(model=third).update(
        memory_gb=-2.0, examples_per_second=1e300, latency_p95_ms=1e300
    )
    example = ExampleFactory(
        task=eval_task,
        model_output={"label": "negative", "prob": {"negative": 1e308, "positive": 5e-324}},
    )
    return {"dataset": dataset, "models": models, "example": example}


def test_every_json_surface_is_strict_json_on_a_board_of_hostile_figures(
    hostile_board, eval_task, eval_owner
):
    dataset, models, example = (hostile_board[key] for key in ("dataset", "models", "example"))
    owner = client_for(eval_owner)
    anonymous = client_for(None)
    created = owner.post(
        reverse("api:fork-list", kwargs={"code": eval_task.code}),
        {
            "name": "Memory counts",
            "weights": {"metrics": {"memory_utilization": 5}, "datasets": {}},
        },
        format="json",
    )
    assert created.status_code == 201, created.content[:500]
    fork_slug = strict_loads(created.content.decode())["slug"]
    snapshot = owner.post(
        reverse("api:snapshot-list", kwargs={"code": eval_task.code}),
        {"name": "frozen", "weights": {"metrics": {"memory_utilization": 5}, "datasets": {}}},
        format="json",
    )
    assert snapshot.status_code == 201, snapshot.content[:500]
    snapshot_id = strict_loads(snapshot.content.decode())["id"]
    run = EvaluationRun.objects.filter(model=models[0]).first()
    values = {
        "code": eval_task.code,
        "number": eval_task.rounds.order_by("number").first().number,
        "slug": dataset.slug,
        "pk": models[0].pk,
        # Conversation turns and replies: none on this task, so a JSON 404.
        "turn_id": 10**9,
        "reply_id": 10**9,
        "snapshot_id": 10**9,  # arena snapshots: none on this task
    }
    pk_of = {
        "api:example-detail": example.pk,
        "api:example-retract": example.pk,
        "api:example-flag": example.pk,
        "api:example-verdict": example.pk,
        "api:example-retry": example.pk,
        "api:run-detail": run.pk,
        "api:run-retry": run.pk,
        "api:upload-detail": 10**9,  # none: a JSON 404
        "api:snapshot-detail": snapshot_id,
    }
    checked = set()
    for name, parameters in api_routes():
        kwargs = {key: values[key] for key in parameters}
        if "pk" in kwargs:
            kwargs["pk"] = pk_of.get(name, values["pk"])
        if name == "api:fork-detail":
            kwargs["slug"] = fork_slug
        url = reverse(name, kwargs=kwargs)
        for client in (anonymous, owner):
            assert_strict(client.get(url), url)
        checked.add(name)
    assert checked == {name for name, _ in api_routes()} and len(checked) >= 30

    board = reverse("leaderboards:task_json", kwargs={"code": eval_task.code})
    leaderboard = reverse("api:leaderboard", kwargs={"code": eval_task.code})
    for query in (
        "",
        "?w_memory_utilization=5",
        "?w_memory_utilization=100&w_latency_p95_ms=100&w_examples_per_second=100",
        "?sort=ci",
        "?sort=-memory_utilization",
        f"?d_{dataset.slug}=0",
    ):
        for client in (anonymous, owner):
            assert_strict(client.get(board + query), board + query)
            assert_strict(client.get(leaderboard + query), leaderboard + query)
    table = strict_loads(owner.get(board + "?w_memory_utilization=5").content.decode())
    assert table["error"] is None
    assert all(row["dynascore"] is not None for row in table["rows"][:3])

    signed_in = Client()
    signed_in.force_login(eval_owner)
    export = reverse("annotation:export", kwargs={"code": eval_task.code})
    assert assert_strict(signed_in.get(export), export) >= 1
    api_export = reverse("api:export", kwargs={"code": eval_task.code}) + "?format=jsonl"
    assert assert_strict(owner.get(api_export), api_export) >= 1
    assert_strict(owner.get(reverse("api-schema") + "?format=json"), "schema")


def test_the_model_pages_show_no_bad_figure(hostile_board):
    first = hostile_board["models"][0]
    body = strict_loads(
        client_for(None).get(reverse("api:model-detail", kwargs={"pk": first.pk})).content.decode()
    )
    assert body["memory_gb"] is None
    assert "1e400" in body.get("last_health_error", "") or body["status"] == "unhealthy"
