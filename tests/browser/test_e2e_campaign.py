"""End to end: a crowd worker opens a campaign link (``/c/<signed>/?PROLIFIC_PID=...``),
writes the quota of examples against the live demo sentiment model, and gets the completion
code. The model is the real VADER demo server on loopback; the ``live`` RQ queue runs in a
worker thread."""

from __future__ import annotations

import pytest

from annotation.campaigns import links
from annotation.campaigns import services as campaigns
from annotation.models import CampaignWorker, Example, ExampleStatus
from models_hub.demo.sentiment import SentimentHandler
from tests.annotation.conftest import ServerHandle, put_in_loop
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import ContextFactory, TaskFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STATEMENTS = [
    "What a wonderful, delicious and lovely dinner!",
    "Oh great, another cold soup. Just what I wanted.",
]


@pytest.fixture
def sentiment_server():
    handle = ServerHandle(SentimentHandler)
    yield handle
    handle.stop()


def test_worker_collects_examples_through_a_campaign_link_and_gets_the_code(
    live_server, browser, login, shot, live_worker, sentiment_server, settings
):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 3
    settings.ANNOTATION_POLL_WAIT_SECONDS = 1
    owner = UserFactory(username="campaign-owner", is_staff=True)
    task = TaskFactory(code="crowd-sentiment", config_name="sentiment", owners=[owner])
    ContextFactory(task=task, data={"context": "Describe a meal you ate at a new restaurant."})
    put_in_loop(task, owner, sentiment_server.url, name="vader")
    campaign = campaigns.campaign_create(
        task=task,
        round=task.rounds.get(number=1),
        name="Prolific batch 1",
        completion_code="C0MPLETE-42",
        quota=len(STATEMENTS),
        created_by=owner,
    )
    link = links.campaign_link_path(campaign)  # ends with "?PROLIFIC_PID="
    assert link.startswith("/c/") and link.endswith("?PROLIFIC_PID=")
    context, page = signed_in_page(browser, login, None)  # a crowd worker has no account
    try:
        page.goto(f"{live_server.url}{link}prolific-worker-7")
        page.wait_for_url(f"**/tasks/{task.code}/create**")
        page.wait_for_selector("#goal-banner")
        shot(page, "campaign-link-opens-create-page")
        worker = CampaignWorker.objects.get(campaign=campaign)
        assert worker.external_id == "prolific-worker-7"

        for number, statement in enumerate(STATEMENTS, start=1):
            page.fill("#id_statement", statement)
            page.check("input[name=label][value=negative]")
            page.click("#submit-example")
            page.wait_for_selector("#verdict-fooled, #verdict-not-fooled")
            shot(page, f"example-{number}-verdict")
            next_link = page.locator("#next-example")
            if number < len(STATEMENTS):
                # The link opens a new context; the form below stays on this one.
                assert next_link.inner_text().strip() == "Next context"
                # The verdict page carries the next example's form, on the same context.
                assert page.is_visible("#write-another #id_statement")
            else:
                assert next_link.inner_text().strip() == "Finish"
                assert page.locator("#write-another").count() == 0

        page.locator("#next-example").click()
        page.wait_for_selector("#completion-code")
        assert page.locator("#completion-code").inner_text().strip() == "C0MPLETE-42"
        shot(page, "completion-code")

        examples = Example.objects.filter(task=task, campaign_worker=worker)
        assert examples.count() == len(STATEMENTS)
        assert not examples.exclude(status=ExampleStatus.MODEL_ANSWERED).exists()
        worker.refresh_from_db()
        assert worker.completed_at is not None

        # Opening the link again goes straight to the code.
        page.goto(f"{live_server.url}{link}prolific-worker-7")
        page.wait_for_selector("#completion-code")
        shot(page, "link-again-shows-code")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
