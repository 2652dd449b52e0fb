"""The API's write throttles: every POST, PUT, PATCH and DELETE counts against a per-user
rate (``writes``, or ``heavy_writes`` for registrations, runs, forks and uploads); reads never
do. Over the rate: 429, ``Retry-After`` and the shared error shape.

The test settings raise the rates out of the suite's way; each test here sets its own.
"""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache

from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

UNSAFE = ("post", "put", "patch", "delete")


@pytest.fixture(autouse=True)
def _fresh_throttle_cache():
    cache.clear()
    yield
    cache.clear()


def set_rates(settings, **rates: str) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            **rates,
        },
    }


def rename(client, name: str):
    return client.patch("/api/v1/tasks/api-task/", {"name": name}, format="json")


def register(client, name: str):
    return client.post(
        "/api/v1/tasks/api-task/models/", {"name": name, "protocol": "none"}, format="json"
    )


def assert_throttled(response) -> dict:
    error = assert_error(response, 429, "throttled")
    wait = error["details"]["wait_seconds"]
    assert wait > 0
    assert int(response["Retry-After"]) == wait
    return error


def test_writes_over_the_rate_are_a_429_with_retry_after(clients, settings):
    set_rates(settings, writes="2/min")
    owner = clients["owner"]
    assert rename(owner, "One").status_code == 200
    assert rename(owner, "Two").status_code == 200
    assert_throttled(rename(owner, "Three"))
    # Reads are not throttled; another user has a budget of its own.
    for _ in range(5):
        assert owner.get("/api/v1/tasks/api-task/").status_code == 200
    assert owner.get("/api/v1/tasks/api-task/").json()["name"] == "Two"
    assert register(clients["worker"], "theirs").status_code == 201


def test_heavy_writes_have_their_own_rate(clients, settings):
    set_rates(settings, heavy_writes="1/min", writes="100/min")
    worker = clients["worker"]
    first = register(worker, "first")
    assert first.status_code == 201, first.content[:300]
    assert_throttled(register(worker, "second"))
    # Other writes keep their own budget.
    model = first.json()["id"]
    response = worker.patch(f"/api/v1/models/{model}/", {"name": "renamed"}, format="json")
    assert response.status_code == 200, response.content[:300]


def api_operations(client) -> list[tuple[str, str]]:
    """Return ``(method, path)`` of every operation of the schema, parameters filled in."""
    schema = client.get("/api/schema/?format=json").json()
    operations = []
    for template, item in schema["paths"].items():
        path = re.sub(r"\{code\}", "api-task", template)
        path = re.sub(r"\{[^}]+\}", "1", path)
        operations += [(method, path) for method in item if method in {"get", *UNSAFE}]
    return operations


@pytest.mark.parametrize("role", ["worker", "owner", "admin"])
def test_every_write_endpoint_is_throttled_and_no_read_is(clients, settings, role):
    operations = api_operations(clients["anonymous"])
    writes = [(method, path) for method, path in operations if method in UNSAFE]
    assert len(writes) >= 20  # registrations, runs, forks, uploads, patches...
    set_rates(settings, writes="0/min", heavy_writes="0/min", examples="0/min")
    client = clients[role]
    for method, path in writes:
        response = getattr(client, method)(path, {}, format="json")
        assert response.status_code == 429, (method, path, response.content[:200])
        assert_throttled(response)
    for method, path in operations:
        if method == "get":
            response = client.get(path)
            assert response.status_code != 429, (path, response.content[:200])
