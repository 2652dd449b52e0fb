"""Battles end to end at the service level: real model servers, real RQ jobs, Redis."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.db import transaction

from annotation.arena import services
from annotation.arena.export import battle_lines
from annotation.arena.models import ArenaBattle
from annotation.arena.selectors import arena_board, rater_flags, votes_today
from annotation.arena.synthetic import synthetic_battles
from annotation.campaigns.actors import Actor
from annotation.chat import services as chat_services
from annotation.chat.models import ConversationStatus
from annotation.chat.services import FinishForm
from core.errors import Conflict, NotFound, PermissionDenied, ServiceError
from tasks.services import task_update_config
from tests.annotation.arena.fixtures import seeded_battles, start
from tests.annotation.chat.fixtures import pump, register_chat_model
from tests.factories import UserFactory, demo_config


def talk(battle, actor, message: str):
    chat_services.turn_send(battle.conversation, actor, message)
    pump()


def test_a_battle_hides_its_models_until_the_vote_then_takes_no_other(arena_task, voter_actor):
    battle = start(arena_task, voter_actor)
    seats = list(battle.conversation.seats.order_by("position"))
    assert [seat.model_id for seat in seats] == [battle.model_a_id, battle.model_b_id]
    assert {battle.model_a_name, battle.model_b_name} == {"Retrieval", "Rules"}
    talk(battle, voter_actor, "How should I brew green tea?")
    voted = services.battle_vote(battle, voter_actor, "a")
    assert voted.vote == "a" and voted.revealed_at and voted.void_reason == ""
    assert voted.length_a > 0 and voted.length_b > 0
    battle.conversation.refresh_from_db()
    assert battle.conversation.status == ConversationStatus.FINISHED
    assert battle.conversation.example_id is not None
    with pytest.raises(Conflict) as late:
        services.battle_vote(battle, voter_actor, "b")
    assert late.value.code == "arena.revealed"
    assert ArenaBattle.objects.get(pk=battle.pk).vote == "a"


def test_a_vote_needs_both_answers_and_a_known_choice(arena_task, voter_actor):
    battle = start(arena_task, voter_actor)
    with pytest.raises(Conflict) as empty:
        services.battle_vote(battle, voter_actor, "a")
    assert empty.value.code == "arena.empty"
    with pytest.raises(ServiceError) as bad:
        services.battle_vote(battle, voter_actor, "c")
    assert bad.value.code == "arena.bad_vote"
    with pytest.raises(NotFound):
        services.battle_vote(battle, Actor(user=UserFactory(username="other")), "a")


def test_a_battle_finished_without_a_vote_was_revealed_and_takes_none(arena_task, voter_actor):
    battle = start(arena_task, voter_actor)
    talk(battle, voter_actor, "Why does Mars look red?")
    chat_services.conversation_finish(
        battle.conversation, voter_actor, FinishForm(fooled_positions=())
    )
    with pytest.raises(Conflict) as late:
        services.battle_vote(battle, voter_actor, "tie")
    assert late.value.code == "arena.revealed"


def test_an_answer_naming_its_model_voids_the_vote(arena_task, voter_actor):
    battle = start(arena_task, voter_actor)
    # The pattern-rule model says the message back: it names the model "Retrieval".
    talk(battle, voter_actor, "Retrieval is my favourite")
    voted = services.battle_vote(battle, voter_actor, "b")
    assert "retrieval" in voted.void_reason
    assert arena_board(arena_task).battles == 0
    line = json.loads(next(iter(battle_lines(arena_task))))
    assert line["void_reason"] == voted.void_reason and line["counted"] is False


def test_the_daily_cap_refuses_a_new_battle_and_a_vote(arena_task, voter_actor, owner):
    yaml = demo_config("arena").replace("daily_vote_cap: 200", "daily_vote_cap: 1")
    with transaction.atomic():
        task_update_config(arena_task, yaml, user=owner)
    arena_task.refresh_from_db()
    first, second = start(arena_task, voter_actor), start(arena_task, voter_actor)
    talk(first, voter_actor, "What is the largest planet?")
    talk(second, voter_actor, "What is tea?")
    services.battle_vote(first, voter_actor, "tie")
    assert votes_today(arena_task, voter_actor) == 1
    with pytest.raises(Conflict) as capped:
        services.battle_vote(second, voter_actor, "a")
    assert capped.value.code == "arena.daily_cap"
    with pytest.raises(Conflict) as no_start:
        start(arena_task, voter_actor)
    assert no_start.value.code == "arena.daily_cap" and "1 votes" in no_start.value.message


def test_a_new_vote_invalidates_the_cached_board(arena_task, voter_actor):
    assert arena_board(arena_task).battles == 0
    battle = start(arena_task, voter_actor)
    talk(battle, voter_actor, "How do I fix a flat tyre?")
    services.battle_vote(battle, voter_actor, "a")
    board = arena_board(arena_task)
    assert board.battles == 1
    winner = battle.model_a_name
    assert {row.name for row in board.rows} == {"Retrieval", "Rules"}
    assert board.rows[0].name == winner


def test_the_owner_excludes_a_raters_votes_with_a_kept_reason(arena_task, owner):
    raters = [UserFactory(username=f"rater{i}") for i in range(3)]
    seeded_battles(arena_task, arena_task.arena_models, raters, 60)
    before = arena_board(arena_task).battles
    assert before == 60
    with pytest.raises(PermissionDenied):
        services.exclusion_create(arena_task, by=raters[0], rater=f"u:{raters[0].pk}", reason="x")
    with pytest.raises(ServiceError) as no_reason:
        services.exclusion_create(arena_task, by=owner, rater=f"u:{raters[0].pk}", reason=" ")
    assert no_reason.value.code == "arena.no_reason"
    services.exclusion_create(arena_task, by=owner, rater=f"u:{raters[0].pk}", reason="too fast")
    left = ArenaBattle.objects.filter(task=arena_task, user=raters[0]).count()
    assert arena_board(arena_task).battles == before - left
    lines = [json.loads(line) for line in battle_lines(arena_task)]
    excluded = [line for line in lines if line["excluded_reason"] == "too fast"]
    assert len(excluded) == left and not any(line["counted"] for line in excluded)
    assert {flag.rater for flag in rater_flags(arena_task)} == {
        f"u:{rater.pk}" for rater in raters[1:]
    }


def test_a_rater_who_votes_against_the_crowd_is_flagged(arena_task):
    crowd = [UserFactory(username=f"crowd{i}") for i in range(4)]
    contrarian = UserFactory(username="contrarian")
    seeded_battles(arena_task, arena_task.arena_models, crowd, 120, seed=3)
    for battle in ArenaBattle.objects.filter(task=arena_task, user=crowd[0])[:30]:
        battle.user = contrarian
        battle.vote = {"a": "b", "b": "a"}.get(battle.vote, battle.vote)
        battle.save()
    flags = {flag.label: flag for flag in rater_flags(arena_task)}
    assert flags["contrarian"].flagged
    assert not any(flags[f"crowd{i}"].flagged for i in range(1, 4))


def test_a_pair_below_the_minimum_is_drawn_first(arena_task, voter_actor, owner, chat_servers):
    third = register_chat_model(arena_task, owner, chat_servers[0].url, "Retrieval two")
    seeded_battles(arena_task, arena_task.arena_models, [owner], 20)
    for _ in range(3):
        battle = start(arena_task, voter_actor)
        assert third.pk in (battle.model_a_id, battle.model_b_id)
        battle.conversation.delete()


def test_snapshot_freezes_the_board_for_owners_only(arena_task, owner):
    seeded_battles(arena_task, arena_task.arena_models, [owner], 30)
    snapshot = services.snapshot_create(arena_task, by=owner, name="week 1")
    assert snapshot.board["battles"] == 30 and len(snapshot.board["rows"]) == 2
    seeded_battles(arena_task, arena_task.arena_models, [owner], 10, seed=5)
    snapshot.refresh_from_db()
    assert snapshot.board["battles"] == 30
    with pytest.raises(PermissionDenied):
        services.snapshot_create(arena_task, by=UserFactory(username="visitor"))


def test_uncertain_pairing_favours_the_pair_whose_order_is_unsure(
    arena_task, voter_actor, owner, chat_servers
):
    yaml = demo_config("arena").replace("pairing: uniform", "pairing: uncertain")
    with transaction.atomic():
        task_update_config(arena_task, yaml, user=owner)
    arena_task.refresh_from_db()
    third = register_chat_model(arena_task, owner, chat_servers[0].url, "Retrieval two")
    strong, close_one, close_two = [*arena_task.arena_models, third]
    strengths = {strong.pk: 2000.0, close_one.pk: 1000.0, close_two.pk: 1000.0}
    synthetic_battles(
        arena_task,
        arena_task.rounds.get(number=1),
        [strong, close_one, close_two],
        [owner],
        strengths,
        300,
        seed=2,
    )
    rng = np.random.default_rng(1)
    pairs = []
    for _ in range(20):
        battle = services.battle_start(
            task=arena_task, round_=arena_task.rounds.get(number=1), actor=voter_actor, rng=rng
        )
        pairs.append({battle.model_a_id, battle.model_b_id})
        battle.conversation.delete()
    assert sum(pair == {close_one.pk, close_two.pk} for pair in pairs) >= 14
