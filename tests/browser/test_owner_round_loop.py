"""In Chromium: an owner opens rounds from the admin (carried over by default, or empty),
watches the health of the models in the loop, and reads the rounds' warnings; a worker whose
loop is down reads that the model is not answering."""

from __future__ import annotations

import re
import socket

import pytest

from models_hub import calls as hub_calls
from models_hub import services as hub_services
from models_hub.demo.sentiment import SentimentHandler
from models_hub.models import ModelStatus
from tests.annotation.conftest import POSITIVE
from tests.browser.e2e_helpers import model_server, signed_in_page
from tests.factories import ContextFactory, TaskFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def closed_port_url() -> str:
    """A loopback URL with nothing listening (connection refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.fixture
def loop_owner(db):
    return UserFactory(username="loop-owner", is_staff=True)


@pytest.fixture
def loop_task(loop_owner):
    task = TaskFactory(code="loop-e2e", name="Loop sentiment", owners=[loop_owner])
    for number in range(3):
        ContextFactory(task=task, data={"context": f"Describe meal number {number}."})
    return task


def test_owner_opens_rounds_and_watches_the_loop(
    live_server, browser, login, loop_owner, loop_task, screenshot, redis_connection
):
    with model_server(SentimentHandler) as server:
        healthy = hub_services.model_register(
            task=loop_task, owner=loop_owner, name="vader-live", endpoint_url=server.url
        )
        down = hub_services.model_register(
            task=loop_task, owner=loop_owner, name="down-model", endpoint_url=closed_port_url()
        )
        hub_calls.model_record_health(healthy.pk)
        hub_calls.model_record_health(down.pk)
        healthy.refresh_from_db()
        down.refresh_from_db()
        assert (healthy.status, down.status) == (ModelStatus.HEALTHY, ModelStatus.UNHEALTHY)
        # Registered by the task's owner: both joined round 1's loop by default.
        assert set(loop_task.rounds.get(number=1).in_loop_models.all()) == {healthy, down}

        context, page = signed_in_page(browser, login, loop_owner)
        try:
            admin_task = f"{live_server.url}/admin/tasks/task/{loop_task.pk}"
            page.goto(f"{admin_task}/open-round/")
            carry = page.locator("input[name=carry_over]")
            assert carry.is_checked()
            page.fill("textarea[name=description]", "Harder examples")
            page.get_by_role("button", name="Open round").click()
            page.wait_for_url(f"**/admin/tasks/task/{loop_task.pk}/change/")
            second = loop_task.rounds.get(number=2)
            assert second.contexts.count() == 3
            assert set(second.in_loop_models.all()) == {healthy, down}
            # Carried over, with a healthy model: round 2 has nothing to warn about.
            assert page.locator("[data-testid=round-warnings]").count() == 0

            page.goto(f"{live_server.url}/tasks/{loop_task.code}/models/loop")
            health = page.locator("[data-testid=loop-health] [data-round='2']")
            healthy_row = health.locator(f"tr[data-model='{healthy.pk}']")
            assert healthy_row.get_attribute("data-status") == "healthy"
            assert re.search(r"\d+ ms", healthy_row.inner_text())
            down_row = health.locator(f"tr[data-model='{down.pk}']").inner_text()
            assert "Unhealthy" in down_row and "never" not in down_row
            screenshot(page, "owner-round-loop")

            # A round opened empty warns on the admin page and on the task page.
            page.goto(f"{admin_task}/open-round/")
            page.locator("input[name=carry_over]").uncheck()
            page.get_by_role("button", name="Open round").click()
            page.wait_for_url(f"**/admin/tasks/task/{loop_task.pk}/change/")
            warnings = page.locator("[data-testid=round-warnings]").inner_text()
            assert "Round 3 has no contexts" in warnings and "Round 3 has no model" in warnings
            screenshot(page, "admin-task-warnings")

            page.goto(f"{live_server.url}/tasks/{loop_task.code}/")
            page.wait_for_selector("#loop-health [data-testid=loop-health]")
            assert page.locator("[data-code='round.no_contexts']").is_visible()
            assert page.locator("[data-code='loop.empty']").is_visible()
            assert (
                "No model is in the loop of this round."
                in page.locator("#loop-health").inner_text()
            )
            screenshot(page, "owner-task-warnings")
            assert not page.js_errors, page.js_errors
        finally:
            context.close()


def test_a_worker_reads_that_the_model_is_not_answering(
    live_server, browser, login, loop_owner, loop_task, screenshot, redis_connection
):
    down = hub_services.model_register(
        task=loop_task, owner=loop_owner, name="down-model", endpoint_url=closed_port_url()
    )
    hub_calls.model_record_health(down.pk)
    worker = UserFactory(username="loop-worker")
    context, page = signed_in_page(browser, login, worker)
    try:
        page.goto(f"{live_server.url}/tasks/{loop_task.code}/create")
        notice = page.locator("#loop-silent")
        assert "not answering right now" in notice.inner_text()
        screenshot(page, "worker-create-loop-silent")
        page.fill("#id_statement", POSITIVE)
        page.click("#submit-example")
        page.wait_for_selector("#no-model")
        assert page.locator("#no-model").get_attribute("data-loop") == "silent"
        assert "not answering right now" in page.locator("#no-model").inner_text()
        screenshot(page, "worker-example-loop-silent")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
