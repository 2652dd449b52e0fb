"""End to end in Chromium: two workers each hold a battle with the two streaming demo chat
models and vote; the models' names show only after the vote; a vote from a page opened
before the reveal is refused; the board counts both votes."""

from __future__ import annotations

import pytest

from annotation.arena.models import ArenaBattle
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NAMES = ("Retrieval", "Rules")


def battle_and_vote(page, live_server, shot, message: str, vote: str, prefix: str) -> int:
    page.goto(f"{live_server.url}/tasks/arena/arena/")
    page.click("#start-battle")
    page.wait_for_selector("#chat-message")
    box = page.locator("#chat-message")
    box.fill(message)
    box.press("Enter")
    page.wait_for_function(
        "document.querySelectorAll('.reply-box[data-status=\"done\"]').length === 2",
        timeout=30_000,
    )
    text = page.inner_text("#turns")
    assert not any(name in text for name in NAMES)  # hidden until the vote
    assert page.locator(".model-label").nth(0).inner_text() == "Model A"
    shot(page, f"{prefix}-answered")
    page.click(f"#vote-{vote}")
    page.wait_for_selector("#revealed")
    return int(page.url.rstrip("/").split("/")[-1])


def test_two_workers_vote_see_the_reveal_and_the_board(
    live_server, browser, login, shot, screenshot, arena_task, chat_worker
):
    first, second = UserFactory(username="arena-one"), UserFactory(username="arena-two")
    context, page = signed_in_page(browser, login, first)
    try:
        battle_id = battle_and_vote(page, live_server, shot, "Why does Mars look red?", "a", "one")
        battle = ArenaBattle.objects.get(pk=battle_id)
        revealed = page.inner_text("#revealed")
        assert battle.model_a_name in revealed and battle.model_b_name in revealed
        assert "Your vote: A is better" in revealed
        screenshot(page, "worker-arena-revealed")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()

    context, page = signed_in_page(browser, login, second)
    stale = context.new_page()
    try:
        page.goto(f"{live_server.url}/tasks/arena/arena/")
        page.click("#start-battle")
        page.wait_for_selector("#chat-message")
        url = page.url
        page.locator("#chat-message").fill("How should I brew green tea?")
        page.locator("#chat-message").press("Enter")
        page.wait_for_function(
            "document.querySelectorAll('.reply-box[data-status=\"done\"]').length === 2",
            timeout=30_000,
        )
        stale.goto(url)  # a second tab, opened before the vote
        stale.wait_for_selector("#vote-form")
        page.click("#vote-tie")
        page.wait_for_selector("#revealed")
        shot(page, "two-revealed")
        stale.click("#vote-b")  # the late vote, from the tab still showing the form
        stale.wait_for_selector("[data-testid=vote-error]")
        assert "already shown" in stale.inner_text("[data-testid=vote-error]")
        shot(stale, "two-late-vote-refused")
        assert ArenaBattle.objects.get(user=second).vote == "tie"
    finally:
        context.close()

    context, page = signed_in_page(browser, login, first)
    try:
        page.goto(f"{live_server.url}/tasks/arena/arena/board/")
        page.wait_for_selector("[data-testid=arena-board]")
        assert "2 counted votes" in page.inner_text("[data-testid=arena-battles]")
        rows = page.locator("[data-testid=arena-board] tbody tr")
        assert rows.count() == 2
        assert {rows.nth(i).get_attribute("data-model") for i in range(2)} == set(NAMES)
        assert page.locator("[data-testid=win-matrix]").is_visible()
        assert page.locator("[data-testid=battle-matrix] tbody").inner_text().count("2") == 2
        screenshot(page, "worker-arena-board")
        page.click("#dynascore-board-link")
        page.wait_for_selector("#arena-board-link")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
