"""End to end in Chromium: a worker holds a three-turn conversation with two streaming demo
chat models, picks answers, finishes; another worker validates it; the owner exports it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.chat.models import Conversation
from annotation.models import Example, Validation
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MESSAGES = ("Why does Mars look red?", "How hot should water be\nfor green tea?", "What is matcha?")


def wait_for_turn(page, number: int) -> None:
    """Until both models answered turn ``number`` and its choice form is there."""
    turn = f'.chat-turn[data-turn="{number}"]'
    page.wait_for_function(
        f"document.querySelectorAll('{turn} .reply-box[data-status=\"done\"]').length === 2",
        timeout=30_000,
    )
    page.wait_for_selector(f"{turn} .choice-form:not([hidden])")


def write(page, message: str) -> None:
    """Type ``message`` (Shift+Enter for its line breaks) and send it with Enter."""
    box = page.locator("#chat-message")
    box.click()
    for index, line in enumerate(message.split("\n")):
        if index:
            box.press("Shift+Enter")
        box.type(line)
    assert box.input_value() == message  # Shift+Enter made a new line, not a send
    box.press("Enter")


def test_a_conversation_from_chat_to_export(
    live_server, browser, login, shot, screenshot, chat_task, chat_worker, owner, tmp_path
):
    chatter = UserFactory(username="chat-worker")
    context, page = signed_in_page(browser, login, chatter)
    try:
        page.goto(f"{live_server.url}/tasks/chat/chat/")
        shot(page, "start")
        page.click("#start-chat")
        page.wait_for_selector("#chat-message")
        for number, message in enumerate(MESSAGES, start=1):
            write(page, message)
            page.wait_for_selector(f'.chat-turn[data-turn="{number}"]')
            assert page.locator("#chat-message").is_disabled()  # waiting for the models
            wait_for_turn(page, number)
            turn = page.locator(f'.chat-turn[data-turn="{number}"]')
            assert message.replace("\n", "") in turn.inner_text().replace("\n", "")
            assert turn.locator(".reply-text").nth(0).inner_text().strip()
            shot(page, f"turn-{number}-answered")
            if number == 2:
                turn.locator("label", has_text="Tie").click()
            else:
                turn.locator(".choice-form label.btn-outline-success").nth(number % 2).click()
            turn.locator(".save-choice").click()
            page.wait_for_selector(f'.chat-turn[data-turn="{number}"] .chosen-summary')
            page.wait_for_selector("#chat-message:not([disabled])")
        text = page.locator("#turns").inner_text()
        assert "Retrieval" not in text and "Rules" not in text  # identities hidden
        screenshot(page, "worker-chat-conversation")
        page.check("#fooled-1")
        page.fill("#rating", "4")
        page.fill("#free_text", "The second model made things up.")
        shot(page, "finish-form")
        page.click("#finish-submit")
        page.wait_for_selector("#finished")
        assert "Retrieval" in page.inner_text("#finished")  # revealed at the end
        shot(page, "finished")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()

    conversation = Conversation.objects.get()
    assert conversation.turns.count() == 3 and conversation.status == "finished"
    assert list(conversation.turns.values_list("choice", flat=True)) == ["best", "tie", "best"]
    example = Example.objects.get()
    assert example.model_wrong is True

    validator = UserFactory(username="chat-validator")
    context, page = signed_in_page(browser, login, validator)
    try:
        page.goto(f"{live_server.url}/tasks/chat/validate")
        page.wait_for_selector("#chat-transcript")
        transcript = page.inner_text("#chat-transcript")
        assert all(message.split("\n")[0] in transcript for message in MESSAGES)
        shot(page, "validator-transcript")
        page.check("input[name=label][value=correct]")
        page.click("#submit-validation")
        page.wait_for_selector("#nothing-to-validate")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
    assert Validation.objects.get(example=example).label == "correct"

    context, page = signed_in_page(browser, login, owner)
    try:
        page.goto(f"{live_server.url}/tasks/chat/chat/results/")
        page.wait_for_selector("#fooling-rates")
        screenshot(page, "owner-chat-results")
        lines = {}
        for kind in ("conversations", "preferences"):
            with page.expect_download() as download:
                page.click(f"#export-{kind}")
            path = Path(tmp_path) / f"{kind}.jsonl"
            download.value.save_as(path)
            lines[kind] = [json.loads(line) for line in path.read_text().splitlines()]
        (record,) = lines["conversations"]
        assert [m["role"] for m in record["messages"]] == ["user", "assistant"] * 3
        assert len(lines["preferences"]) == 2  # two "best" turns, one rejected answer each
        assert all(set(pair) == {"prompt", "chosen", "rejected"} for pair in lines["preferences"])
    finally:
        context.close()
