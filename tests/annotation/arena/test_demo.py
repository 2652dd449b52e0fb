"""The demo seeds an arena over the demo chat models with synthetic votes (real servers)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.arena.demo import VOTES
from annotation.arena.models import ArenaBattle
from annotation.arena.selectors import arena_board
from models_hub.models import RegisteredModel
from tasks.models import Task

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_demo_arena_has_four_chat_models_and_a_board_with_intervals(
    demo_servers, redis_connection
):
    urls = [f"--model-url={key}={demo_servers[key]}" for key in ("chat-retrieval", "chat-rules")]
    out = io.StringIO()
    call_command("seed_demo", "--no-evaluate", *urls, stdout=out)
    assert f"seeded {VOTES} synthetic arena votes among 4 models" in out.getvalue()
    task = Task.objects.get(code="arena")
    models = RegisteredModel.objects.filter(task=task)
    assert models.count() == 4
    assert all(model.status == "healthy" for model in models), out.getvalue()
    assert set(task.rounds.get(number=1).in_loop_models.all()) == set(models)
    board = arena_board(task)
    assert board.battles == VOTES and len(board.rows) == 4
    assert all(row.low < row.rating < row.high for row in board.rows)
    assert board.rows[0].name == "Notes retrieval chat (demo)"
    call_command("seed_demo", "--no-evaluate", *urls, stdout=io.StringIO())
    assert ArenaBattle.objects.filter(task=task).count() == VOTES
    assert RegisteredModel.objects.filter(task=task).count() == 4
