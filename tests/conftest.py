"""Fixtures shared by every test module."""

from __future__ import annotations

import pytest

from models_hub.demo.catalog import DEMO_MODELS, SERVED
from models_hub.server import load_handler, make_server
from tests.factories import ContextFactory, TaskFactory, UserFactory

# Chat tasks with their demo chat models, for the chat, API and browser tests.
pytest_plugins = ["tests.annotation.chat.fixtures", "tests.annotation.arena.fixtures"]


@pytest.fixture(autouse=True)
def empty_cache():
    """Each test starts with an empty cache: rows cached by an earlier test (a task bundle,
    a session, a leaderboard page) belong to a database that test rolled back."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def admin_user_obj(db):
    return UserFactory(username="root", is_staff=True, is_superuser=True)


@pytest.fixture
def owner(db):
    return UserFactory(username="owner", is_staff=True)


@pytest.fixture
def task(db, owner):
    return TaskFactory(code="sentiment", owners=[owner])


@pytest.fixture
def context_factory(db):
    return ContextFactory


@pytest.fixture
def redis_connection():
    """A clean Redis database (the one REDIS_URL names), flushed before and after."""
    import django_rq

    connection = django_rq.get_connection("default")
    connection.flushdb()
    yield connection
    connection.flushdb()


@pytest.fixture
def demo_servers():
    """Every served demo model of the catalog on a loopback port of its own."""
    servers = {
        model.key: make_server(load_handler(model.handler, **model.kwargs), "127.0.0.1", 0)
        for model in DEMO_MODELS
        if model.kind == SERVED
    }
    for server in servers.values():
        server.start_in_thread()
    yield {key: server.url for key, server in servers.items()}
    for server in servers.values():
        server.shutdown()
        server.server_close()
