"""The arena pages: a battle on chat's page with a vote, the reveal, the board with its CSV
and JSON, snapshots, the owners' page and the battles' export; and the API."""

from __future__ import annotations

import csv
import io
import json
import re
import time

from django.core.cache import cache

from annotation.arena import board_page
from annotation.arena.models import ArenaBattle, ArenaExclusion
from tests.annotation.arena.fixtures import seeded_battles
from tests.annotation.chat.fixtures import pump
from tests.annotation.conftest import run_jobs
from tests.factories import UserFactory

HTMX = {"HTTP_HX_REQUEST": "true"}


def start(client) -> ArenaBattle:
    response = client.post("/tasks/arena/arena/")
    assert response.status_code == 302
    return ArenaBattle.objects.get(pk=int(re.search(r"/battles/(\d+)/", response.url).group(1)))


def test_a_worker_battles_votes_and_sees_the_reveal(client, arena_task, voter):
    client.force_login(voter)
    assert b"Start a battle" in client.get("/tasks/arena/arena/").content
    battle = start(client)
    page = client.get(f"/tasks/arena/arena/battles/{battle.pk}/").content.decode()
    assert "Model A" not in page or "Retrieval" not in page
    assert "Retrieval" not in page and "Rules" not in page and 'id="vote-form"' in page
    sent = client.post(
        f"/tasks/arena/chat/{battle.conversation_id}/send", {"message": "What is tea?"}, **HTMX
    )
    assert sent.status_code == 200 and "data-stream-url" in sent.content.decode()
    pump()
    page = client.get(f"/tasks/arena/arena/battles/{battle.pk}/").content.decode()
    assert "Retrieval" not in page and "Rules" not in page
    voted = client.post(f"/tasks/arena/arena/battles/{battle.pk}/vote", {"vote": "b"})
    assert voted.status_code == 302
    page = client.get(f"/tasks/arena/arena/battles/{battle.pk}/").content.decode()
    assert battle.model_a_name in page and battle.model_b_name in page
    assert "Your vote: B is better" in page and 'id="vote-form"' not in page
    late = client.post(f"/tasks/arena/arena/battles/{battle.pk}/vote", {"vote": "a"})
    assert late.status_code == 409 and b"already shown" in late.content
    assert ArenaBattle.objects.get(pk=battle.pk).vote == "b"


def test_another_worker_cannot_see_or_vote_on_a_battle(client, arena_task, voter):
    client.force_login(voter)
    battle = start(client)
    client.force_login(UserFactory(username="intruder"))
    assert client.get(f"/tasks/arena/arena/battles/{battle.pk}/").status_code == 404
    assert (
        client.post(f"/tasks/arena/arena/battles/{battle.pk}/vote", {"vote": "a"}).status_code
        == 404
    )


def test_the_board_shows_ratings_intervals_and_matrices(
    client, arena_task, owner, django_assert_max_num_queries
):
    seeded_battles(arena_task, arena_task.arena_models, [owner], 80)
    with django_assert_max_num_queries(12):
        page = client.get("/tasks/arena/arena/board/")
    html = page.content.decode()
    assert page.status_code == 200 and 'data-testid="arena-board"' in html
    assert 'data-testid="win-matrix"' in html and 'data-testid="battle-matrix"' in html
    assert "Dynascore leaderboard" in html and "80 counted votes" in html
    board = client.get("/tasks/arena/arena/board.json").json()
    assert board["battles"] == 80 and [row["model"] for row in board["rows"]] == [
        "Retrieval",
        "Rules",
    ]
    top = board["rows"][0]
    assert top["ci_low"] <= top["rating"] <= top["ci_high"] and 0 <= top["ahead_of_next"] <= 1
    assert board["battle_matrix"] == [[0, 80], [80, 0]]
    rows = list(
        csv.reader(io.StringIO(client.get("/tasks/arena/arena/board.csv").content.decode()))
    )
    assert rows[0][:3] == ["rank", "model", "rating"] and rows[1][1] == "Retrieval"
    styled = client.get("/tasks/arena/arena/board.json?style=1").json()
    assert styled["style_control"] and styled["rows"][0]["style_controlled_rating"] is not None
    leaderboard = client.get("/tasks/arena/leaderboard/").content.decode()
    assert "/tasks/arena/arena/board/" in leaderboard


def test_owners_freeze_the_board(client, arena_task, owner, voter):
    seeded_battles(arena_task, arena_task.arena_models, [owner], 20)
    client.force_login(voter)
    assert client.post("/tasks/arena/arena/board/snapshots/", {"name": "x"}).status_code == 302
    assert not arena_task.arena_snapshots.exists()
    client.force_login(owner)
    response = client.post("/tasks/arena/arena/board/snapshots/", {"name": "Week 1"})
    snapshot = arena_task.arena_snapshots.get()
    assert response.url.endswith(f"/board/snapshots/{snapshot.pk}/")
    seeded_battles(arena_task, arena_task.arena_models, [owner], 5, seed=4)
    html = client.get(response.url).content.decode()
    assert "Week 1" in html and "from 20 counted votes" in html


def test_the_owners_page_excludes_a_rater_and_the_export_keeps_the_reason(
    client, arena_task, owner, voter
):
    seeded_battles(arena_task, arena_task.arena_models, [owner, voter], 40)
    client.force_login(voter)
    assert client.get("/tasks/arena/arena/manage/").status_code == 403
    client.force_login(owner)
    page = client.get("/tasks/arena/arena/manage/").content.decode()
    assert "40 battles started" in page and f"u:{voter.pk}" in page
    bad = client.post("/tasks/arena/arena/manage/", {"rater": "nobody", "reason": "x"})
    assert bad.status_code == 302 and not ArenaExclusion.objects.exists()
    client.post("/tasks/arena/arena/manage/", {"rater": f"u:{voter.pk}", "reason": "bot-like"})
    assert ArenaExclusion.objects.get().reason == "bot-like"
    voter_votes = ArenaBattle.objects.filter(user=voter).count()
    board = client.get("/tasks/arena/arena/board.json").json()
    assert board["battles"] == 40 - voter_votes
    lines = b"".join(client.get("/tasks/arena/arena/battles.jsonl").streaming_content)
    records = [json.loads(line) for line in lines.decode().splitlines()]
    assert len(records) == 40
    assert sum(record["excluded_reason"] == "bot-like" for record in records) == voter_votes
    decided = next(record for record in records if record["vote"] in ("a", "b"))
    assert decided["preference"]["prompt"][0]["role"] == "user"
    assert decided["preference"]["chosen"][0]["role"] == "assistant"
    tie = next(record for record in records if record["vote"] in ("tie", "both_bad"))
    assert tie["preference"] is None


def test_sealed_battles_are_for_owners_only(client, arena_task, owner, voter):
    from django.db import transaction

    from tasks.services import task_update_config
    from tests.factories import demo_config

    with transaction.atomic():
        task_update_config(
            arena_task, demo_config("arena").replace("sealed: false", "sealed: true"), user=owner
        )
    seeded_battles(arena_task, arena_task.arena_models, [owner], 3)
    client.force_login(voter)
    assert client.get("/tasks/arena/arena/battles.jsonl").status_code == 403
    assert client.get("/api/v1/tasks/arena/arena/battles/export/").status_code == 403
    client.force_login(owner)
    assert client.get("/tasks/arena/arena/battles.jsonl").status_code == 200


def test_the_api_holds_a_battle_and_serves_the_board(client, arena_task, voter, owner):
    client.force_login(voter)
    started = client.post("/api/v1/tasks/arena/arena/battles/")
    assert started.status_code == 201
    body = started.json()
    assert (body["model_a"], body["model_b"], body["revealed"]) == ("Model A", "Model B", False)
    turn = client.post(
        f"/api/v1/conversations/{body['conversation_id']}/turns/",
        {"message": "How do I oil a chain?"},
        content_type="application/json",
    )
    assert turn.status_code == 201
    pump()
    vote = client.post(
        f"/api/v1/arena/battles/{body['id']}/vote/",
        {"vote": "tie"},
        content_type="application/json",
    )
    assert vote.status_code == 200 and vote.json()["revealed"]
    assert {vote.json()["model_a"], vote.json()["model_b"]} == {"Retrieval", "Rules"}
    late = client.post(
        f"/api/v1/arena/battles/{body['id']}/vote/", {"vote": "a"}, content_type="application/json"
    )
    assert late.status_code == 409 and late.json()["error"]["code"] == "arena.revealed"
    board = client.get("/api/v1/tasks/arena/arena/board/").json()
    assert board["battles"] == 1 and len(board["rows"]) == 2
    assert (
        client.post(
            "/api/v1/tasks/arena/arena/snapshots/", {}, content_type="application/json"
        ).status_code
        == 403
    )
    client.force_login(owner)
    snapshot = client.post(
        "/api/v1/tasks/arena/arena/snapshots/", {"name": "api"}, content_type="application/json"
    )
    assert snapshot.status_code == 201 and snapshot.json()["board"]["battles"] == 1
    excluded = client.post(
        "/api/v1/tasks/arena/arena/exclusions/",
        {"rater": f"u:{voter.pk}", "reason": "test"},
        content_type="application/json",
    )
    assert excluded.status_code == 201
    raters = client.get("/api/v1/tasks/arena/arena/raters/").json()
    assert raters == []  # the only rater's votes are left out
    assert client.get("/api/v1/tasks/arena/arena/board/").json()["battles"] == 0


def test_after_a_vote_the_page_shows_the_last_board_until_the_refresh_job_ran(
    client, arena_task, owner
):
    seeded_battles(arena_task, arena_task.arena_models, [owner], 20)
    assert "20 counted votes" in client.get("/tasks/arena/arena/board/").content.decode()
    seeded_battles(arena_task, arena_task.arena_models, [owner], 5, seed=9)
    # The JSON is never stale; the page shows the last board while the job refits.
    assert client.get("/tasks/arena/arena/board.json").json()["battles"] == 25
    assert "20 counted votes" in client.get("/tasks/arena/arena/board/").content.decode()
    run_jobs("default")
    assert "25 counted votes" in client.get("/tasks/arena/arena/board/").content.decode()


def test_without_a_refresh_the_page_computes_the_board_itself_after_the_window(
    client, arena_task, owner
):
    seeded_battles(arena_task, arena_task.arena_models, [owner], 20)
    assert "20 counted votes" in client.get("/tasks/arena/arena/board/").content.decode()
    seeded_battles(arena_task, arena_task.arena_models, [owner], 5, seed=9)
    # No worker ran the refresh job, and the change is older than the window.
    long_ago = time.time() - board_page.REFRESH_SECONDS - 1
    cache.set(f"arena-board-changed:{arena_task.pk}", long_ago)
    assert "25 counted votes" in client.get("/tasks/arena/arena/board/").content.decode()
