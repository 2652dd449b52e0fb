"""The client generated from the live schema holds a whole conversation: start, send, read
the stream, choose, finish; a validator reads the transcript and validates; the owner
exports both chat formats. Sibling of ``test_generated_client.py`` (its fixture)."""

from __future__ import annotations

import json

import pytest

from api.auth import api_token_create
from tests.annotation.conftest import BackgroundWorker
from tests.api.test_generated_client import _api, _client, generate_client
from tests.factories import UserFactory


@pytest.fixture(scope="module")
def chat_client(live_server, tmp_path_factory):
    """The client generated from the live schema (as ``generated_client`` makes it)."""
    yield from generate_client(live_server.url, tmp_path_factory.mktemp("chat-client"))


@pytest.fixture
def chat_worker(chat_task):
    worker = BackgroundWorker("chat").start()
    yield worker
    worker.stop()


def test_the_generated_client_holds_a_conversation(
    chat_client, live_server, chat_task, owner, chat_worker
):
    generated_client = chat_client
    models = _api(generated_client, "models")
    types = _api(generated_client, "types")
    chatter = UserFactory(username="client-chatter")
    client = _client(generated_client, live_server, api_token_create(chatter))
    conversations = "api.conversations."

    started = _api(generated_client, conversations + "tasks_conversations_create").sync(
        "chat", client=client
    )
    assert isinstance(started, models.Conversation), started
    assert started.min_turns == 2 and [seat.model for seat in started.seats] == [
        "Model A",
        "Model B",
    ]
    send = _api(generated_client, conversations + "conversations_turns_create")
    stream = _api(generated_client, conversations + "conversations_replies_stream_retrieve")
    wait = _api(generated_client, conversations + "conversations_replies_retrieve")
    choose = _api(generated_client, conversations + "conversations_turns_choice_create")
    for message, choice in (("Why does Mars look red?", "best"), ("What is tea?", "tie")):
        turn = send.sync(started.id, client=client, body=models.TurnCreateRequest(message=message))
        assert isinstance(turn, models.Turn) and len(turn.replies) == 2
        events = stream.sync(started.id, turn.replies[0].id, client=client, attempt=1)
        assert isinstance(events, types.File), events
        text = events.payload.read().decode()
        assert "event: text" in text and "event: done" in text
        for reply in turn.replies:
            done = wait.sync(started.id, reply.id, client=client, wait=10)
            assert done.status == models.ReplyStatusEnum.DONE and done.text
            assert isinstance(done.completion_tokens, int)
        body = models.ChoiceRequest(choice=models.ChoiceEnum(choice))
        if choice == "best":
            body.best_position = turn.replies[1].position
            body.slider = 70
        chosen = choose.sync(started.id, turn.id, client=client, body=body)
        assert isinstance(chosen, models.Turn) and chosen.choice == choice

    finish = _api(generated_client, conversations + "conversations_finish_create")
    finished = finish.sync(
        started.id,
        client=client,
        body=models.FinishRequest(fooled_positions=[1], rating=4, free_text="good"),
    )
    assert isinstance(finished, models.Conversation), finished
    assert finished.status == models.ConversationStatusEnum.FINISHED
    assert isinstance(finished.example_id, int)

    # Another worker validates it with the transcript in hand.
    validator = _client(
        generated_client, live_server, api_token_create(UserFactory(username="client-val"))
    )
    transcript = _api(generated_client, conversations + "examples_transcript_retrieve").sync(
        finished.example_id, client=validator
    )
    assert isinstance(transcript, models.Transcript), transcript
    assert [message["role"] for message in transcript.messages] == ["user", "assistant"] * 2
    create = _api(generated_client, "api.validations.tasks_validations_create")
    validation = create.sync(
        "chat",
        client=validator,
        body=models.ValidationCreateRequest(
            example_id=finished.example_id, label=models.LabelEnum.CORRECT
        ),
    )
    assert isinstance(validation, models.Validation), validation

    # The owner exports the conversation and its preference pair.
    owner_client = _client(generated_client, live_server, api_token_create(owner))
    export = _api(generated_client, "api.exports.tasks_conversations_export_retrieve")
    lines = export.sync("chat", client=owner_client).payload.read().splitlines()
    (record,) = [json.loads(line) for line in lines]
    assert len(record["messages"]) == 4 and record["metadata"]["rating"] == 4
    kind = models.TasksConversationsExportRetrieveKind.PREFERENCES
    pairs = export.sync("chat", client=owner_client, kind=kind).payload.read().splitlines()
    (pair,) = [json.loads(line) for line in pairs]
    assert set(pair) == {"prompt", "chosen", "rejected"}
