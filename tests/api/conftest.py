"""Fixtures of the API tests: one client per role, each signed in with its own API token."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from api.auth import api_token_create
from tests.factories import TaskFactory, UserFactory

ROLES = ["anonymous", "worker", "other_owner", "owner", "admin"]


@pytest.fixture
def api_owner(db):
    return UserFactory(username="api-owner")


@pytest.fixture
def api_task(db, api_owner):
    """The task under test (sentiment config), owned by ``api_owner``."""
    return TaskFactory(code="api-task", owners=[api_owner])


@pytest.fixture
def role_users(db, api_owner, api_task):
    """Return ``{role: user or None}``; ``other_owner`` owns a different task."""
    other_owner = UserFactory(username="api-other-owner")
    TaskFactory(code="api-other-task", owners=[other_owner])
    return {
        "anonymous": None,
        "worker": UserFactory(username="api-worker"),
        "other_owner": other_owner,
        "owner": api_owner,
        "admin": UserFactory(username="api-admin", is_staff=True, is_superuser=True),
    }


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user)}")
    return client


@pytest.fixture
def clients(role_users):
    """Return ``{role: APIClient}`` authenticated with each role's API token."""
    return {role: client_for(user) for role, user in role_users.items()}


def assert_error(response, status: int, code: str | None = None) -> dict:
    """Assert the shared error shape (and optionally its code); return the error object."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code, body
    return body["error"]
