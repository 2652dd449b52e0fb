"""Text models in battles: a registered text model (``dynatask`` protocol, a real loopback
model server) answers a one-turn battle beside a chat model, through the task's model input
mapping; a multi-turn arena leaves text models out with a coded reason the owners see."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction

from annotation.arena import services
from annotation.arena.export import battle_lines
from annotation.arena.selectors import TEXT_MODEL_MULTI_TURN, arena_board, skipped_models
from annotation.chat import services as chat_services
from annotation.chat.models import ChatReply, ReplyStatus
from core.errors import Conflict
from models_hub import services as hub_services
from tasks.services import task_update_config
from tests.annotation.arena.fixtures import start
from tests.annotation.chat.fixtures import pump
from tests.annotation.conftest import ServerHandle
from tests.factories import demo_config
from tests.models_hub.servers import HFHandler, RecordingServer, running


class EchoTextHandler:
    """A text model of the arena task: it reads the request key ``prompt`` (the config's
    ``model_input`` renames ``message``) and answers ``reply``; it keeps what it was sent."""

    model_version = "echo-text-1"

    def __init__(self):
        self.received: list[dict] = []
        self.lock = threading.Lock()

    def predict(self, batch: list[dict]) -> list[dict]:
        with self.lock:
            self.received.extend(batch)
        return [{"reply": f"Text answer: {item.get('prompt', '?').upper()}"} for item in batch]


@pytest.fixture
def text_server():
    handler = EchoTextHandler()
    handle = ServerHandle(handler)
    handle.handler = handler
    yield handle
    handle.stop()


def _config(max_turns: int) -> str:
    yaml = demo_config("arena").replace("max_turns: 4", f"max_turns: {max_turns}")
    return yaml + "model_input:\n  prompt: message\n"


def _use_config(task, owner, yaml: str) -> None:
    with transaction.atomic():
        task_update_config(task, yaml, user=owner)
    task.refresh_from_db()


def _register_text_model(
    task, owner, url: str, name: str = "Echo text", protocol: str = "dynatask", **fields
):
    model = hub_services.model_register(
        task=task,
        owner=owner,
        name=name,
        endpoint_url=url,
        protocol=protocol,
        read_timeout=5.0,
        in_loop=False,
        trial=False,
        is_published=True,
        **fields,
    )
    round_ = task.rounds.get(number=1)
    hub_services.model_set_in_loop(round_, [*round_.in_loop_models.all(), model], owner)
    return model


def _leave_one_chat_model(task, owner) -> None:
    round_ = task.rounds.get(number=1)
    hub_services.model_set_in_loop(round_, [task.arena_models[0]], owner)


def test_a_text_model_answers_a_one_turn_battle_beside_a_chat_model(
    arena_task, owner, voter_actor, text_server
):
    _use_config(arena_task, owner, _config(1))
    _leave_one_chat_model(arena_task, owner)
    text_model = _register_text_model(arena_task, owner, text_server.url)
    battle = start(arena_task, voter_actor)
    assert text_model.pk in (battle.model_a_id, battle.model_b_id)
    chat_services.turn_send(battle.conversation, voter_actor, "Why is the sky blue?")
    pump()
    replies = {
        reply.model_id: reply
        for reply in ChatReply.objects.filter(turn__conversation=battle.conversation)
    }
    assert {reply.status for reply in replies.values()} == {ReplyStatus.DONE}
    assert replies[text_model.pk].text == "Text answer: WHY IS THE SKY BLUE?"
    assert replies[text_model.pk].model_version == "echo-text-1"
    assert replies[arena_task.arena_models[0].pk].text  # the chat model answered as usual
    # Through the model input mapping: the message under the request key "prompt".
    assert [item["prompt"] for item in text_server.handler.received] == ["Why is the sky blue?"]
    assert "message" not in text_server.handler.received[0]
    voted = services.battle_vote(battle, voter_actor, "a")
    assert voted.void_reason == "" and voted.length_a > 0 and voted.length_b > 0
    board = arena_board(arena_task)
    assert {row.name for row in board.rows} == {"Echo text", "Retrieval"}
    line = next(iter(battle_lines(arena_task)))
    assert "Text answer: WHY IS THE SKY BLUE?" in line


def test_a_multi_turn_arena_leaves_text_models_out_with_a_reason(
    arena_task, owner, voter_actor, text_server, client
):
    _use_config(arena_task, owner, _config(3))
    text_model = _register_text_model(arena_task, owner, text_server.url)
    for _ in range(6):
        battle = start(arena_task, voter_actor)
        assert text_model.pk not in (battle.model_a_id, battle.model_b_id)
        battle.conversation.delete()
    [skipped] = skipped_models(arena_task)
    assert skipped.model_id == text_model.pk and skipped.code == TEXT_MODEL_MULTI_TURN
    client.force_login(owner)
    page = client.get("/tasks/arena/arena/manage/").content.decode()
    assert "Echo text" in page and TEXT_MODEL_MULTI_TURN in page
    # With one chat model left, no battle can be drawn: the refusal says why.
    _leave_one_chat_model(arena_task, owner)
    hub_services.model_set_in_loop(
        arena_task.rounds.get(number=1), [arena_task.arena_models[0], text_model], owner
    )
    with pytest.raises(Conflict) as refused:
        start(arena_task, voter_actor)
    assert refused.value.code == "arena.no_models" and "text model" in refused.value.message
    assert text_server.handler.received == []


SENTIMENT_OUTPUT = """output:
  - name: sentiment
    type: multiclass
    labels: [negative, neutral, positive]
perf_metric:
  type: macro_f1
  reference_name: sentiment"""


class LabelHandler:
    """A ``dynatask`` classifier of the sentiment arena: positive when the text says "good"."""

    def predict(self, batch: list[dict]) -> list[dict]:
        return [
            {"sentiment": "positive" if "good" in item["message"] else "negative"} for item in batch
        ]


def test_two_text_protocols_battle_in_a_classification_arena(arena_task, owner, voter_actor):
    """A one-turn arena whose output is a label: an ``hf_text_classification`` server (its
    labels mapped by ``label_map``) against a ``dynatask`` one; each answer is the label."""
    yaml = demo_config("arena").replace("max_turns: 4", "max_turns: 1")
    yaml = yaml.replace(
        "output:\n  - name: reply\n    type: string\nperf_metric:\n  type: chrf\n"
        "  reference_name: reply",
        SENTIMENT_OUTPUT,
    )
    assert SENTIMENT_OUTPUT in yaml
    _use_config(arena_task, owner, yaml)
    hub_services.model_set_in_loop(arena_task.rounds.get(number=1), [], owner)
    label_map = {"LABEL_0": "negative", "LABEL_1": "neutral", "LABEL_2": "positive"}
    dynatask_server = ServerHandle(LabelHandler())
    try:
        with running(RecordingServer(HFHandler)) as hf_server:
            hf = _register_text_model(
                arena_task,
                owner,
                hf_server.url,
                "HF classifier",
                protocol="hf_text_classification",
                options={"label_map": label_map},
            )
            labels = _register_text_model(arena_task, owner, dynatask_server.url, "Labeller")
            battle = start(arena_task, voter_actor)
            assert {battle.model_a_id, battle.model_b_id} == {hf.pk, labels.pk}
            chat_services.turn_send(battle.conversation, voter_actor, "A good bicycle")
            pump()
            assert [request["body"] for request in hf_server.requests] == [
                {"inputs": "A good bicycle"}
            ]
    finally:
        dynatask_server.stop()
    replies = ChatReply.objects.filter(turn__conversation=battle.conversation)
    assert {(reply.model_id, reply.status, reply.text) for reply in replies} == {
        (hf.pk, ReplyStatus.DONE, "positive"),
        (labels.pk, ReplyStatus.DONE, "positive"),
    }
    voted = services.battle_vote(battle, voter_actor, "tie")
    assert voted.void_reason == "" and arena_board(arena_task).battles == 1
