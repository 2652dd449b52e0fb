"""Attacks on chat conversations: ids of another conversation, identities before the end.

The access matrix (``test_url_matrix``) checks each role against ``worker``'s conversation;
these tests mix ids across conversations and read every answer for the hidden model names.
"""

from __future__ import annotations

import pytest
from django.db import transaction
from django.urls import reverse

from annotation.campaigns.actors import Actor
from annotation.chat import services, streams
from annotation.chat.models import ChatReply, ReplyStatus
from tests.security.probe import response_text
from tests.security.world import CHAT_MODEL_NAMES, build_world, role_client


@pytest.fixture(scope="module")
def shared_world(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), transaction.atomic():
        yield build_world(with_datasets=False)
        transaction.set_rollback(True)


@pytest.fixture
def world(shared_world, db):
    return shared_world


@pytest.fixture
def other(world):
    """A conversation of ``other_owner`` on the chat task, with one answered turn."""
    from tests.security.world import _chat_turn

    actor = Actor(user=world.users["other_owner"])
    conversation = services.conversation_start(
        task=world.chat_task, round_=world.chat_task.rounds.get(number=1), actor=actor
    )
    turn = _chat_turn(conversation, actor, "Is the other side listening?", choose=False)
    reply = ChatReply.objects.filter(turn=turn).order_by("position").first()
    return conversation, turn, reply


def _names_in(text: str) -> list[str]:
    return [name for name in CHAT_MODEL_NAMES if name in text]


def test_ids_of_another_conversation_are_not_found(world, other):
    """The worker's own conversation with another conversation's turn or reply: 404, and the
    other conversation is left as it was."""
    client = role_client(world, "worker")
    mine, code = world.conversation.pk, world.chat_task.code
    _, turn, reply = other
    page = {"code": code, "pk": mine}
    api = {"pk": mine}
    attempts = [
        ("get", reverse("annotation:chat_turn", kwargs={**page, "turn_id": turn.pk}), {}),
        (
            "post",
            reverse("annotation:chat_choose", kwargs={**page, "turn_id": turn.pk}),
            {"choice": "tie"},
        ),
        ("get", reverse("annotation:chat_reply_box", kwargs={**page, "reply_id": reply.pk}), {}),
        ("get", reverse("annotation:chat_reply_stream", kwargs={**page, "reply_id": reply.pk}), {}),
        ("post", reverse("annotation:chat_reply_retry", kwargs={**page, "reply_id": reply.pk}), {}),
        (
            "post",
            reverse("annotation:chat_reply_cancel", kwargs={**page, "reply_id": reply.pk}),
            {},
        ),
        ("get", reverse("api:reply-detail", kwargs={**api, "reply_id": reply.pk}), {}),
        ("get", reverse("api:reply-stream", kwargs={**api, "reply_id": reply.pk}), {}),
        ("post", reverse("api:reply-retry", kwargs={**api, "reply_id": reply.pk}), {}),
        ("post", reverse("api:reply-cancel", kwargs={**api, "reply_id": reply.pk}), {}),
    ]
    for method, path, data in attempts:
        response = getattr(client, method)(path, data)
        assert response.status_code == 404, (path, response.status_code)
    choice = client.post(
        reverse("api:turn-choice", kwargs={**api, "turn_id": turn.pk}),
        {"choice": "tie"},
        content_type="application/json",
    )
    assert choice.status_code == 404
    turn.refresh_from_db()
    assert turn.choice == ""


def test_a_conversation_is_found_under_its_own_task_only(world):
    """The page of the worker's conversation under another task's code: 404."""
    client = role_client(world, "worker")
    path = reverse("annotation:chat_page", kwargs={"code": world.task.code, "pk": 1})
    assert client.get(path).status_code == 404
    path = reverse(
        "annotation:chat_page", kwargs={"code": world.task.code, "pk": world.conversation.pk}
    )
    assert client.get(path).status_code == 404


def _worker_answers(world) -> dict[str, str]:
    """Every answer the worker gets about the active conversation (identities hidden)."""
    client = role_client(world, "worker")
    code, pk = world.chat_task.code, world.conversation.pk
    reply = {"pk": pk, "reply_id": world.reply.pk}
    paths = {
        "page": reverse("annotation:chat_page", kwargs={"code": code, "pk": pk}),
        "reply box": reverse("annotation:chat_reply_box", kwargs={"code": code, **reply}),
        "stream": reverse("annotation:chat_reply_stream", kwargs={"code": code, **reply}),
        "API conversation": reverse("api:conversation-detail", kwargs={"pk": pk}),
        "API reply": reverse("api:reply-detail", kwargs=reply),
        "API stream": reverse("api:reply-stream", kwargs=reply),
    }
    answers = {}
    for name, path in paths.items():
        response = client.get(path)
        assert response.status_code == 200, (name, response.status_code)
        answers[name] = response_text(response)
    choice = client.post(
        reverse("api:turn-choice", kwargs={"pk": pk, "turn_id": world.turn.pk}),
        {"choice": "tie"},
        content_type="application/json",
    )
    answers["API choice"] = response_text(choice)
    cancel = client.post(reverse("api:reply-cancel", kwargs=reply))
    answers["API cancel"] = response_text(cancel)
    return answers


def test_hidden_identities_stay_hidden_until_the_end(world):
    """Neither a model's name nor the version its server reports (which names it) reaches
    the worker while the conversation goes on."""
    assert ChatReply.objects.filter(turn=world.turn, model_version__in=CHAT_MODEL_NAMES).exists()
    leaks = {name: _names_in(text) for name, text in _worker_answers(world).items()}
    assert not any(leaks.values()), leaks


def test_validators_never_see_hidden_identities(world):
    """A validator reads the finished conversation's transcript with the names hidden."""
    path = reverse("api:example-transcript", kwargs={"pk": world.finished_conversation.example_id})
    for role in ("other_owner", "staff", "owner"):
        response = role_client(world, role).get(path)
        assert response.status_code == 200, role
        assert not _names_in(response_text(response)), role


def test_the_worker_sees_the_identities_once_finished(world):
    """The end reveals the names and versions to the conversation's worker."""
    path = reverse("api:conversation-detail", kwargs={"pk": world.finished_conversation.pk})
    data = role_client(world, "worker").get(path).json()
    assert {seat["model"] for seat in data["seats"]} == set(CHAT_MODEL_NAMES)
    versions = {reply["model_version"] for turn in data["turns"] for reply in turn["replies"]}
    assert versions == set(CHAT_MODEL_NAMES)


def test_the_stream_relay_drops_the_model_version(world, redis_connection):
    """A terminal event from the pump carries the model's version: the relayed event does not
    (page and API streams)."""
    ChatReply.objects.filter(pk=world.reply.pk).update(status=ReplyStatus.STREAMING)
    key = streams.reply_key(world.reply.pk, world.reply.attempt)
    streams.publish(key, streams.TEXT, "An answer.", redis_connection)
    streams.publish(
        key,
        streams.DONE,
        {"status": "done", "model_version": CHAT_MODEL_NAMES[0], "latency_ms": 1.0},
        redis_connection,
    )
    client = role_client(world, "worker")
    reply = {"pk": world.conversation.pk, "reply_id": world.reply.pk}
    for path in (
        reverse("annotation:chat_reply_stream", kwargs={"code": world.chat_task.code, **reply}),
        reverse("api:reply-stream", kwargs=reply),
    ):
        body = response_text(client.get(path))
        assert "event: done" in body and '"latency_ms": 1.0' in body, body
        assert not _names_in(body), body


def test_a_campaign_worker_chats_within_the_quota(world):
    """A crowd worker of the chat task's create campaign starts conversations until the quota
    is met, then is sent to the completion page like the create page does."""
    from django.test import Client

    from annotation.campaigns.links import campaign_link_path
    from tests.factories import CampaignFactory, ExampleFactory

    owner = world.users["owner"]
    campaign = CampaignFactory(task=world.chat_task, created_by=owner, quota=1)
    client = Client()
    assert client.get(campaign_link_path(campaign) + "sec-chat-crowd").status_code == 302
    home = reverse("annotation:chat_home", kwargs={"code": world.chat_task.code})
    assert client.get(home).status_code == 200
    started = client.post(home)
    assert started.status_code == 302
    conversations = world.chat_task.conversations.filter(campaign_worker__campaign=campaign)
    assert conversations.count() == 1
    worker = campaign.workers.get()
    ExampleFactory(task=world.chat_task, user=None, campaign_worker=worker, context=None)
    done = reverse("annotation:campaign_done")
    for method in ("get", "post"):
        response = getattr(client, method)(home)
        assert response.status_code == 302 and response.url == done, method
    assert conversations.count() == 1
