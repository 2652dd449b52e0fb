"""End to end: a researcher re-weights the leaderboard with the sliders (htmx), saves the
weighting as a fork, and opens the fork's URL (also signed out) to find the same ranking."""

from __future__ import annotations

import pytest

from leaderboards.models import LeaderboardFork
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import DatasetFactory, TaskFactory, UserFactory
from tests.leaderboards.boardkit import MAIN, scored

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIRST_ROW = "[data-testid=leaderboard] tbody tr"


def first_model(page) -> str:
    return page.locator(FIRST_ROW).first.inner_text()


def test_researcher_reweights_saves_a_fork_and_opens_its_url(live_server, browser, login, shot):
    task = TaskFactory(code="board-e2e", owners=[UserFactory(username="board-e2e-owner")])
    dataset = DatasetFactory(task=task, slug="main-test", round=task.rounds.get(number=1))
    scored(
        task,
        dataset,
        {
            "accurate": {MAIN: 90.0, "examples_per_second": 1.0},
            "fast": {MAIN: 85.0, "examples_per_second": 100.0},
        },
    )
    researcher = UserFactory(username="researcher")
    context, page = signed_in_page(browser, login, researcher)
    try:
        board = f"{live_server.url}/tasks/{task.code}/leaderboard/"
        page.goto(board)
        assert "accurate" in first_model(page)
        shot(page, "default-weights")

        page.locator(f"#w_{MAIN}").fill("0.5")
        page.locator("#w_examples_per_second").fill("5")
        page.wait_for_function("location.search.includes('w_examples_per_second=5')")
        page.wait_for_function(f"document.querySelector('{FIRST_ROW}').innerText.includes('fast')")
        shot(page, "speed-weights")

        page.fill("input[name=name]", "Speed first")
        page.fill("input[name=description]", "Throughput matters most.")
        shot(page, "fork-form-filled")
        page.get_by_role("button", name="Save as a fork").click()
        page.wait_for_url("**/leaderboard/forks/**")
        page.wait_for_selector("[data-testid=fork-banner]")
        assert "Speed first" in page.locator("[data-testid=fork-banner]").inner_text()
        assert "fast" in first_model(page)
        assert page.locator("#w_examples_per_second").input_value() == "5"
        shot(page, "fork-page")

        fork = LeaderboardFork.objects.get(task=task)
        assert fork.created_by == researcher
        assert page.url.endswith(f"/tasks/{task.code}/leaderboard/forks/{fork.slug}/")
        fork_url = page.url
        assert not page.js_errors, page.js_errors
    finally:
        context.close()

    # The fork's URL, opened by someone else (signed out): same weights, same ranking.
    other_context, other = signed_in_page(browser, login, None)
    try:
        other.goto(fork_url)
        other.wait_for_selector("[data-testid=fork-banner]")
        assert "fast" in first_model(other)
        assert other.locator("#w_examples_per_second").input_value() == "5"
        shot(other, "fork-url-opened-signed-out")
        other.goto(f"{live_server.url}/tasks/{task.code}/leaderboard/")
        assert "Speed first" in other.locator("body").inner_text()
        assert "accurate" in first_model(other)
        shot(other, "board-lists-the-fork")
        assert not other.js_errors, other.js_errors
    finally:
        other_context.close()
