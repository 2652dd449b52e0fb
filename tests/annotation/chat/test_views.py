"""The conversation page: start, send, stream (server-sent events), choose, finish,
validate; real model servers and RQ jobs."""

from __future__ import annotations

import re

from annotation.chat.models import ChatReply, Conversation, ReplyStatus
from annotation.models import Example
from tests.annotation.chat.fixtures import pump
from tests.factories import UserFactory

HTMX = {"HTTP_HX_REQUEST": "true"}


def start(client, code="chat") -> Conversation:
    response = client.post(f"/tasks/{code}/chat/")
    assert response.status_code == 302
    return Conversation.objects.get(pk=int(re.search(r"/chat/(\d+)/", response.url).group(1)))


def send(client, conversation, message):
    return client.post(f"/tasks/chat/chat/{conversation.pk}/send", {"message": message}, **HTMX)


def stream_text(client, conversation, reply) -> str:
    url = f"/tasks/chat/chat/{conversation.pk}/replies/{reply.pk}/stream?attempt={reply.attempt}"
    response = client.get(url)
    assert response["Content-Type"] == "text/event-stream"
    return b"".join(response.streaming_content).decode()


def test_a_worker_holds_a_conversation_on_the_page(client, chat_task, chatter):
    client.force_login(chatter)
    page = client.get("/tasks/chat/chat/")
    assert page.status_code == 200 and b"Start a conversation" in page.content
    conversation = start(client)
    html = client.get(f"/tasks/chat/chat/{conversation.pk}/").content.decode()
    assert "Model A" in html and "Model B" in html or "chat-message" in html
    assert "Retrieval" not in html and "Rules" not in html  # identities hidden
    for number, message in enumerate(["Why does Mars look red?", "How do I fix a puncture?"], 1):
        sent = send(client, conversation, message)
        assert sent.status_code == 200
        body = sent.content.decode()
        assert message in body and "data-stream-url" in body and 'hx-swap-oob="true"' in body
        assert "disabled" in body  # the composer waits for the models
        pump()
        replies = list(
            ChatReply.objects.filter(turn__number=number, turn__conversation=conversation)
        )
        for reply in replies:
            events = stream_text(client, conversation, reply)
            assert "event: text" in events and events.rstrip().split("\n")[-2] == "event: done"
            box = client.get(f"/tasks/chat/chat/{conversation.pk}/replies/{reply.pk}/")
            assert b"Which answer is better?" in box.content
        choose = client.post(
            f"/tasks/chat/chat/{conversation.pk}/turns/{replies[0].turn_id}/choose",
            {"choice": f"best:{replies[1].position}", "slider": "60"},
            **HTMX,
        )
        assert choose.status_code == 200 and b"your pick" in choose.content
    finished = client.post(
        f"/tasks/chat/chat/{conversation.pk}/finish",
        {"verdict_given": "1", "fooled": ["1"], "rating": "4", "free_text": "ok"},
    )
    assert finished.status_code == 302
    conversation.refresh_from_db()
    assert conversation.status == "finished" and conversation.example_id
    html = client.get(f"/tasks/chat/chat/{conversation.pk}/").content.decode()
    assert "Retrieval" in html and "Rules" in html  # revealed at the end


def test_errors_show_without_a_500(client, chat_task, chatter):
    client.force_login(chatter)
    conversation = start(client)
    empty = send(client, conversation, "  ")
    assert empty.status_code == 400 and b"write a message first" in empty.content
    send(client, conversation, "hello")
    busy = send(client, conversation, "hello again")
    assert busy.status_code == 409 and b"still answering" in busy.content
    pump()
    early = client.post(f"/tasks/chat/chat/{conversation.pk}/finish", {"rating": "3"})
    assert early.status_code == 400 and b"finish-error" in early.content
    other = UserFactory(username="other")
    client.force_login(other)
    assert client.get(f"/tasks/chat/chat/{conversation.pk}/").status_code == 404


def test_a_failed_reply_shows_a_retry(client, chat_task, chatter, chat_servers):
    client.force_login(chatter)
    conversation = start(client)
    for handle in chat_servers:
        handle.stop()
    send(client, conversation, "hello")
    pump()
    reply = ChatReply.objects.filter(turn__conversation=conversation).first()
    assert reply.status == ReplyStatus.FAILED
    events = stream_text(client, conversation, reply)
    assert "event: error" in events
    html = client.get(f"/tasks/chat/chat/{conversation.pk}/").content.decode()
    assert "could not answer" in html and "retry-reply" in html
    retried = client.post(f"/tasks/chat/chat/{conversation.pk}/replies/{reply.pk}/retry", **HTMX)
    assert retried.status_code == 200 and b"data-stream-url" in retried.content
    cancel = client.post(f"/tasks/chat/chat/{conversation.pk}/replies/{reply.pk}/cancel")
    assert cancel.status_code == 204


def test_validators_read_the_whole_transcript(client, chat_task, chatter):
    client.force_login(chatter)
    conversation = start(client)
    for message in ("What is tea?", "What is matcha?"):
        send(client, conversation, message)
        pump()
        turn = conversation.turns.order_by("-number").first()
        client.post(
            f"/tasks/chat/chat/{conversation.pk}/turns/{turn.pk}/choose", {"choice": "tie"}, **HTMX
        )
    client.post(
        f"/tasks/chat/chat/{conversation.pk}/finish",
        {"verdict_given": "1", "fooled": ["0"], "rating": "2"},
    )
    example = Example.objects.get()
    assert example.model_wrong is True  # fooling examples are validated first
    client.force_login(UserFactory(username="validator"))
    html = client.get("/tasks/chat/validate").content.decode()
    assert 'id="chat-transcript"' in html and "What is matcha?" in html
    assert "Retrieval" not in html  # hidden from validators too
    response = client.post(
        "/tasks/chat/validate",
        {
            "example_id": example.pk,
            "label": "correct",
            "config_version": example.config_version_id,
        },
    )
    assert response.status_code == 302
    assert example.validations.count() == 1
