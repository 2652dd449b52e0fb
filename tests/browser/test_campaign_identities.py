"""In a browser: a campaign worker id works in one browser only; a second browser with the
same id sees the refusal page, the owner releases the id from the campaign page, and then the
second browser gets in while the first one is told it no longer works as that id."""

from __future__ import annotations

import pytest

from annotation.campaigns import links
from annotation.campaigns import services as campaigns
from annotation.models import CampaignWorker
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import ContextFactory, TaskFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_second_browser_is_refused_until_the_owner_releases_the_id(
    live_server, browser, login, shot, screenshot
):
    owner = UserFactory(username="crowd-owner", is_staff=True)
    task = TaskFactory(code="crowd-ids", config_name="sentiment", owners=[owner])
    ContextFactory(task=task, data={"context": "Describe a meal you ate at a new restaurant."})
    campaign = campaigns.campaign_create(
        task=task,
        round=task.rounds.get(number=1),
        name="Prolific batch 2",
        completion_code="C0DE",
        quota=3,
        created_by=owner,
    )
    link = f"{live_server.url}{links.campaign_link_path(campaign)}prolific-worker-9"
    first_context, first = signed_in_page(browser, login, None)
    second_context, second = signed_in_page(browser, login, None)
    owner_context, owner_page = signed_in_page(browser, login, owner)
    try:
        first.goto(link)
        first.wait_for_url(f"**/tasks/{task.code}/create**")
        shot(first, "first-browser-works")

        response = second.goto(link)
        assert response.status == 403
        heading = second.locator("#campaign-refusal").inner_text()
        assert heading == "This worker id is in use in another browser"
        message = second.locator("#campaign-refusal-message").inner_text()
        assert "prolific-worker-9" in message and "release" in message
        shot(second, "second-browser-refused")
        screenshot(second, "worker-campaign-id-in-use")

        owner_page.goto(f"{live_server.url}/tasks/{task.code}/campaigns/{campaign.pk}/")
        row = owner_page.locator('#campaign-workers tr[data-worker-id="prolific-worker-9"]')
        assert "bound" in row.inner_text()
        screenshot(owner_page, "owner-campaign-workers")
        row.get_by_role("button", name="Release").click()
        owner_page.wait_for_selector("text=Released prolific-worker-9")
        assert "free" in row.inner_text()
        shot(owner_page, "owner-released-the-id")
        assert not CampaignWorker.objects.get(campaign=campaign).binding_hash

        second.goto(link)
        second.wait_for_url(f"**/tasks/{task.code}/create**")
        shot(second, "second-browser-binds-after-release")

        response = first.reload()
        assert response.status == 403
        assert (
            "no longer works as your worker id" in first.locator("#campaign-refusal").inner_text()
        )
        shot(first, "first-browser-no-longer-works")
        screenshot(first, "worker-campaign-id-released")
        for page in (first, second, owner_page):
            assert not page.js_errors, page.js_errors
    finally:
        for context in (first_context, second_context, owner_context):
            context.close()
