"""The leaderboard in Chromium: a slider re-weights the table through htmx, and the URL follows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.browser.conftest import (  # noqa: F401 - fixtures shared with the browser tests
    browser,
    browser_context,
    page,
    playwright_instance,
    shot,
)
from tests.factories import DatasetFactory, TaskFactory, UserFactory
from tests.leaderboards.boardkit import MAIN, scored

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_slider_reweights_with_htmx_and_pushes_the_url(live_server, page, shot):  # noqa: F811
    task = TaskFactory(code="browser-board", owners=[UserFactory(username="board-owner")])
    first_round = task.rounds.get(number=1)
    dataset = DatasetFactory(task=task, slug="only", round=first_round)
    scored(
        task,
        dataset,
        {
            "accurate": {MAIN: 90.0, "examples_per_second": 1.0},
            "fast": {MAIN: 85.0, "examples_per_second": 100.0},
        },
    )
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(live_server.url + reverse("leaderboards:task", args=[task.code]))
    first_model = page.locator("[data-testid=leaderboard] tbody tr").first
    assert "accurate" in first_model.inner_text()
    assert page.locator("#leaderboard-trends").is_visible()
    shot(page, "default weights")

    # Moving the sliders fires "change": htmx swaps the table and pushes the URL.
    page.locator(f"#w_{MAIN}").fill("0.5")
    page.locator("#w_examples_per_second").fill("5")
    # pushState fires no load event, so wait on the location itself.
    page.wait_for_function("location.search.includes('w_examples_per_second=5')")
    page.wait_for_function(
        "document.querySelector('[data-testid=leaderboard] tbody tr').innerText.includes('fast')"
    )
    assert page.locator("output[data-for=w_examples_per_second]").inner_text() == "5"
    assert "<html" not in page.locator("#leaderboard-table").inner_html()
    shot(page, "speed weights")

    # The pushed URL is shareable: opening it gives the same ranking.
    shared = page.url
    page.goto(shared)
    assert "fast" in page.locator("[data-testid=leaderboard] tbody tr").first.inner_text()
    assert not errors, errors
