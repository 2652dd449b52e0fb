"""The sign-in lockout page in Chromium: after the failure limit, a clear 429 page.

Axes is switched on for this module only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
LIMIT = 5


@pytest.fixture(autouse=True)
def axes_on(settings):
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.TRUSTED_PROXY_COUNT = 0


def test_a_locked_out_researcher_sees_the_lockout_page(live_server, page):
    UserFactory(username="researcher")
    statuses = []
    for attempt in range(LIMIT):
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", "researcher")
        page.fill("#id_password", f"not-the-password-{attempt}")
        with page.expect_navigation() as navigation:
            page.click("button[type=submit]")
        statuses.append(navigation.value.status)
    assert statuses == [200] * (LIMIT - 1) + [429]
    assert page.locator("h1").inner_text() == "Sign-in paused"
    assert "15 minutes" in page.locator("main").inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "researcher-login-locked-out.png"), full_page=True)
