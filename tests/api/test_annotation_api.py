"""Contexts, examples, validations and exports over the API, for every role."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache

from annotation.models import Example, Validation
from tests.annotation.conftest import flush_counters
from tests.api.conftest import ROLES, assert_error, client_for
from tests.factories import ContextFactory, ExampleFactory, UserFactory

pytestmark = pytest.mark.django_db

SIGNED_IN = {"anonymous": 401}


@pytest.fixture(autouse=True)
def _fresh_throttle_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def context(api_task):
    return ContextFactory(task=api_task, data={"context": "Describe your breakfast."}, tag="food")


def _create(client, context, **fields):
    body = {
        "context_id": context.pk,
        "input": {"statement": "Best breakfast ever, sadly.", "label": "negative"},
        "goal_label": "negative",
        "mode": "sync",
        "timeout": 0,
        **fields,
    }
    return client.post("/api/v1/tasks/api-task/examples/", body, format="json")


@pytest.mark.parametrize("role", ROLES)
def test_context_sample(role, clients, context, redis_connection):
    response = clients[role].get("/api/v1/tasks/api-task/contexts/sample/?tag=food")
    if role == "anonymous":
        assert_error(response, 401)
        return
    assert response.status_code == 200
    assert response.json() == {
        "id": context.pk,
        "round": 1,
        "data": {"context": "Describe your breakfast."},
        "tag": "food",
    }
    flush_counters()
    context.refresh_from_db()
    assert context.times_served == 1


def test_context_sample_with_an_unknown_tag_is_404(clients, context):
    assert_error(
        clients["worker"].get("/api/v1/tasks/api-task/contexts/sample/?tag=none"),
        404,
        "context.none",
    )


@pytest.mark.parametrize("role", ROLES)
def test_hidden_task_is_invisible_to_workers(role, clients, api_task, context):
    api_task.hidden = True
    api_task.save()
    sample = clients[role].get("/api/v1/tasks/api-task/contexts/sample/")
    create = _create(clients[role], context)
    expected = {"anonymous": 401, "worker": 404, "other_owner": 404}.get(role)
    if expected:
        assert_error(sample, expected)
        assert_error(create, expected)
    else:
        assert sample.status_code == 200
        assert create.status_code == 201


@pytest.mark.parametrize("role", ROLES)
def test_create_an_example_without_a_model_in_the_loop(role, clients, context):
    response = _create(clients[role], context)
    if role == "anonymous":
        assert_error(response, 401)
        assert not Example.objects.exists()
        return
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "no_model"
    assert body["input"]["statement"] == "Best breakfast ever, sadly."
    assert body["context_id"] == context.pk and body["round"] == 1
    assert body["status_url"].endswith(f"/api/v1/examples/{body['id']}/")


def test_async_mode_returns_202_and_a_status_url(clients, context):
    response = _create(clients["worker"], context, mode="async")
    assert response.status_code == 202
    body = response.json()
    assert set(body) == {"id", "status", "status_url"}
    assert clients["worker"].get(body["status_url"]).json()["id"] == body["id"]


def test_an_example_that_does_not_fit_the_config_lists_the_issues(clients, context):
    response = _create(clients["worker"], context, input={"statement": "x", "label": "furious"})
    error = assert_error(response, 400, "example.invalid")
    assert error["details"]["issues"][0]["code"]
    assert not Example.objects.exists()


def test_an_unknown_context_is_404(clients, context):
    response = _create(clients["worker"], context, context_id=999999)
    assert_error(response, 404, "context.missing")


def test_a_closed_round_is_a_conflict(clients, api_task, context):
    api_task.rounds.update(is_open=False)
    assert_error(_create(clients["worker"], context), 409, "round.closed")


def test_timeout_is_bounded(clients, context):
    error = assert_error(_create(clients["worker"], context, timeout=60), 400, "invalid")
    assert "timeout" in error["details"]


def test_example_creation_is_throttled(clients, context, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"examples": "2/min"},
    }
    client = clients["worker"]
    assert _create(client, context).status_code == 201
    assert _create(client, context).status_code == 201
    error = assert_error(_create(client, context), 429, "throttled")
    assert error["details"]["wait_seconds"] > 0
    # Reading is not throttled; other users have their own budget.
    assert client.get("/api/v1/tasks/api-task/examples/").status_code == 200
    assert _create(clients["other_owner"], context).status_code == 201


@pytest.fixture
def examples(api_task, context, role_users):
    """One example per signed-in role, written by that role's user."""
    return {
        role: ExampleFactory(task=api_task, context=context, user=user)
        for role, user in role_users.items()
        if user is not None
    }


@pytest.mark.parametrize("role", ROLES)
def test_list_shows_only_your_own_examples(role, clients, examples):
    response = clients[role].get("/api/v1/tasks/api-task/examples/")
    if role == "anonymous":
        assert_error(response, 401)
        return
    assert response.status_code == 200
    assert [e["id"] for e in response.json()["results"]] == [examples[role].pk]


@pytest.mark.parametrize("role", ROLES)
def test_read_a_workers_example(role, clients, examples):
    url = f"/api/v1/examples/{examples['worker'].pk}/"
    response = clients[role].get(url)
    expected = {"anonymous": 401, "other_owner": 404}.get(role, 200)
    assert response.status_code == expected
    if expected == 200:
        body = response.json()
        assert body["model_output"] == {"label": "negative", "prob": [0.7, 0.2, 0.1]}
        assert body["model_wrong"] is True
        assert "user" not in body


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("action", "payload"),
    [("retract/", {}), ("flag/", {"reason": "typo"}), ("", {"metadata": {}})],
)
def test_only_the_writer_changes_an_example(role, action, payload, clients, examples):
    url = f"/api/v1/examples/{examples['worker'].pk}/{action}"
    client = clients[role]
    response = (
        client.patch(url, payload, format="json")
        if not action
        else client.post(url, payload, format="json")
    )
    expected = {"anonymous": 401, "other_owner": 404, "owner": 403, "admin": 403}.get(role)
    example = Example.objects.get(pk=examples["worker"].pk)
    if expected is None:
        assert response.status_code == 200, response.content
        assert example.retracted == (action == "retract/")
        assert example.creator_flagged == (action == "flag/")
    else:
        assert_error(response, expected)
        assert not example.retracted and not example.creator_flagged


def test_metadata_is_checked_against_the_config(clients, examples):
    url = f"/api/v1/examples/{examples['worker'].pk}/"
    response = clients["worker"].patch(
        url, {"metadata": {"model_explanation_wrong": "Sarcasm."}}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["metadata"] == {"model_explanation_wrong": "Sarcasm."}
    response = clients["worker"].patch(url, {"metadata": {"nope": 1}}, format="json")
    assert_error(response, 400, "example.invalid")


def test_verdict_is_only_for_ask_user_tasks(clients, examples):
    url = f"/api/v1/examples/{examples['worker'].pk}/verdict/"
    response = clients["worker"].post(url, {"model_wrong": True}, format="json")
    assert_error(response, 409, "verdict.not_asked")


def test_retry_needs_a_failed_example(clients, examples):
    url = f"/api/v1/examples/{examples['worker'].pk}/retry/"
    assert_error(clients["worker"].post(url, {}, format="json"), 409, "example.not_failed")


def test_unknown_example_is_404(clients):
    assert_error(clients["worker"].get("/api/v1/examples/999999/"), 404, "not_found")


@pytest.mark.parametrize("role", ROLES)
def test_next_to_validate_skips_your_own_example(role, clients, examples):
    response = clients[role].get("/api/v1/tasks/api-task/validations/next/")
    if role == "anonymous":
        assert_error(response, 401)
        return
    assert response.status_code == 200
    offered = response.json()["example"]
    assert offered is not None and offered["id"] != examples[role].pk
    assert set(offered) == {
        "id",
        "config_version",
        "context",
        "input",
        "goal_label",
        "model_output",
        "model_wrong",
        "metadata",
    }


@pytest.mark.parametrize("role", ROLES)
def test_validate_an_example(role, clients, examples):
    target = examples["worker"]
    response = clients[role].post(
        "/api/v1/tasks/api-task/validations/",
        {"example_id": target.pk, "label": "correct"},
        format="json",
    )
    expected = {"anonymous": 401, "worker": 403}.get(role)
    if expected:
        assert_error(response, expected)
        assert not Validation.objects.exists()
        return
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["is_owner_verdict"] == (role in {"owner", "admin"})
    assert body["example_validation_state"] == (
        "correct" if role in {"owner", "admin"} else "pending"
    )


def test_validating_twice_is_a_conflict(clients, examples):
    body = {"example_id": examples["worker"].pk, "label": "incorrect"}
    url = "/api/v1/tasks/api-task/validations/"
    assert clients["other_owner"].post(url, body, format="json").status_code == 201
    assert_error(clients["other_owner"].post(url, body, format="json"), 409)


def test_validation_of_another_tasks_example_is_404(clients, examples):
    from tests.factories import TaskFactory

    other = ExampleFactory(task=TaskFactory(code="api-third"))
    response = clients["worker"].post(
        "/api/v1/tasks/api-task/validations/",
        {"example_id": other.pk, "label": "correct"},
        format="json",
    )
    assert_error(response, 404)


@pytest.mark.parametrize("role", ROLES)
def test_export_is_for_owners_and_streams_json_lines(role, clients, examples):
    response = clients[role].get("/api/v1/tasks/api-task/export/")
    expected = {"anonymous": 401, "worker": 403, "other_owner": 403}.get(role)
    if expected:
        assert_error(response, expected)
        return
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert len(lines) == len(examples)
    raw_ids = {str(user.pk) for user in UserFactory._meta.model.objects.all()}
    for line in lines:
        assert "user" not in line and "user_id" not in line
        assert line.get("worker_id") not in raw_ids


def test_export_of_an_unknown_round_is_404(clients, examples):
    assert_error(clients["owner"].get("/api/v1/tasks/api-task/export/?round=9"), 404)
    response = clients["owner"].get("/api/v1/tasks/api-task/export/?round=1")
    assert response.status_code == 200


def test_session_auth_works_for_the_pages_htmx_calls(client, role_users, context):
    client.force_login(role_users["worker"])
    response = client.get("/api/v1/tasks/api-task/contexts/sample/")
    assert response.status_code == 200
    # Unsafe methods with a session need the CSRF token (DRF's SessionAuthentication).
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(role_users["worker"])
    response = strict.post(
        "/api/v1/tasks/api-task/examples/",
        json.dumps({"context_id": context.pk, "input": {}}),
        content_type="application/json",
    )
    assert_error(response, 403, "permission_denied")
    assert "CSRF" in response.json()["error"]["message"]


def test_a_token_client_needs_no_csrf(role_users, context):
    client = client_for(role_users["worker"])
    client.enforce_csrf_checks = True
    assert _create(client, context).status_code == 201
