"""The chat API: a whole conversation, the stream, the choice, the finish, the validator's
transcript and the owner's exports; real model servers and RQ jobs."""

from __future__ import annotations

import json

from tests.annotation.chat.fixtures import pump
from tests.api.conftest import client_for
from tests.factories import UserFactory


def hold_turn(client, conversation_id: int, message: str, choice: dict | None = None):
    turn = client.post(
        f"/api/v1/conversations/{conversation_id}/turns/", {"message": message}, format="json"
    )
    assert turn.status_code == 201, turn.content
    assert {reply["status"] for reply in turn.json()["replies"]} == {"streaming"}
    pump()
    replies = []
    for reply in turn.json()["replies"]:
        got = client.get(f"/api/v1/conversations/{conversation_id}/replies/{reply['id']}/?wait=5")
        assert got.status_code == 200 and got.json()["status"] == "done"
        replies.append(got.json())
    if choice is not None:
        chosen = client.post(
            f"/api/v1/conversations/{conversation_id}/turns/{turn.json()['id']}/choice/",
            choice
            | ({"best_position": replies[0]["position"]} if choice["choice"] == "best" else {}),
            format="json",
        )
        assert chosen.status_code == 200, chosen.content
    return turn.json(), replies


def test_a_conversation_through_the_api(chat_task, chatter, owner):
    client = client_for(chatter)
    started = client.post("/api/v1/tasks/chat/conversations/")
    assert started.status_code == 201
    conversation = started.json()
    assert [seat["model"] for seat in conversation["seats"]] == ["Model A", "Model B"]
    cid = conversation["id"]
    turn, replies = hold_turn(
        client, cid, "Why does Mars look red?", {"choice": "best", "slider": 80}
    )
    assert all(reply["completion_tokens"] and reply["latency_ms"] for reply in replies)
    stream = client.get(replies[0]["stream_url"])
    body = b"".join(stream.streaming_content).decode()
    assert stream["Content-Type"] == "text/event-stream" and "event: done" in body
    refused = client.post(f"/api/v1/conversations/{cid}/finish/", {}, format="json")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "chat.too_short"
    hold_turn(client, cid, "What is matcha?", {"choice": "tie"})
    finished = client.post(
        f"/api/v1/conversations/{cid}/finish/",
        {"fooled_positions": [0], "rating": 5, "free_text": "nice", "metadata": {}},
        format="json",
    )
    assert finished.status_code == 200, finished.content
    done = finished.json()
    assert done["status"] == "finished" and done["example_id"] and done["model_wrong"] is True
    assert {seat["model"] for seat in done["seats"]} == {"Retrieval", "Rules"}

    validator = client_for(UserFactory(username="api-validator"))
    example = validator.get("/api/v1/tasks/chat/validations/next/").json()
    example_id = example["example"]["id"] if "example" in example else example["id"]
    transcript = validator.get(f"/api/v1/examples/{example_id}/transcript/")
    assert transcript.status_code == 200
    messages = transcript.json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert {r["model"] for t in transcript.json()["turns"] for r in t["replies"]} == {
        "Model A",
        "Model B",
    }
    stranger = client_for(UserFactory(username="api-stranger")).get(f"/api/v1/conversations/{cid}/")
    assert stranger.status_code == 404

    exported = client_for(owner).get("/api/v1/tasks/chat/conversations/export/?kind=preferences")
    lines = [json.loads(line) for line in b"".join(exported.streaming_content).splitlines()]
    assert len(lines) == 1 and set(lines[0]) == {"prompt", "chosen", "rejected"}
    worker_export = client.get("/api/v1/tasks/chat/conversations/export/")
    assert worker_export.status_code == 403


def test_bad_input_is_a_clear_400(chat_task, chatter):
    client = client_for(chatter)
    cid = client.post("/api/v1/tasks/chat/conversations/").json()["id"]
    too_long = client.post(
        f"/api/v1/conversations/{cid}/turns/", {"message": "x" * 3000}, format="json"
    )
    assert too_long.status_code == 400
    assert too_long.json()["error"]["code"] == "chat.message_too_long"
    wrong = client.post(
        f"/api/v1/conversations/{cid}/turns/1/choice/", {"choice": "maybe"}, format="json"
    )
    assert wrong.status_code == 400


def server_events(response) -> list[tuple[str, dict]]:
    """``(kind, data)`` of a streamed response's server-sent events (comments left out)."""
    body = b"".join(response.streaming_content).decode()
    events = []
    for block in body.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if lines:
            kind = lines[0].removeprefix("event: ")
            data = "\n".join(line.removeprefix("data: ") for line in lines[1:])
            events.append((kind, json.loads(data)))
    return events


def test_one_request_sends_the_message_and_streams_every_reply(chat_task, chatter):
    client = client_for(chatter)
    cid = client.post("/api/v1/tasks/chat/conversations/").json()["id"]
    sent = client.post(
        f"/api/v1/conversations/{cid}/turns/stream/",
        {"message": "Why does Mars look red?"},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert sent.status_code == 201 and sent["Content-Type"] == "text/event-stream"
    pump()
    events = server_events(sent)
    kind, turn = events[0]
    assert kind == "turn" and turn["number"] == 1 and len(turn["replies"]) == 2
    ids = {reply["id"] for reply in turn["replies"]}
    texts = {reply_id: "" for reply_id in ids}
    for kind, data in events[1:]:
        assert data["reply"] in ids
        if kind == "text":
            texts[data["reply"]] += data["text"]
    ended = [(kind, data["reply"]) for kind, data in events if kind != "text" and kind != "turn"]
    assert sorted(ended) == sorted(("done", reply_id) for reply_id in ids)
    assert all("model_version" not in data for _kind, data in events[1:])  # names stay hidden
    for reply_id, text in texts.items():
        stored = client.get(f"/api/v1/conversations/{cid}/replies/{reply_id}/").json()
        assert stored["status"] == "done" and stored["text"] == text and text

    # The next turn waits for the choice, as with the plain send; errors stay JSON.
    refused = client.post(
        f"/api/v1/conversations/{cid}/turns/stream/",
        {"message": "And Venus?"},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert refused.status_code == 409 and b"chat.choose_first" in refused.content
    stranger = client_for(UserFactory(username="stream-stranger")).post(
        f"/api/v1/conversations/{cid}/turns/stream/", {"message": "hi"}, format="json"
    )
    assert stranger.status_code == 404


def test_the_send_reads_the_conversation_once(chat_task, chatter, django_assert_max_num_queries):
    client = client_for(chatter)
    cid = client.post("/api/v1/tasks/chat/conversations/").json()["id"]
    hold_turn(client, cid, "Why does Mars look red?", {"choice": "tie"})
    hold_turn(client, cid, "What is matcha?", {"choice": "tie"})
    # The token; BEGIN; under the lock the conversation, its seats, the turns, their replies;
    # the turn, its replies and the conversation's time written; COMMIT. Whatever the turns.
    with django_assert_max_num_queries(10):
        sent = client.post(
            f"/api/v1/conversations/{cid}/turns/", {"message": "And tea?"}, format="json"
        )
    assert sent.status_code == 201
