"""Models: register, read, update the card, publish and the loop, for every role."""

from __future__ import annotations

import pytest

from models_hub.keyring import site_key_ring
from models_hub.models import RegisteredModel, RoundModel
from models_hub.sealing import unseal
from models_hub.selectors import endpoint_spec
from tests.api.conftest import ROLES, assert_error
from tests.factories import ModelFactory, UserFactory

pytestmark = pytest.mark.django_db

SECRET = "sk-very-secret-token-123"
OWNER_ONLY = {"anonymous": 401, "worker": 403, "other_owner": 403, "owner": None, "admin": None}


@pytest.fixture
def endpoint_model(api_task):
    """An unpublished model with an endpoint and a token, owned by a third user."""
    return ModelFactory(
        task=api_task,
        owner=UserFactory(username="api-submitter"),
        name="endpoint-model",
        protocol="dynatask",
        endpoint_url="http://127.0.0.1:9/",
        auth_token=SECRET,
        is_published=False,
    )


def _register(client, **fields):
    body = {"name": "m1", "protocol": "none", "description": "A model.", **fields}
    return client.post("/api/v1/tasks/api-task/models/", body, format="json")


@pytest.mark.parametrize("role", ROLES)
def test_register_a_model(role, clients, role_users, api_task):
    response = _register(clients[role], auth_token=SECRET)
    if role == "anonymous":
        assert_error(response, 401, "not_authenticated")
        assert not RegisteredModel.objects.exists()
        return
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["owner"] == role_users[role].username
    assert body["endpoint"]["has_token"] is True
    assert SECRET not in response.content.decode()
    # Stored encrypted (a predictions-file model has no endpoint_spec to read it through).
    stored = RegisteredModel.objects.get().auth_token
    assert SECRET not in stored and unseal(stored, site_key_ring()) == SECRET


@pytest.mark.parametrize("role", ROLES)
def test_register_on_a_task_that_takes_no_models(role, clients, api_task):
    api_task.accepts_models = False
    api_task.save()
    response = _register(clients[role])
    expected = {"anonymous": 401, "worker": 403, "other_owner": 403}.get(role, 201)
    assert response.status_code == expected


def test_register_refuses_a_private_endpoint_with_a_plain_message(clients, settings):
    settings.MODELS_HUB_ALLOWED_HOSTS = []
    response = _register(clients["worker"], protocol="dynatask", endpoint_url="http://10.0.0.1/")
    assert_error(response, 400, "model.address_refused")


def test_register_twice_is_a_conflict(clients, api_task):
    assert _register(clients["worker"]).status_code == 201
    assert_error(_register(clients["worker"]), 409, "model.name_taken")


def test_register_validates_fields(clients):
    error = assert_error(_register(clients["worker"], protocol="smoke", batch_size=0), 400)
    assert {"protocol", "batch_size"} <= set(error["details"])


@pytest.mark.parametrize("role", ROLES)
def test_unpublished_model_is_seen_by_its_owner_and_task_owners(role, clients, endpoint_model):
    response = clients[role].get(f"/api/v1/models/{endpoint_model.pk}/")
    listing = clients[role].get("/api/v1/tasks/api-task/models/").json()
    assert SECRET not in response.content.decode()
    if role in {"owner", "admin"}:
        assert response.status_code == 200
        assert response.json()["endpoint"]["endpoint_url"] == "http://127.0.0.1:9/"
        assert [m["id"] for m in listing] == [endpoint_model.pk]
    else:
        assert_error(response, 404, "not_found")
        assert listing == []


@pytest.mark.parametrize("role", ROLES)
def test_published_model_hides_its_endpoint_from_non_editors(role, clients, endpoint_model):
    endpoint_model.is_published = True
    endpoint_model.is_anonymous = True
    endpoint_model.save()
    body = clients[role].get(f"/api/v1/models/{endpoint_model.pk}/").json()
    editor = role in {"owner", "admin"}
    assert (body["endpoint"] is not None) == editor
    assert body["can_edit"] == editor
    assert body["owner"] == ("api-submitter" if editor else "anonymous")


@pytest.mark.parametrize("role", ROLES)
def test_update_card_and_token(role, clients, endpoint_model):
    endpoint_model.is_published = True
    endpoint_model.save()
    response = clients[role].patch(
        f"/api/v1/models/{endpoint_model.pk}/",
        {"card": "# New card", "auth_token": "sk-new-token"},
        format="json",
    )
    endpoint_model.refresh_from_db()
    if OWNER_ONLY[role] is None:
        assert response.status_code == 200, response.content
        assert response.json()["card"] == "# New card"
        assert endpoint_spec(endpoint_model).token == "sk-new-token"
        assert "sk-new-token" not in response.content.decode()
    else:
        assert_error(response, OWNER_ONLY[role])
        assert endpoint_spec(endpoint_model).token == SECRET


def test_the_models_owner_updates_and_clears_the_token(clients, role_users, endpoint_model):
    from tests.api.conftest import client_for

    client = client_for(endpoint_model.owner)
    response = client.patch(
        f"/api/v1/models/{endpoint_model.pk}/", {"clear_auth_token": True}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["endpoint"]["has_token"] is False
    response = client.post(
        f"/api/v1/models/{endpoint_model.pk}/publish/", {"published": True}, format="json"
    )
    assert response.status_code == 200 and response.json()["is_published"] is True


@pytest.mark.parametrize("role", ROLES)
def test_publish(role, clients, endpoint_model):
    endpoint_model.is_published = True
    endpoint_model.save()
    response = clients[role].post(
        f"/api/v1/models/{endpoint_model.pk}/publish/", {"published": False}, format="json"
    )
    endpoint_model.refresh_from_db()
    if OWNER_ONLY[role] is None:
        assert response.status_code == 200
        assert endpoint_model.is_published is False
    else:
        assert_error(response, OWNER_ONLY[role])
        assert endpoint_model.is_published is True


@pytest.mark.parametrize("role", ROLES)
def test_put_a_model_in_the_loop(role, clients, endpoint_model):
    endpoint_model.is_published = True
    endpoint_model.save()
    response = clients[role].put(
        f"/api/v1/models/{endpoint_model.pk}/rounds/", {"rounds": [1]}, format="json"
    )
    loop = clients[role].get("/api/v1/tasks/api-task/rounds/1/models/")
    if OWNER_ONLY[role] is None:
        assert response.status_code == 200, response.content
        assert RoundModel.objects.filter(model=endpoint_model).count() == 1
        assert [m["id"] for m in loop.json()["models"]] == [endpoint_model.pk]
    else:
        assert_error(response, OWNER_ONLY[role])
        assert_error(loop, OWNER_ONLY[role])
        assert not RoundModel.objects.exists()


def test_round_loop_put_and_errors(clients, endpoint_model, api_task):
    client = clients["owner"]
    url = "/api/v1/tasks/api-task/rounds/1/models/"
    response = client.put(url, {"models": [endpoint_model.pk]}, format="json")
    assert response.status_code == 200
    assert response.json()["models"][0]["name"] == "endpoint-model"
    file_model = ModelFactory(task=api_task, name="file-only")
    response = client.put(url, {"models": [file_model.pk]}, format="json")
    assert_error(response, 400, "model.no_endpoint")
    assert_error(client.put(url, {"models": [999999]}, format="json"), 400, "model.wrong_task")
    assert_error(client.get("/api/v1/tasks/api-task/rounds/7/models/"), 404, "not_found")
    assert_error(
        client.put(f"/api/v1/models/{endpoint_model.pk}/rounds/", {"rounds": [7]}, format="json"),
        404,
    )
    response = client.put(url, {"models": []}, format="json")
    assert response.json()["models"] == []


def test_registrations_beyond_the_daily_limit_get_a_429(clients, settings):
    settings.MODELS_HUB_REGISTRATIONS_PER_DAY = 1
    assert _register(clients["worker"], name="first").status_code == 201
    response = _register(clients["worker"], name="second")
    error = assert_error(response, 429, "model.registration_limit")
    assert error["details"]["limit"] == 1 and error["details"]["wait_seconds"] > 0
    assert int(response["Retry-After"]) == error["details"]["wait_seconds"]
    assert _register(clients["owner"], name="owners").status_code == 201


# A token goes only where its owner sent it: another scheme, host or port is a move.
MOVES = {
    "port": "http://127.0.0.1:8/",
    "host": "http://localhost:9/",
    "scheme": "https://127.0.0.1:9/",
}


@pytest.mark.parametrize("move", sorted(MOVES))
@pytest.mark.parametrize("role", ["owner", "admin"])  # the task's owner, a superuser
def test_only_the_models_owner_moves_the_endpoint_with_its_token(
    role, move, clients, endpoint_model
):
    url = f"/api/v1/models/{endpoint_model.pk}/"
    response = clients[role].patch(url, {"endpoint_url": MOVES[move]}, format="json")
    error = assert_error(response, 403, "model.token_owner_only")
    assert "clear_auth_token" in error["message"]
    endpoint_model.refresh_from_db()
    assert endpoint_model.endpoint_url == "http://127.0.0.1:9/"
    assert endpoint_spec(endpoint_model).token == SECRET
    # Clearing the token in the same change moves the endpoint without it.
    body = {"endpoint_url": MOVES[move], "clear_auth_token": True}
    response = clients[role].patch(url, body, format="json")
    assert response.status_code == 200, response.content
    endpoint_model.refresh_from_db()
    assert endpoint_model.endpoint_url == MOVES[move] and not endpoint_model.has_token


def test_the_models_owner_moves_its_endpoint_and_others_change_only_the_path(
    clients, endpoint_model
):
    from tests.api.conftest import client_for

    url = f"/api/v1/models/{endpoint_model.pk}/"
    # The same address, another path: the token stays with it, whoever edits.
    response = clients["owner"].patch(url, {"endpoint_url": "http://127.0.0.1:9/v2"}, format="json")
    assert response.status_code == 200, response.content
    # Its owner sends it anywhere.
    response = client_for(endpoint_model.owner).patch(
        url, {"endpoint_url": "http://localhost:8/"}, format="json"
    )
    assert response.status_code == 200, response.content
    endpoint_model.refresh_from_db()
    assert endpoint_model.endpoint_url == "http://localhost:8/"
    assert endpoint_spec(endpoint_model).token == SECRET


def test_endpoint_changes_beyond_the_daily_budget_get_a_429(settings, endpoint_model):
    from tests.api.conftest import client_for

    settings.MODELS_HUB_REGISTRATIONS_PER_DAY = 1
    client = client_for(endpoint_model.owner)
    url = f"/api/v1/models/{endpoint_model.pk}/"
    response = client.patch(url, {"endpoint_url": "http://127.0.0.1:8/"}, format="json")
    assert response.status_code == 200, response.content
    response = client.patch(url, {"endpoint_url": "http://127.0.0.1:7/"}, format="json")
    error = assert_error(response, 429, "model.endpoint_change_limit")
    assert int(response["Retry-After"]) == error["details"]["wait_seconds"]
    endpoint_model.refresh_from_db()
    assert endpoint_model.endpoint_url == "http://127.0.0.1:8/"
    # Everything else on the card may still change.
    assert client.patch(url, {"card": "# v2"}, format="json").status_code == 200
