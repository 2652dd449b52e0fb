"""Tasks, task settings, rounds and context uploads, for every role."""

from __future__ import annotations

import io

import pytest

from tasks.models import Context
from tests.api.conftest import ROLES, assert_error
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db

MANAGE = {"anonymous": 401, "worker": 403, "other_owner": 403, "owner": None, "admin": None}


@pytest.mark.parametrize("role", ROLES)
def test_task_list_shows_hidden_tasks_only_to_their_owners(role, clients, role_users, api_task):
    hidden = TaskFactory(code="api-hidden", owners=[role_users["owner"]], hidden=True)
    response = clients[role].get("/api/v1/tasks/")
    assert response.status_code == 200
    codes = {task["code"] for task in response.json()["results"]}
    assert "api-task" in codes
    assert (hidden.code in codes) == (role in {"owner", "admin"})
    mine = {t["code"]: t["is_owner"] for t in response.json()["results"]}
    assert mine["api-task"] == (role in {"owner", "admin"})


@pytest.mark.parametrize("role", ROLES)
def test_task_detail_of_a_hidden_task_is_404_for_others(role, clients, api_task):
    api_task.hidden = True
    api_task.save()
    response = clients[role].get("/api/v1/tasks/api-task/")
    if role in {"owner", "admin"}:
        assert response.status_code == 200
        body = response.json()
        assert body["code"] == "api-task"
        assert body["current_round"] == 1
        assert "model_wrong_metric" in body["config_yaml"]
    else:
        assert_error(response, 404, "not_found")


@pytest.mark.parametrize("role", ROLES)
def test_task_settings_update_is_for_owners(role, clients, api_task):
    response = clients[role].patch(
        "/api/v1/tasks/api-task/",
        {"name": "Renamed", "context_sampling": "uniform"},
        format="json",
    )
    api_task.refresh_from_db()
    if MANAGE[role] is None:
        assert response.status_code == 200, response.content
        assert response.json()["name"] == "Renamed"
        assert api_task.name == "Renamed" and api_task.context_sampling == "uniform"
    else:
        assert_error(response, MANAGE[role])
        assert api_task.name != "Renamed"


def test_settings_update_with_a_broken_config_lists_every_issue(clients, api_task):
    response = clients["owner"].patch(
        "/api/v1/tasks/api-task/", {"config_yaml": "input: 5\n"}, format="json"
    )
    error = assert_error(response, 400, "config.invalid")
    assert error["details"]["issues"]
    assert {"code", "path", "line"} <= set(error["details"]["issues"][0])


def test_settings_update_with_a_new_config_changes_the_version(clients, api_task):
    yaml_text = api_task.current_config.yaml_text.replace(
        "Write a statement", "Write one statement"
    )
    response = clients["owner"].patch(
        "/api/v1/tasks/api-task/", {"config_yaml": yaml_text}, format="json"
    )
    assert response.status_code == 200
    assert "Write one statement" in response.json()["config_yaml"]


def test_settings_update_rejects_unknown_choices(clients):
    response = clients["owner"].patch(
        "/api/v1/tasks/api-task/", {"context_sampling": "nope"}, format="json"
    )
    error = assert_error(response, 400, "invalid")
    assert "context_sampling" in error["details"]


@pytest.mark.parametrize("role", ROLES)
def test_rounds_list_and_open(role, clients, api_task):
    response = clients[role].get("/api/v1/tasks/api-task/rounds/")
    assert response.status_code == 200
    assert [r["number"] for r in response.json()] == [1]
    response = clients[role].post(
        "/api/v1/tasks/api-task/rounds/", {"description": "Round two"}, format="json"
    )
    if MANAGE[role] is None:
        assert response.status_code == 201
        assert response.json()["number"] == 2 and response.json()["is_open"]
        assert list(api_task.rounds.values_list("number", "is_open")) == [(1, False), (2, True)]
    else:
        assert_error(response, MANAGE[role])
        assert api_task.rounds.count() == 1


def _contexts_file(lines: list[str], name: str = "contexts.jsonl"):
    upload = io.BytesIO("\n".join(lines).encode())
    upload.name = name
    return upload


@pytest.mark.parametrize("role", ROLES)
def test_context_upload_is_for_owners(role, clients, api_task):
    upload = _contexts_file(
        ['{"context": {"context": "A passage."}, "tag": "t1"}', '{"context": {"context": "B."}}']
    )
    response = clients[role].post(
        "/api/v1/tasks/api-task/contexts/", {"file": upload, "tag": ""}, format="multipart"
    )
    if MANAGE[role] is None:
        assert response.status_code == 201, response.content
        assert response.json() == {"imported": 2}
        assert Context.objects.filter(task=api_task).count() == 2
    else:
        assert_error(response, MANAGE[role])
        assert not Context.objects.filter(task=api_task).exists()


def test_a_bad_context_upload_reports_every_line_and_imports_nothing(clients, api_task):
    upload = _contexts_file(['{"context": {"context": "ok"}}', "not json", '{"context": 5}'])
    response = clients["owner"].post(
        "/api/v1/tasks/api-task/contexts/", {"file": upload}, format="multipart"
    )
    error = assert_error(response, 400, "upload.invalid")
    assert [e["line"] for e in error["details"]["errors"]] == [2, 3]
    assert not Context.objects.filter(task=api_task).exists()


def test_a_context_upload_with_invalid_json_names_its_line_and_column(clients, api_task):
    lines = ['{"context": {"context": "ok"}}', '{"context": {"context": "ok" "x": 1}}']
    response = clients["owner"].post(
        "/api/v1/tasks/api-task/contexts/", {"file": _contexts_file(lines)}, format="multipart"
    )
    error = assert_error(response, 400, "upload.invalid")
    (problem,) = error["details"]["errors"]
    assert (problem["line"], problem["column"], problem["code"]) == (2, 30, "upload.E003")
    assert problem["message"].endswith("at column 30")


def test_unknown_task_is_a_json_404(clients):
    assert_error(clients["owner"].get("/api/v1/tasks/nope/"), 404, "not_found")


def test_unknown_api_url_is_a_json_404(clients):
    assert_error(clients["owner"].get("/api/v1/nothing-here/"), 404, "not_found")


def test_a_bad_token_is_401_with_the_error_shape(client):
    response = client.get("/api/v1/tasks/", HTTP_AUTHORIZATION="Token nope")
    assert_error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"] == "Token"


def test_malformed_json_is_a_parse_error(clients):
    response = clients["owner"].generic(
        "PATCH", "/api/v1/tasks/api-task/", "{not json", content_type="application/json"
    )
    assert_error(response, 400, "parse_error")
