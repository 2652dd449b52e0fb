"""``/readyz``, the load balancer's health check: cheap, open, and it says nothing secret."""

from __future__ import annotations

import socket

import pytest

pytestmark = pytest.mark.django_db


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_ready_with_one_query_and_no_session(client, django_assert_max_num_queries):
    with django_assert_max_num_queries(1):
        response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}
    assert not response.cookies  # no session, no CSRF cookie
    assert "no-cache" in response["Cache-Control"]


def test_unavailable_when_redis_does_not_answer_names_only_what_failed(client, settings):
    port = closed_port()
    settings.REDIS_URL = f"redis://:hunter2@127.0.0.1:{port}/3"
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "failed": ["redis"]}
    assert str(port) not in response.content.decode() and b"hunter2" not in response.content


def test_only_get(client):
    assert client.post("/readyz").status_code == 405
