"""The leaderboard after browser Back, and at a laptop's width.

1. Two slider moves, then Back: the sliders match the URL and the table, and the next move
   keeps the restored weights.
2. At 1280 px the metric columns are in view: the sliders sit above the table and the model
   column stays fixed, with a hint when the table scrolls sideways.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser.e2e_helpers import signed_in_page
from tests.factories import DatasetFactory, TaskFactory, UserFactory
from tests.leaderboards.boardkit import MAIN, scored

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIRST_ROW = "[data-testid=leaderboard] tbody tr"
SPEED = "examples_per_second"


@pytest.fixture
def board(live_server):
    task = TaskFactory(code="board-back", owners=[UserFactory(username="board-back-owner")])
    dataset = DatasetFactory(task=task, slug="main-test", round=task.rounds.get(number=1))
    metrics = {"latency_p95_ms": 100.0, "memory_utilization": 2.0, "fairness": 80.0}
    scored(
        task,
        dataset,
        {
            "accurate": {MAIN: 90.0, SPEED: 1.0, **metrics},
            "fast": {MAIN: 85.0, SPEED: 100.0, **metrics},
        },
    )
    return f"{live_server.url}/tasks/{task.code}/leaderboard/"


def query(page) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}


def slider(page, name: str) -> str:
    return page.locator(f"#w_{name}").input_value()


def test_back_restores_the_sliders_with_the_table(browser, login, board, screenshot):
    context, page = signed_in_page(browser, login, UserFactory(username="back-researcher"))
    try:
        page.goto(board)
        assert "accurate" in page.locator(FIRST_ROW).first.inner_text()
        page.locator(f"#w_{MAIN}").fill("0.5")
        page.wait_for_function(f"location.search.includes('w_{MAIN}=0.5')")
        page.wait_for_load_state("networkidle")
        table_then = page.locator("[data-testid=leaderboard] tbody").inner_text()
        page.locator(f"#w_{SPEED}").fill("5")
        page.wait_for_function(f"location.search.includes('w_{SPEED}=5')")
        page.wait_for_load_state("networkidle")
        assert page.locator("[data-testid=leaderboard] tbody").inner_text() != table_then

        page.go_back()
        page.wait_for_function(f"!location.search.includes('w_{SPEED}=5')")
        restored = query(page)
        assert restored[f"w_{MAIN}"] == "0.5"
        page.wait_for_function(f"document.querySelector('#w_{SPEED}').value !== '5'")
        assert slider(page, MAIN) == "0.5"
        assert slider(page, SPEED) == restored[f"w_{SPEED}"]
        speed_output = page.locator(f'output[data-for="w_{SPEED}"]').inner_text()
        assert float(speed_output) == float(restored[f"w_{SPEED}"])
        assert page.locator("[data-testid=leaderboard] tbody").inner_text() == table_then
        screenshot(page, "researcher-leaderboard-after-back")

        # The next move keeps the restored weights.
        page.locator("#w_latency_p95_ms").fill("2")
        page.wait_for_function("location.search.includes('w_latency_p95_ms=2')")
        after = query(page)
        assert after[f"w_{MAIN}"] == "0.5"
        assert after[f"w_{SPEED}"] == restored[f"w_{SPEED}"]
        assert not page.js_errors, page.js_errors
    finally:
        context.close()


def test_the_metric_columns_are_in_view_at_1280_px(browser, login, board, screenshot):
    context, page = signed_in_page(browser, login, None)
    try:
        page.goto(board)
        assert page.viewport_size["width"] == 1280
        table = page.locator("[data-testid=leaderboard]")
        box = page.locator(".leaderboard-scroll").first.bounding_box()
        for label in ("Latency", "Fairness"):
            header = table.locator("thead th", has_text=label).first
            cell = header.bounding_box()
            assert cell is not None
            assert cell["x"] + cell["width"] <= box["x"] + box["width"] + 1, label
        screenshot(page, "researcher-leaderboard-1280")

        # Narrower: the table scrolls, the model column stays and a hint says so.
        page.set_viewport_size({"width": 900, "height": 1000})
        page.wait_for_selector("[data-testid=scroll-hint]", state="visible")
        model_cell = table.locator("tbody .lb-model").first
        before = model_cell.bounding_box()["x"]
        page.locator(".leaderboard-scroll").first.evaluate("element => element.scrollLeft = 400")
        page.wait_for_timeout(100)
        assert abs(model_cell.bounding_box()["x"] - before) < 1
        screenshot(page, "researcher-leaderboard-900-scrolled")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
