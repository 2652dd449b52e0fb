"""The v2 components work from the keyboard in Chromium: a slider moved with Home and the
arrow keys shows its value and is saved, a drop-down is chosen with the keys, folded
instructions open with Enter, and the example goes in with the keyboard alone."""

from __future__ import annotations

import pytest

from annotation.models import Example
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import ContextFactory, TaskFactory, UserFactory
from tests.tasks.config.samples import FIXTURE_DIR

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def claims(db, settings):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 0
    owner = UserFactory(username="owner", is_staff=True)
    text = (FIXTURE_DIR / "v2_claim_review.yaml").read_text(encoding="utf-8")
    task = TaskFactory(code="claims", yaml_text=text, owners=[owner])
    ContextFactory(task=task, data={"snippet": "The council voted on Monday."})
    return task


def test_the_v2_create_form_works_from_the_keyboard(browser, login, live_server, claims):
    worker = UserFactory(username="worker")
    context, page = signed_in_page(browser, login, worker)
    page.goto(f"{live_server.url}/tasks/claims/create")

    page.focus("textarea[name=claim]")
    page.keyboard.type("The council never voted.")
    slider = page.locator("input[name=certainty]")
    slider.focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert slider.input_value() == "3"
    assert page.locator("#div_id_certainty .scale-value").inner_text() == "3"

    page.focus("select[name=topic]")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.locator("select[name=topic]").input_value() == "health"

    summary = page.locator("summary", has_text="Instructions: tricks")
    summary.focus()
    page.keyboard.press("Enter")
    assert (
        page.locator("details:has(summary:text('Instructions: tricks'))").get_attribute("open")
        is not None
    )

    page.focus("input[name=verdict][value=refuted]")
    page.keyboard.press("Space")
    page.focus("#submit-example")
    with page.expect_navigation():
        page.keyboard.press("Enter")

    example = Example.objects.get()
    assert example.input["certainty"] == 3
    assert example.input["topic"] == "health"
    assert example.input["verdict"] == "refuted"
    assert page.js_errors == []
    context.close()
