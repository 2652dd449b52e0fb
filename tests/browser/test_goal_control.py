"""The goal banner and the label choice are one control: a worker who picks another target
sees the goal change with it, and the example page shows what was asked and what was chosen."""

from __future__ import annotations

import pytest

from annotation.models import Example
from tests.factories import ContextFactory, TaskFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_changing_the_target_changes_the_goal(live_server, page, login, screenshot, settings):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 0
    task = TaskFactory(code="sentiment", config_name="sentiment")
    ContextFactory(task=task, data={"context": "Describe a meal you ate at a new restaurant."})
    worker = UserFactory(username="writer")
    login(page.context, worker)
    page.goto(f"{live_server.url}/tasks/sentiment/create")
    goal = page.locator("#goal-banner [data-goal-label]")
    asked = goal.inner_text()
    assert page.locator(f"#goal-banner input[name=label][value={asked}]").is_checked()
    chosen = next(label for label in ("negative", "positive", "neutral") if label != asked)

    page.check(f"#goal-banner input[name=label][value={chosen}]")
    assert goal.inner_text() == chosen
    assert goal.get_attribute("data-goal-label") == chosen
    screenshot(page, "worker-create-goal-changed")

    page.fill("#id_statement", "The soup was cold but the bread was fine.")
    page.click("#submit-example")
    page.wait_for_selector("#example-goal")
    assert page.locator("[data-asked-label]").inner_text() == asked
    assert page.locator("[data-chosen-label]").inner_text() == chosen
    screenshot(page, "worker-example-goal-asked-and-chosen")
    example = Example.objects.get()
    assert (example.asked_label, example.goal_label) == (asked, chosen)
