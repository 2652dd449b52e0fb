"""Fixtures of the arena tests (a plugin of tests/conftest.py, the browser tests use them
too): an arena task over the two demo chat models served over HTTP,
and battles stored directly for the board and page tests."""

from __future__ import annotations

import pytest

from annotation.arena import services
from annotation.arena.synthetic import synthetic_battles
from annotation.campaigns.actors import Actor
from tests.annotation.chat.fixtures import register_chat_model
from tests.factories import TaskFactory, UserFactory


@pytest.fixture
def arena_task(transactional_db, owner, chat_servers, redis_connection):
    task = TaskFactory(code="arena", config_name="arena", owners=[owner])
    task.arena_models = [
        register_chat_model(task, owner, chat_servers[0].url, "Retrieval"),
        register_chat_model(task, owner, chat_servers[1].url, "Rules"),
    ]
    return task


@pytest.fixture
def voter(transactional_db):
    return UserFactory(username="voter")


@pytest.fixture
def voter_actor(voter):
    return Actor(user=voter)


def start(task, actor):
    return services.battle_start(task=task, round_=task.rounds.get(number=1), actor=actor)


def seeded_battles(task, models, voters, count: int, seed: int = 0) -> None:
    """``count`` synthetic voted battles, the first model strongest."""
    strengths = {model.pk: 1200.0 - 100.0 * index for index, model in enumerate(models)}
    synthetic_battles(task, task.rounds.get(number=1), models, voters, strengths, count, seed=seed)
