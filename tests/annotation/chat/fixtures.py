"""Fixtures of the chat tests (a plugin of tests/conftest.py): a chat task with two demo
chat models served over HTTP."""

from __future__ import annotations

import pytest

from annotation.campaigns.actors import Actor
from models_hub import services as hub_services
from models_hub.demo.chat import RetrievalChatHandler, RuleChatHandler
from tests.annotation.conftest import ServerHandle, run_jobs
from tests.factories import TaskFactory, UserFactory


def register_chat_model(task, owner, url: str, name: str, in_loop: bool = True, **fields):
    """A chat model of ``task``, published (an unpublished one is not named to workers)."""
    fields.setdefault("options", {"model": name})
    fields.setdefault("is_published", True)
    model = hub_services.model_register(
        task=task,
        owner=owner,
        name=name,
        endpoint_url=url,
        protocol="openai_chat",
        read_timeout=5.0,
        in_loop=False,
        **fields,
    )
    if in_loop:
        round_ = task.rounds.get(number=1)
        current = list(round_.in_loop_models.all())
        hub_services.model_set_in_loop(round_, [*current, model], owner)
    return model


@pytest.fixture
def chat_servers():
    handles = [
        ServerHandle(RetrievalChatHandler(token_delay=0)),
        ServerHandle(RuleChatHandler(token_delay=0)),
    ]
    yield handles
    for handle in handles:
        handle.stop()


@pytest.fixture
def chat_task(transactional_db, owner, chat_servers, redis_connection):
    task = TaskFactory(code="chat", config_name="chat", owners=[owner])
    task.chat_models = [
        register_chat_model(task, owner, chat_servers[0].url, "Retrieval"),
        register_chat_model(task, owner, chat_servers[1].url, "Rules"),
    ]
    return task


@pytest.fixture
def chatter(transactional_db):
    return UserFactory(username="chatter")


@pytest.fixture
def chatter_actor(chatter):
    return Actor(user=chatter)


def pump() -> None:
    """Stream every queued reply (a burst worker of the chat queue runs the pump to the end)."""
    run_jobs("chat")
