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
from tests.leaderboards.boardkit import MAIN, make_models, scored

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


def test_ties_and_how_the_intervals_are_computed_are_on_the_page(live_server, page, shot):  # noqa: F811
    task = TaskFactory(code="browser-ties", owners=[UserFactory(username="ties-owner")])
    dataset = DatasetFactory(task=task, slug="only", round=task.rounds.get(number=1))

    def metrics(index, dataset):
        # Two identical models, then a clearly worse one.
        return {MAIN: 80.0 if index < 2 else 60.0, "examples_per_second": 10.0}

    make_models(task, 3, [dataset], metrics_of=metrics)
    page.goto(live_server.url + reverse("leaderboards:task", args=[task.code]))
    rows = page.locator("[data-testid=leaderboard] tbody tr")
    top = rows.nth(0).locator(".lb-next")
    assert "ahead in 50% of resamples" in top.inner_text()
    assert top.locator("[data-tie='1']").first.is_visible()
    assert "ahead in 100% of resamples" in rows.nth(1).locator(".lb-next").inner_text()
    assert rows.nth(1).locator("[data-tie='1']").count() == 0

    help_text = page.locator("[data-testid=interval-help]")
    assert not help_text.locator("p").first.is_visible()
    help_text.locator("summary").click()
    assert "1,000" in help_text.inner_text() and "seeded with (0" in help_text.inner_text()
    shot(page, "ties and interval help")


def test_share_bars_show_and_warn_when_memory_takes_over(live_server, page, shot):  # noqa: F811
    task = TaskFactory(code="browser-shares", owners=[UserFactory(username="shares-owner")])
    dataset = DatasetFactory(task=task, slug="only", round=task.rounds.get(number=1))
    scored(
        task,
        dataset,
        {
            "accurate": {MAIN: 90.0, "examples_per_second": 10.0, "memory_utilization": 1.0},
            "middle": {MAIN: 85.0, "examples_per_second": 20.0, "memory_utilization": 1.1},
            "quick": {MAIN: 80.0, "examples_per_second": 40.0, "memory_utilization": 1.2},
        },
    )
    board = live_server.url + reverse("leaderboards:task", args=[task.code])
    page.goto(board + "?w_memory_utilization=1")
    assert page.locator("[data-testid=share-bar]").count() == 3
    assert page.locator("[data-testid=share-bar]").first.is_visible()
    assert page.locator("[data-testid=self-reported]").is_visible()
    warning = page.locator("[data-testid=share-warning]").first
    assert warning.is_visible() and "Memory (GB) makes up" in warning.inner_text()
    shot(page, "memory weighed in by a visitor")

    scored(task, dataset, {"file": {MAIN: 99.0}})
    page.goto(board)
    rows = page.locator("[data-testid=leaderboard] tbody tr")
    assert "file" in rows.first.inner_text()
    assert "n/a (predictions file)" in rows.first.inner_text()
    assert page.locator("[data-testid=left-out-note]").is_visible()
    shot(page, "a predictions file ranked first")
