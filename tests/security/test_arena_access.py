"""Attacks on the arena: battle ids of another worker or task, identities before the vote,
exclusions by non-owners, private arenas, sealed and unsealed exports, the campaign quota.

The access matrix (``test_url_matrix``) checks each role against ``worker``'s battle on the
world's sealed arena; these tests mix ids across battles and tasks, read every answer for the
hidden model names, and cover the methods the matrix does not call.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse

from annotation.arena import services
from annotation.arena.models import ArenaBattle
from annotation.campaigns.actors import Actor
from annotation.chat.models import ChatReply
from tests.factories import TaskFactory, demo_config
from tests.security.probe import response_text
from tests.security.world import ARENA_MODEL_NAMES, _chat_turn, build_world, role_client


@pytest.fixture(scope="module")
def shared_world(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), transaction.atomic():
        yield build_world(with_datasets=False)
        transaction.set_rollback(True)


@pytest.fixture
def world(shared_world, db):
    return shared_world


@pytest.fixture
def other_battle(world):
    """A battle of ``other_owner`` on the arena, answered, waiting for its vote."""
    actor = Actor(user=world.users["other_owner"])
    battle = services.battle_start(
        task=world.arena_task,
        round_=world.arena_task.rounds.get(number=1),
        actor=actor,
        rng=np.random.default_rng(1),
    )
    _chat_turn(battle.conversation, actor, "Is the other side listening?", choose=False)
    return battle


def _names_in(text: str) -> list[str]:
    return [name for name in ARENA_MODEL_NAMES if name in text]


def _battle_paths(code: str, pk: int) -> dict[str, tuple[str, str, dict]]:
    """Every way to read or vote on battle ``pk`` (pages under task ``code``, and the API)."""
    page = {"code": code, "pk": pk}
    return {
        "page": ("get", reverse("annotation:arena_battle", kwargs=page), {}),
        "vote": ("post", reverse("annotation:arena_vote", kwargs=page), {"vote": "a"}),
        "API battle": ("get", reverse("api:battle-detail", kwargs={"pk": pk}), {}),
        "API vote": ("post", reverse("api:battle-vote", kwargs={"pk": pk}), {"vote": "a"}),
    }


def _call(client, method: str, path: str, data: dict):
    if path.startswith("/api/") and method == "post":
        return client.post(path, json.dumps(data), content_type="application/json")
    return getattr(client, method)(path, data)


def _battle_row(pk: int):
    return ArenaBattle.objects.filter(pk=pk).values_list().get()


def test_battle_ids_of_another_worker_are_not_found(world, other_battle):
    """The worker reads and votes on another worker's battle: 404, and it stays unvoted."""
    client = role_client(world, "worker")
    before = _battle_row(other_battle.pk)
    for name, (method, path, data) in _battle_paths(world.arena_task.code, other_battle.pk).items():
        response = _call(client, method, path, data)
        assert response.status_code == 404, (name, response.status_code)
    assert _battle_row(other_battle.pk) == before


def test_a_battle_is_found_under_its_own_task_only(world):
    """The worker's own battle under another task's code (a chat task, a plain task): 404."""
    client = role_client(world, "worker")
    before = _battle_row(world.battle.pk)
    for code in (world.chat_task.code, world.task.code):
        paths = _battle_paths(code, world.battle.pk)
        for name in ("page", "vote"):
            method, path, data = paths[name]
            response = _call(client, method, path, data)
            assert response.status_code == 404, (code, name, response.status_code)
    assert _battle_row(world.battle.pk) == before


def _worker_answers(world) -> dict[str, str]:
    """Every answer the worker gets about the battle that waits for its vote."""
    client = role_client(world, "worker")
    code, battle = world.arena_task.code, world.battle
    conversation = battle.conversation_id
    reply = ChatReply.objects.filter(turn__conversation=conversation).order_by("position").first()
    chat = {"code": code, "pk": conversation}
    paths = {
        "arena home": reverse("annotation:arena_home", kwargs={"code": code}),
        "battle page": reverse("annotation:arena_battle", kwargs={"code": code, "pk": battle.pk}),
        "chat page": reverse("annotation:chat_page", kwargs=chat),
        "reply box": reverse("annotation:chat_reply_box", kwargs={**chat, "reply_id": reply.pk}),
        "API battle": reverse("api:battle-detail", kwargs={"pk": battle.pk}),
        "API conversation": reverse("api:conversation-detail", kwargs={"pk": conversation}),
        "API reply": reverse("api:reply-detail", kwargs={"pk": conversation, "reply_id": reply.pk}),
    }
    answers = {}
    for name, path in paths.items():
        response = client.get(path)
        assert response.status_code == 200, (name, response.status_code)
        answers[name] = response_text(response)
    # A refused vote shows the battle page again, with the error.
    refused = client.post(
        reverse("annotation:arena_vote", kwargs={"code": code, "pk": battle.pk}),
        {"vote": "nonsense"},
    )
    assert refused.status_code == 400
    answers["refused vote"] = response_text(refused)
    return answers


def test_identities_stay_hidden_until_the_vote(world):
    """Neither model's name reaches the worker of a battle before the vote, on the arena's
    pages, chat's pages of its conversation, or the API."""
    leaks = {name: _names_in(text) for name, text in _worker_answers(world).items()}
    assert not any(leaks.values()), leaks


def test_the_vote_shows_the_models_to_its_worker_only(world):
    """After the vote, the worker sees both names; nobody else reads the battle."""
    path = reverse("api:battle-detail", kwargs={"pk": world.voted_battle.pk})
    body = role_client(world, "worker").get(path).json()
    assert body["revealed"] and {body["model_a"], body["model_b"]} == set(ARENA_MODEL_NAMES)
    for role in ("other_owner", "staff", "owner", "superuser"):
        assert role_client(world, role).get(path).status_code == 404, role


def test_the_board_and_the_export_hold_voted_battles_only(world):
    """The public board counts the voted battle, never the one waiting for its vote; the
    owners' export holds the voted battle alone."""
    code = {"code": world.arena_task.code}
    board = Client().get(reverse("annotation:arena_board_json", kwargs=code)).json()
    assert board["battles"] == 1 and sum(map(sum, board["battle_matrix"])) == 2
    lines = response_text(
        role_client(world, "owner").get(reverse("annotation:arena_battles_export", kwargs=code))
    ).splitlines()
    assert [json.loads(line)["battle_id"] for line in lines] == [world.voted_battle.pk]


def test_only_owners_exclude_raters_or_read_them(world):
    """The owners' page (POST) and the exclusions list (GET): refused to everyone else, with
    nothing excluded."""
    code = {"code": world.arena_task.code}
    manage = reverse("annotation:arena_manage", kwargs=code)
    listing = reverse("api:arena-exclusions", kwargs=code)
    rater = {"rater": f"u:{world.users['worker'].pk}", "reason": "Votes at random."}
    for role in ("worker", "other_owner", "staff"):
        client = role_client(world, role)
        assert client.post(manage, rater).status_code == 403, role
        assert client.get(listing).status_code == 403, role
    assert Client().post(manage, rater).status_code == 302  # to the sign-in page
    assert Client().get(listing).status_code == 401
    assert not world.arena_task.arena_exclusions.exists()
    owner = role_client(world, "owner")
    assert owner.post(manage, rater).status_code == 302
    assert [row["rater"] for row in owner.get(listing).json()] == [rater["rater"]]


def _private_arena(world):
    owner = world.users["owner"]
    task = TaskFactory(
        code="sec-arena-private", yaml_text=demo_config("arena"), owners=[owner], hidden=True
    )
    return task, services.snapshot_create(task, by=owner, name="Private")


def test_a_private_arena_is_found_by_its_owners_only(world):
    """A hidden task's board, its JSON, CSV and snapshots (pages and API): 404 to everyone
    but its owners, like the task itself."""
    task, snapshot = _private_arena(world)
    code = {"code": task.code}
    frozen = {**code, "snapshot_id": snapshot.pk}
    paths = [
        reverse("annotation:arena_home", kwargs=code),
        reverse("annotation:arena_board", kwargs=code),
        reverse("annotation:arena_board_json", kwargs=code),
        reverse("annotation:arena_board_csv", kwargs=code),
        reverse("annotation:arena_snapshot", kwargs=frozen),
        reverse("annotation:arena_battles_export", kwargs=code),
        reverse("api:arena-board", kwargs=code),
        reverse("api:arena-snapshots", kwargs=code),
        reverse("api:arena-snapshot", kwargs=frozen),
        reverse("api:battle-export", kwargs=code),
    ]
    for role in ("worker", "other_owner", "staff"):
        client = role_client(world, role)
        for path in paths:
            assert client.get(path).status_code == 404, (role, path)
    for path in paths[1:]:
        assert Client().get(path).status_code == 404, path
        assert role_client(world, "owner").get(path).status_code == 200, path


def test_a_snapshot_is_found_under_its_own_task_only(world):
    """Another arena's snapshot id under the public arena's code: 404 (page and API)."""
    _, snapshot = _private_arena(world)
    kwargs = {"code": world.arena_task.code, "snapshot_id": snapshot.pk}
    client = role_client(world, "worker")
    assert client.get(reverse("annotation:arena_snapshot", kwargs=kwargs)).status_code == 404
    assert client.get(reverse("api:arena-snapshot", kwargs=kwargs)).status_code == 404


def test_an_unsealed_arena_exports_its_voted_battles_to_everyone(world):
    """``sealed: false``: the battles are public data, as the config says (voted ones only)."""
    from tasks.services import task_update_config

    task_update_config(world.arena_task, demo_config("arena"), user=world.users["owner"])
    code = {"code": world.arena_task.code}
    for path in (
        reverse("annotation:arena_battles_export", kwargs=code),
        reverse("api:battle-export", kwargs=code),
    ):
        response = Client().get(path)
        assert response.status_code == 200, path
        lines = response_text(response).splitlines()
        assert [json.loads(line)["battle_id"] for line in lines] == [world.voted_battle.pk]


def test_a_campaign_worker_battles_within_the_quota(world):
    """A crowd worker of the arena's create campaign starts battles until the quota is met,
    then is sent to the completion page, as chat's start page does."""
    from annotation.campaigns.links import campaign_link_path
    from tests.factories import CampaignFactory, ExampleFactory

    campaign = CampaignFactory(task=world.arena_task, created_by=world.users["owner"], quota=1)
    client = Client()
    assert client.get(campaign_link_path(campaign) + "sec-arena-crowd").status_code == 302
    home = reverse("annotation:arena_home", kwargs={"code": world.arena_task.code})
    assert client.get(home).status_code == 200
    assert client.post(home).status_code == 302
    battles = world.arena_task.battles.filter(campaign_worker__campaign=campaign)
    assert battles.count() == 1
    worker = campaign.workers.get()
    ExampleFactory(task=world.arena_task, user=None, campaign_worker=worker, context=None)
    done = reverse("annotation:campaign_done")
    for method in ("get", "post"):
        response = getattr(client, method)(home)
        assert response.status_code == 302 and response.url == done, method
    assert battles.count() == 1


def _unpublish_first_model(world) -> str:
    from models_hub.models import RegisteredModel

    hidden = ARENA_MODEL_NAMES[0]
    RegisteredModel.objects.filter(task=world.arena_task, name=hidden).update(is_published=False)
    return hidden


def _board_paths(code: str) -> list[str]:
    kwargs = {"code": code}
    return [
        reverse("annotation:arena_board", kwargs=kwargs),
        reverse("annotation:arena_board_json", kwargs=kwargs),
        reverse("annotation:arena_board_csv", kwargs=kwargs),
        reverse("api:arena-board", kwargs=kwargs),
    ]


def test_an_unpublished_model_stays_off_the_public_board(world):
    """A model that is not published (its card is a 404 to visitors) is not named on the
    public board (page, JSON, CSV, API), as on the Dynascore board; the task's owners see
    it. The page is cached per visibility: the owners' page does not reach visitors."""
    hidden = _unpublish_first_model(world)
    owner = role_client(world, "owner")
    for role in ("owner", "superuser"):
        for path in _board_paths(world.arena_task.code):
            assert hidden in response_text(role_client(world, role).get(path)), (role, path)
    for role in (None, "worker", "other_owner", "staff"):
        client = Client() if role is None else role_client(world, role)
        for path in _board_paths(world.arena_task.code):
            response = client.get(path)
            assert response.status_code == 200, (role, path)
            assert hidden not in response_text(response), (role, path)
    code = {"code": world.arena_task.code}
    public = Client().get(reverse("annotation:arena_board_json", kwargs=code)).json()
    assert [row["model"] for row in public["rows"]] == [ARENA_MODEL_NAMES[1]]
    assert public["models"] == [ARENA_MODEL_NAMES[1]] and public["battle_matrix"] == [[0]]
    whole = owner.get(reverse("annotation:arena_board_json", kwargs=code)).json()
    assert sorted(whole["models"]) == sorted(ARENA_MODEL_NAMES)
    # Ratings are fitted on every vote: the visible row's rating is the owners' one.
    rating = {row["model"]: row["rating"] for row in whole["rows"]}[ARENA_MODEL_NAMES[1]]
    assert public["rows"][0]["rating"] == rating


def test_a_model_owner_sees_their_unpublished_model_and_nobody_else_does(world):
    """The board shows a user their own unpublished model; the page cached for them is not
    the one visitors get, before or after."""
    from models_hub.models import RegisteredModel

    hidden = _unpublish_first_model(world)
    RegisteredModel.objects.filter(task=world.arena_task, name=hidden).update(
        owner=world.users["worker"]
    )
    path = reverse("annotation:arena_board", kwargs={"code": world.arena_task.code})
    assert hidden not in response_text(Client().get(path))
    assert hidden in response_text(role_client(world, "worker").get(path))
    assert hidden not in response_text(Client().get(path))
    assert hidden not in response_text(role_client(world, "other_owner").get(path))


def test_a_snapshot_freezes_the_public_view_too(world):
    """A snapshot taken while a model was unpublished does not name it to visitors (page
    and API), even once it is published again; the owners see the whole board."""
    from annotation.arena import services as arena_services
    from models_hub.models import RegisteredModel

    hidden = _unpublish_first_model(world)
    snapshot = arena_services.snapshot_create(world.arena_task, by=world.users["owner"])
    RegisteredModel.objects.filter(task=world.arena_task, name=hidden).update(is_published=True)
    kwargs = {"code": world.arena_task.code, "snapshot_id": snapshot.pk}
    paths = [
        reverse("annotation:arena_snapshot", kwargs=kwargs),
        reverse("api:arena-snapshot", kwargs=kwargs),
    ]
    for path in paths:
        assert hidden not in response_text(role_client(world, "worker").get(path)), path
        assert hidden in response_text(role_client(world, "owner").get(path)), path
    # A snapshot frozen before the public view was kept hides today's unpublished models.
    world.arena_snapshot.refresh_from_db()
    RegisteredModel.objects.filter(task=world.arena_task, name=hidden).update(is_published=False)
    type(world.arena_snapshot).objects.filter(pk=world.arena_snapshot.pk).update(public_board=None)
    old = {"code": world.arena_task.code, "snapshot_id": world.arena_snapshot.pk}
    body = Client().get(reverse("api:arena-snapshot", kwargs=old)).json()
    assert hidden not in json.dumps(body) and body["board"]["models"] == [ARENA_MODEL_NAMES[1]]


def test_the_reveal_does_not_name_an_unpublished_model(world):
    """After the vote, the worker reads a neutral label for a model whose card they may not
    see: on the battle page, the battle API, chat's pages and API of its conversation, and
    the API of the battle's example (which names seat A's model)."""
    from models_hub.models import RegisteredModel

    battle, conversation = world.voted_battle, world.voted_battle.conversation_id
    hidden, shown = battle.model_a_name, battle.model_b_name
    RegisteredModel.objects.filter(task=world.arena_task, name=hidden).update(is_published=False)
    client = role_client(world, "worker")
    code = world.arena_task.code
    paths = [
        reverse("annotation:arena_battle", kwargs={"code": code, "pk": battle.pk}),
        reverse("api:battle-detail", kwargs={"pk": battle.pk}),
        reverse("annotation:chat_page", kwargs={"code": code, "pk": conversation}),
        reverse("api:conversation-detail", kwargs={"pk": conversation}),
    ]
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, path
        text = response_text(response)
        assert hidden not in text, path
        assert shown in text, path
    body = client.get(paths[1]).json()
    assert (body["model_a"], body["model_b"]) == ("an unpublished model", shown)
    example = battle.conversation.example_id
    body = client.get(reverse("api:example-detail", kwargs={"pk": example})).json()
    assert body["model"] is None and hidden not in json.dumps(body)


def test_an_unsealed_export_does_not_name_an_unpublished_model(world):
    """``sealed: false``: visitors download the battles without the unpublished model's name
    (page and API); the task's owners get it."""
    from tasks.services import task_update_config

    task_update_config(world.arena_task, demo_config("arena"), user=world.users["owner"])
    hidden = _unpublish_first_model(world)
    code = {"code": world.arena_task.code}
    for path in (
        reverse("annotation:arena_battles_export", kwargs=code),
        reverse("api:battle-export", kwargs=code),
    ):
        text = response_text(Client().get(path))
        assert hidden not in text and ARENA_MODEL_NAMES[1] in text, path
        line = json.loads(text.splitlines()[0])
        assert "an unpublished model" in (line["model_a"], line["model_b"])
        assert hidden in response_text(role_client(world, "owner").get(path)), path
