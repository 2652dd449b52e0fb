"""A chat task loaded from Dynabench's v2 config runs conversations like its v1 twin."""

from __future__ import annotations

from pathlib import Path

from annotation.chat import services
from annotation.chat.models import ChatReply, ReplyStatus
from annotation.chat.services import FinishForm
from tests.annotation.chat.fixtures import pump, register_chat_model
from tests.factories import TaskFactory

FIXTURES = Path(__file__).resolve().parents[2] / "tasks" / "config" / "fixtures"


def v2_chat_task(owner, servers, code: str, fixture: str):
    text = (FIXTURES / fixture).read_text(encoding="utf-8")
    task = TaskFactory(code=code, yaml_text=text, owners=[owner])
    register_chat_model(task, owner, servers[0].url, "Retrieval")
    register_chat_model(task, owner, servers[1].url, "Rules")
    return task


def hold_two_turns(task, actor) -> tuple[object, list[str]]:
    conversation = services.conversation_start(
        task=task, round_=task.rounds.get(number=1), actor=actor
    )
    messages = ["Why does Mars look red?", "What is tea?"]
    for message in messages:
        turn = services.turn_send(conversation, actor, message)
        pump()
        replies = list(ChatReply.objects.filter(turn=turn).order_by("position"))
        assert [reply.status for reply in replies] == [ReplyStatus.DONE, ReplyStatus.DONE]
        assert all(reply.text for reply in replies)
        services.turn_choose(conversation, actor, turn.pk, "best", replies[1].position, 40)
    return conversation, messages


def test_a_v2_chat_task_runs_turns_and_finishes_like_its_v1_twin(
    transactional_db, owner, chat_servers, redis_connection, chatter_actor
):
    results = {}
    for fixture in ("v2_chat_compare.yaml", "chat_compare.yaml"):
        task = v2_chat_task(owner, chat_servers, fixture.split(".")[0].replace("_", "-"), fixture)
        assert task.config.chat.models_per_turn == 2
        conversation, messages = hold_two_turns(task, chatter_actor)
        assert conversation.seats.count() == 2
        example = services.conversation_finish(
            conversation,
            chatter_actor,
            FinishForm(
                fooled_positions=(0,),
                metadata={"what_went_wrong": "made up a fact", "naturalness": "fine"},
            ),
        )
        assert example.input == {"message": messages[0]}
        results[fixture] = (example.model_wrong, example.metadata, example.model_output["turns"])
    assert results["v2_chat_compare.yaml"] == results["chat_compare.yaml"]
    assert results["chat_compare.yaml"][0] is True
