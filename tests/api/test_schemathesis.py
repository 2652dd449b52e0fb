"""Property-based run of schemathesis against the live schema (/api/schema/).

Every operation of the schema gets a bounded, deterministic set of generated requests
(``derandomize``), sent through the WSGI app with the task owner's API token against a
database seeded with a task, a context, a model, datasets, an example, a run and a fork.
Path parameters are pinned to the seeded objects so that the requests reach the views
instead of stopping at a 404. Checks: no 5xx, responses match their documented schema,
status codes and content types are documented.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter

import pytest
import schemathesis
from django.core import signals
from django.core.cache import cache
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.auth import api_token_create
from leaderboards.services.boards import fork_create, snapshot_create
from leaderboards.services.datasets import dataset_import
from leaderboards.services.predictions import predictions_import
from leaderboards.tables.results import LeaderboardWeights
from tasks.models import UploadJob
from tests.factories import ContextFactory, ExampleFactory, ModelFactory, TaskFactory, UserFactory
from tests.leaderboards.evalkit import sentiment_rows

pytestmark = pytest.mark.django_db

MAX_EXAMPLES = 20
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
]


@pytest.fixture
def seeded(db, monkeypatch):
    """A task with everything the operations need; return the pinned path parameters."""
    # Model registration resolves endpoint hosts (SSRF guard): answer without real DNS.
    monkeypatch.setattr("models_hub.ssrf.default_resolver", lambda host, port: ["93.184.216.34"])
    cache.clear()
    owner = UserFactory(username="st-owner")
    task = TaskFactory(code="st-task", owners=[owner])
    ContextFactory(task=task, data={"context": "Describe a walk."})
    model = ModelFactory(task=task, owner=owner, name="st-model")
    rows = sentiment_rows(4)
    dataset = dataset_import(
        task,
        io.BytesIO("".join(json.dumps(row) + "\n" for row in rows).encode()),
        filename="rows.jsonl",
        name="Test",
        slug="test",
        evaluate=False,
    )
    labels = ("negative", "positive", "neutral")
    predictions = "".join(
        json.dumps({"uid": r["uid"], "label": "positive", "prob": {n: 1 / 3 for n in labels}})
        + "\n"
        for r in rows
    )
    run = predictions_import(model, dataset, io.BytesIO(predictions.encode()), filename="p.jsonl")
    example = ExampleFactory(task=task, user=owner)
    fork = fork_create(
        task, user=owner, name="Mine", weights=LeaderboardWeights(metrics={}, datasets={})
    )
    snapshot = board_services_snapshot(task, owner)
    upload = UploadJob.objects.create(task=task, kind="contexts", user=owner, filename="c.jsonl")
    conversation, turn, reply = seed_conversation(owner)
    return {
        "token": api_token_create(owner),
        "task": task.code,
        "ids": {
            "models": model.pk,
            "examples": example.pk,
            "runs": run.pk,
            "snapshots": snapshot.pk,
            "uploads": upload.pk,
            # /arena/battles/{id}/: the sentiment task has no arena, so no battle (a 404).
            "arena": example.pk,
            "conversations": conversation.pk,
            "turns": turn.pk,
            "replies": reply.pk,
        },
        "slugs": {"datasets": dataset.slug, "forks": fork.slug},
    }


def seed_conversation(owner):
    """A chat task and a conversation of ``owner`` with one answered turn (no model call)."""
    from annotation.chat.models import ChatReply, ChatTurn, Conversation, ConversationSeat

    task = TaskFactory(code="st-chat", config_name="chat", owners=[owner])
    models = [
        ModelFactory(
            task=task,
            owner=owner,
            name=name,
            protocol="openai_chat",
            endpoint_url="http://chat.example/",
            options={"model": name},
        )
        for name in ("chat-a", "chat-b")
    ]
    conversation = Conversation.objects.create(
        task=task, round=task.rounds.get(number=1), config_version=task.current_config, user=owner
    )
    for position, model in enumerate(models):
        ConversationSeat.objects.create(
            conversation=conversation, position=position, model=model, model_name=model.name
        )
    turn = ChatTurn.objects.create(conversation=conversation, number=1, message="Hello?")
    replies = [
        ChatReply.objects.create(
            turn=turn, position=position, model=model, status="done", text="Hi there."
        )
        for position, model in enumerate(models)
    ]
    return conversation, turn, replies[0]


def board_services_snapshot(task, owner):
    return snapshot_create(task, user=owner, weights=LeaderboardWeights(metrics={}, datasets={}))


def pin_path_parameters(case, seeded) -> None:
    """Point ``{code}``, ``{id}``, ``{slug}`` and ``{number}`` at the seeded objects."""
    parameters = dict(case.path_parameters or {})
    path = case.operation.path
    if "code" in parameters:
        parameters["code"] = seeded["task"]
    if "number" in parameters:
        parameters["number"] = 1
    if "id" in parameters:
        kind = re.match(r"^/api/v1/(\w+)/", path).group(1)
        if kind == "tasks":  # /tasks/{code}/leaderboard/snapshots/{id}/
            kind = "snapshots"
        parameters["id"] = seeded["ids"][kind]
    for name, kind in (("turn_id", "turns"), ("reply_id", "replies")):
        if name in parameters:
            parameters[name] = seeded["ids"][kind]
    if "slug" in parameters:
        kind = "forks" if "/forks/" in path else "datasets"
        parameters["slug"] = seeded["slugs"][kind]
    case.path_parameters = parameters


@pytest.fixture
def keep_connection():
    """Like Django's test client: requests must not close the test's DB connection."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def test_schemathesis_finds_no_server_errors_and_no_schema_violations(seeded, keep_connection):
    app = get_wsgi_application()
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", app)
    headers = {"Authorization": f"Token {seeded['token']}"}
    calls: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    failures: list[str] = []

    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 40

    def runner(operation, label: str):
        @settings(
            max_examples=MAX_EXAMPLES,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def run(case):
            pin_path_parameters(case, seeded)
            cache.clear()  # keep the example-creation throttle out of the way
            response = case.call(headers=headers)
            calls[label] += 1
            statuses[response.status_code] += 1
            try:
                case.validate_response(response, checks=CHECKS, headers=headers)
            except Exception as error:  # noqa: BLE001 - collect every operation's failures
                failures.append(f"{label}: {str(error)[:1500]}")
                raise

        return run

    for operation in operations:
        label = f"{operation.method.upper()} {operation.path}"
        run = runner(operation, label)
        try:
            run()
        except Exception as error:  # noqa: BLE001 - reported below with all the others
            if not failures or not failures[-1].startswith(label):
                failures.append(f"{label}: {type(error).__name__}: {str(error)[:1500]}")

    total = sum(calls.values())
    print(
        f"\nschemathesis: {total} cases over {len(calls)} operations; "
        f"statuses {dict(sorted(statuses.items()))}"
    )
    assert not failures, "\n\n".join(failures[:10])
    assert total >= len(operations)
    assert statuses[500] == 0
