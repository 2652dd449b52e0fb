"""API tokens (profile page), login throttling (django-axes), the schema and the docs."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.test import override_settings
from rest_framework.authtoken.models import Token

from api.auth import token_hash
from tests.api.conftest import assert_error
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _new_key(response) -> str:
    match = re.search(r'id="new-api-token"[^>]*>([^<]+)<', response.content.decode())
    assert match, response.content.decode()[:2000]
    return match.group(1)


def test_profile_links_to_the_tokens_page(client, user):
    client.force_login(user)
    assert 'href="/profile/tokens/"' in client.get("/profile/").content.decode()


def test_tokens_page_needs_a_login(client):
    response = client.get("/profile/tokens/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_create_use_replace_and_revoke_a_token(client, user):
    client.force_login(user)
    assert "You have no API token" in client.get("/profile/tokens/").content.decode()
    key = _new_key(client.post("/profile/tokens/", {"action": "create"}))
    # Only the hash is stored, and the key is not shown again.
    stored = Token.objects.get(user=user)
    assert stored.key == token_hash(key) and key not in stored.key
    assert key not in client.get("/profile/tokens/").content.decode()

    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/tasks/").status_code == 200
    # The stored hash is not a key.
    api.credentials(HTTP_AUTHORIZATION=f"Token {stored.key}")
    assert_error(api.get("/api/v1/tasks/"), 401, "authentication_failed")

    new_key = _new_key(client.post("/profile/tokens/", {"action": "create"}))
    assert new_key != key
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert_error(api.get("/api/v1/tasks/"), 401)
    api.credentials(HTTP_AUTHORIZATION=f"Token {new_key}")
    assert api.get("/api/v1/tasks/").status_code == 200

    client.post("/profile/tokens/", {"action": "revoke"})
    assert not Token.objects.filter(user=user).exists()
    assert_error(api.get("/api/v1/tasks/"), 401)


def test_tokens_page_posts_need_csrf(user):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post("/profile/tokens/", {"action": "create"}).status_code == 403
    assert not Token.objects.exists()


def test_an_inactive_users_token_is_refused(user):
    from api.auth import api_token_create
    from tests.api.conftest import client_for

    client = client_for(user)
    user.is_active = False
    user.save()
    assert_error(client.get("/api/v1/tasks/"), 401, "authentication_failed")
    del api_token_create


@override_settings(AXES_ENABLED=True, AXES_FAILURE_LIMIT=3)
def test_login_is_locked_after_repeated_failures(client):
    UserFactory(username="victim")
    for _ in range(3):
        response = client.post(
            "/accounts/login/", {"username": "victim", "password": "wrong"}, REMOTE_ADDR="10.1.2.3"
        )
    assert response.status_code == 429
    # Even the right password is refused while locked.
    response = client.post(
        "/accounts/login/", {"username": "victim", "password": "password"}, REMOTE_ADDR="10.1.2.3"
    )
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_schema_is_openapi_3_with_the_error_shape(client):
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    body = schema["components"]["schemas"]["ErrorBody"]
    assert set(body["properties"]) == {"code", "message", "details"}
    assert "tokenAuth" in schema["components"]["securitySchemes"]
    for path, operations in schema["paths"].items():
        assert path.startswith("/api/v1/")
        for method, operation in operations.items():
            responses = operation["responses"]
            ok = [code for code in responses if code.startswith("2")]
            assert ok, (method, path)
            for code in ("400", "401", "403", "404"):
                ref = responses[code]["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/Error"), (method, path, code)
            if operation.get("requestBody"):
                for media in operation["requestBody"]["content"].values():
                    assert media["schema"], (method, path)


def test_docs_page_uses_local_static_files(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/api/schema/" in html
    scripts = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert any("swagger-ui" in url for url in scripts)
    for url in scripts:
        assert finders.find(url.removeprefix("/static/")), url
    assert "cdn.jsdelivr" not in html and "unpkg.com" not in html


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("delete", "/api/v1/tasks/", 405, "method_not_allowed"),
        ("get", "/api/v1/tasks/nope/rounds/", 404, "not_found"),
        ("get", "/api/v1/runs/99999/", 404, "not_found"),
        ("get", "/api/v1/models/99999/", 404, "not_found"),
        ("get", "/api/nothing/", 404, "not_found"),
    ],
)
def test_errors_share_one_shape(clients, method, path, status, code):
    assert_error(getattr(clients["worker"], method)(path), status, code)


def test_anonymous_writes_get_401_with_a_token_challenge(clients):
    response = clients["anonymous"].post("/api/v1/tasks/api-task/rounds/", {}, format="json")
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Token"
