"""The chat exports load with the ``datasets`` library's JSON loader, in the layouts that
chat fine-tuning (OpenAI ``messages``) and TRL's DPO trainer (prompt/chosen/rejected) read."""

from __future__ import annotations

import json
import os

import pytest

from annotation.chat import services
from annotation.chat.export import conversation_lines, preference_lines
from annotation.chat.models import ChatReply
from annotation.chat.services import FinishForm
from tests.annotation.chat.fixtures import pump

# Nothing may reach the Hugging Face Hub: the loader reads local files only.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
datasets = pytest.importorskip("datasets", reason="datasets (requirements-dev.txt) is missing")


def hold(task, actor, choices):
    conversation = services.conversation_start(
        task=task, round_=task.rounds.get(number=1), actor=actor
    )
    for message, choice in choices:
        turn = services.turn_send(conversation, actor, message)
        pump()
        replies = list(ChatReply.objects.filter(turn=turn).order_by("position"))
        best = replies[1].position if choice == "best" else None
        services.turn_choose(conversation, actor, turn.pk, choice, best, 40)
    services.conversation_finish(
        conversation, actor, FinishForm(fooled_positions=(0,), rating=3, free_text="fine")
    )
    return conversation


def test_both_exports_load_with_the_datasets_json_loader(chat_task, chatter_actor, tmp_path):
    hold(chat_task, chatter_actor, [("Why does Mars look red?", "best"), ("What is tea?", "tie")])
    hold(chat_task, chatter_actor, [("hello", "all_bad"), ("How do I fix a puncture?", "best")])
    services.conversation_start(
        task=chat_task, round_=chat_task.rounds.get(number=1), actor=chatter_actor
    )  # an unfinished conversation is not exported

    conversations = tmp_path / "conversations.jsonl"
    conversations.write_text("".join(conversation_lines(chat_task)))
    loaded = datasets.load_dataset(
        "json", data_files=str(conversations), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert loaded.num_rows == 2
    first = loaded[0]
    assert [m["role"] for m in first["messages"]] == ["user", "assistant", "user", "assistant"]
    assert first["messages"][0]["content"] == "Why does Mars look red?"
    meta = first["metadata"]
    assert meta["rating"] == 3 and meta["free_text"] == "fine" and len(meta["turns"]) == 2
    reply = meta["turns"][0]["replies"][0]
    assert reply["completion_tokens"] > 0 and reply["finish_reason"] == "stop"
    assert meta["turns"][0]["best"] in {m["name"] for m in meta["models"]}
    assert meta["worker"] and str(chatter_actor.user.pk) != meta["worker"]
    # The assistant message of a "best" turn is the pick.
    picked = meta["turns"][0]["replies"][1]["text"]
    assert first["messages"][1]["content"] == picked

    pairs = tmp_path / "preferences.jsonl"
    pairs.write_text("".join(preference_lines(chat_task)))
    loaded = datasets.load_dataset(
        "json", data_files=str(pairs), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert loaded.column_names == ["prompt", "chosen", "rejected"]
    assert loaded.num_rows == 2  # one "best" turn per conversation, two models each
    second = loaded[1]
    assert [m["role"] for m in second["prompt"]] == ["user", "assistant", "user"]
    assert second["prompt"][-1]["content"] == "How do I fix a puncture?"
    assert second["chosen"][0]["role"] == "assistant"
    assert second["chosen"][0]["content"] != second["rejected"][0]["content"]


def test_preferences_with_metadata_name_the_models(chat_task, chatter_actor):
    hold(chat_task, chatter_actor, [("What is matcha?", "best"), ("thanks", "tie")])
    (line,) = list(preference_lines(chat_task, with_metadata=True))
    pair = json.loads(line)
    names = {model.name for model in chat_task.chat_models}
    assert {pair["metadata"]["chosen_model"], pair["metadata"]["rejected_model"]} == names
    assert pair["metadata"]["turn"] == 1 and pair["metadata"]["slider"] == 40


def test_the_owner_downloads_exports_from_the_results_page(client, chat_task, chatter_actor):
    hold(chat_task, chatter_actor, [("What is matcha?", "best"), ("thanks", "tie")])
    owner = chat_task.owners.first()
    client.force_login(owner)
    page = client.get("/tasks/chat/chat/results/")
    assert page.status_code == 200 and b"fooling-rates" in page.content
    assert b"100%" in page.content and b"0%" in page.content
    got = client.get("/tasks/chat/chat/export/conversations.jsonl")
    assert got["Content-Type"].startswith("application/x-ndjson")
    assert len(b"".join(got.streaming_content).splitlines()) == 1
    client.force_login(chatter_actor.user)
    assert client.get("/tasks/chat/chat/export/preferences.jsonl").status_code == 403
