"""Conversations end to end at the service level: real model servers, real RQ jobs, Redis."""

from __future__ import annotations

import random

import pytest

from annotation.campaigns.actors import Actor
from annotation.chat import draws, services, streams
from annotation.chat.models import ChatReply, ConversationSeat, ReplyStatus
from annotation.chat.selectors import chat_model_rates, seat_messages, turns_with_replies
from annotation.chat.services import FinishForm
from annotation.models import Example, RoundStats, WorkerStats
from core.errors import Conflict, ServiceError
from tests.annotation.chat.fixtures import pump, register_chat_model
from tests.annotation.conftest import flush_counters
from tests.factories import TaskFactory, UserFactory, demo_config

DEMO_YAML = demo_config("chat")


def start(task, actor):
    return services.conversation_start(task=task, round_=task.rounds.get(number=1), actor=actor)


def talk(conversation, actor, message: str, choose: bool = True):
    turn = services.turn_send(conversation, actor, message)
    pump()
    replies = list(ChatReply.objects.filter(turn=turn).order_by("position"))
    if choose:
        services.turn_choose(conversation, actor, turn.pk, "best", replies[0].position, 70)
    return turn, replies


def test_a_conversation_streams_replies_and_becomes_an_example(chat_task, chatter_actor):
    conversation = start(chat_task, chatter_actor)
    assert sorted(seat.model_name for seat in conversation.seats.all()) == ["Retrieval", "Rules"]
    turn, replies = talk(conversation, chatter_actor, "Why does Mars look red?")
    assert [reply.status for reply in replies] == [ReplyStatus.DONE, ReplyStatus.DONE]
    for reply in replies:
        assert reply.text and reply.latency_ms > 0 and reply.completion_tokens > 0
        assert reply.finish_reason == "stop" and reply.model_version
        assert reply.prompt_tokens and reply.raw["usage"]["completion_tokens"]
        events = streams.read(streams.reply_key(reply.pk, 1), "0-0", 10)
        assert "".join(data for _id, kind, data in events if kind == "text") == reply.text
        assert events[-1][1] == streams.DONE
    talk(conversation, chatter_actor, "What is tea?")
    example = services.conversation_finish(
        conversation,
        chatter_actor,
        FinishForm(fooled_positions=(1,), rating=4, free_text="fun", metadata={}),
    )
    assert example.model_wrong is True and example.input == {"message": turn.message}
    conversation.refresh_from_db()
    assert conversation.rating == 4 and conversation.example_id == example.pk
    fooled = ConversationSeat.objects.get(conversation=conversation, position=1)
    assert fooled.worker_fooled and fooled.fooled
    flush_counters()
    stats = RoundStats.objects.get(round=conversation.round)
    assert (stats.collected, stats.fooled) == (1, 1)
    assert WorkerStats.objects.get(user=chatter_actor.user).examples == 1
    rates = {row["model_name"]: row["rate"] for row in chat_model_rates(chat_task)}
    assert sorted(rates.values()) == [0.0, 1.0]


def test_each_model_sees_the_chosen_answer_as_history(chat_task, chatter_actor):
    conversation = start(chat_task, chatter_actor)
    talk(conversation, chatter_actor, "hello there")
    second = services.turn_send(conversation, chatter_actor, "What is matcha?")
    turns = turns_with_replies(conversation)
    best = turns[0].best_position
    chosen = next(r for r in turns[0].replies.all() if r.position == best).text
    for position in (0, 1):
        messages = seat_messages(turns, turns[1], position)
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[1]["content"] == chosen and messages[2]["content"] == second.message


def test_turn_rules(chat_task, chatter_actor):
    conversation = start(chat_task, chatter_actor)
    with pytest.raises(ServiceError) as empty:
        services.turn_send(conversation, chatter_actor, "   ")
    assert empty.value.code == "chat.empty_message"
    with pytest.raises(ServiceError) as long:
        services.turn_send(conversation, chatter_actor, "x" * 2001)
    assert long.value.code == "chat.message_too_long"
    turn = services.turn_send(conversation, chatter_actor, "hi")
    with pytest.raises(Conflict) as busy:
        services.turn_send(conversation, chatter_actor, "again")
    assert busy.value.code == "chat.answering"
    pump()
    with pytest.raises(Conflict) as unchosen:
        services.turn_send(conversation, chatter_actor, "again")
    assert unchosen.value.code == "chat.choose_first"
    with pytest.raises(Conflict) as short:
        services.conversation_finish(conversation, chatter_actor, FinishForm(fooled_positions=()))
    services.turn_choose(conversation, chatter_actor, turn.pk, "tie")
    with pytest.raises(Conflict) as short:
        services.conversation_finish(conversation, chatter_actor, FinishForm(fooled_positions=()))
    assert short.value.code == "chat.too_short"
    stranger = Actor(user=UserFactory(username="stranger"))
    with pytest.raises(ServiceError) as foreign:
        services.turn_send(conversation, stranger, "hello")
    assert foreign.value.code in ("not_found", "notfound") or foreign.value.status == 404


def test_a_failed_reply_is_retried_without_losing_the_turn(chat_task, chatter_actor, chat_servers):
    conversation = start(chat_task, chatter_actor)
    talk(conversation, chatter_actor, "hello")
    chat_servers[1].stop()
    chat_servers[0].stop()
    turn, replies = talk(conversation, chatter_actor, "What is tea?", choose=False)
    assert {reply.status for reply in replies} == {ReplyStatus.FAILED}
    assert all(reply.error_code == "model.unreachable" for reply in replies)
    events = streams.read(streams.reply_key(replies[0].pk, 1), "0-0", 10)
    assert events[-1][1] == streams.ERROR
    with pytest.raises(Conflict):
        services.turn_send(conversation, chatter_actor, "next")
    # The servers come back on new ports: point the models there, then retry the turn.
    from models_hub.demo.chat import RuleChatHandler
    from tests.annotation.conftest import ServerHandle

    handle = ServerHandle(RuleChatHandler(token_delay=0))
    try:
        for model in chat_task.chat_models:
            model.endpoint_url = handle.url
            model.save(update_fields=["endpoint_url"])
        for reply in replies:
            retried = services.reply_retry(conversation, chatter_actor, reply.pk)
            assert retried.attempt == 2 and retried.status == ReplyStatus.STREAMING
        pump()
    finally:
        handle.stop()
    statuses = set(ChatReply.objects.filter(turn=turn).values_list("status", flat=True))
    assert statuses == {ReplyStatus.DONE}
    assert len(turns_with_replies(conversation)) == 2  # the first turn is still there


def test_cancel_stops_a_streaming_reply(chat_task, chatter_actor, chat_servers):
    conversation = start(chat_task, chatter_actor)
    turn = services.turn_send(conversation, chatter_actor, "hello")
    for reply in ChatReply.objects.filter(turn=turn):
        services.reply_cancel(conversation, chatter_actor, reply.pk)
    pump()
    statuses = set(ChatReply.objects.filter(turn=turn).values_list("status", flat=True))
    assert statuses == {ReplyStatus.CANCELLED}
    reply = ChatReply.objects.filter(turn=turn).first()
    assert services.reply_retry(conversation, chatter_actor, reply.pk).attempt == 2


def test_draws_balance_models_over_workers(chat_task, owner, chat_servers):
    third = register_chat_model(chat_task, owner, chat_servers[0].url, "Third")
    from tasks.config import parse_task_config  # noqa: F401  (config already parsed)

    round_ = chat_task.rounds.get(number=1)
    chat = chat_task.current_config.parsed.chat
    met = []
    for index in range(6):
        actor = Actor(user=UserFactory(username=f"w{index}"))
        models = draws.seat_models(chat_task, round_, actor, chat, rng=random.Random(index))
        conversation = services.conversation_start(task=chat_task, round_=round_, actor=actor)
        met.extend(seat.model_id for seat in conversation.seats.all())
        assert len(models) == 2
    counts = {model.pk: met.count(model.pk) for model in [*chat_task.chat_models, third]}
    assert sorted(counts.values()) == [4, 4, 4]


def test_unique_models_never_repeat_for_a_worker(
    transactional_db, owner, chat_servers, redis_connection
):
    yaml_text = (
        DEMO_YAML.replace("unique_models: false", "unique_models: true")
        .replace("models_per_turn: 2", "models_per_turn: 1")
        .replace("  turn_choice: [best, tie, all_bad]\n", "")
    )
    task = TaskFactory(code="uchat", yaml_text=yaml_text, owners=[owner])
    register_chat_model(task, owner, chat_servers[0].url, "One")
    register_chat_model(task, owner, chat_servers[1].url, "Two")
    actor = Actor(user=UserFactory(username="solo"))
    names = {start(task, actor).seats.get().model_name for _ in range(2)}
    assert names == {"One", "Two"}
    with pytest.raises(Conflict) as exhausted:
        start(task, actor)
    assert exhausted.value.code == "chat.no_new_model"


def test_the_judge_decides_with_the_worker(transactional_db, owner, chat_servers, redis_connection):
    from tests.annotation.conftest import ServerHandle

    class Judge:
        model_version = "judge-1"

        def predict(self, batch):
            return [{} for _ in batch]

        def chat(self, messages, options):
            said = messages[-1]["content"]
            yield "Verdict: FOOLED" if "definitely" in said.lower() else "NOT_FOOLED"

    yaml_text = DEMO_YAML.replace(
        "fooled_by: worker", 'fooled_by: both\n  judge: {model: Judge, rubric: "Is it wrong?"}'
    )
    task = TaskFactory(code="jchat", yaml_text=yaml_text, owners=[owner])
    register_chat_model(task, owner, chat_servers[0].url, "Retrieval")
    register_chat_model(task, owner, chat_servers[1].url, "Rules")
    judge = ServerHandle(Judge())
    try:
        register_chat_model(task, owner, judge.url, "Judge", in_loop=False)
        actor = Actor(user=UserFactory(username="judged"))
        conversation = start(task, actor)
        talk(conversation, actor, "Is Pluto a planet?")
        talk(conversation, actor, "Is the Sun a star?")
        example = services.conversation_finish(
            conversation, actor, FinishForm(fooled_positions=(0, 1), rating=2)
        )
        assert example.model_wrong is None  # the judge has not spoken yet
        pump()
    finally:
        judge.stop()
    example = Example.objects.get(pk=example.pk)
    conversation.refresh_from_db()
    seats = {seat.model_name: seat for seat in conversation.seats.all()}
    assert seats["Rules"].judge_fooled is True and seats["Rules"].fooled is True
    assert seats["Retrieval"].judge_fooled is False and seats["Retrieval"].fooled is False
    assert example.model_wrong is True and example.verdict_source == "worker_and_judge"
    assert "FOOLED" in conversation.judge_reply and conversation.judge_raw
    flush_counters()
    assert RoundStats.objects.get(round=conversation.round).fooled == 1
