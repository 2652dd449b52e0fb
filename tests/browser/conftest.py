"""Playwright fixtures for browser tests in Debian's Chromium, reusable by every app.

- ``browser``: headless ``/usr/bin/chromium`` (never a downloaded browser: no
  ``playwright install``). Missing Chromium skips the test with a reason, unless ``CI=true``,
  where it fails.
- ``browser_context`` / ``page``: a fresh context per test; ``login(context, user)`` copies a
  Django session cookie into it (no password typing, no rate limiting).
- ``shot(page, name)``: a screenshot per step under ``test-artifacts/browser/<test>/``.
- ``screenshot(page, "<role>-<page>")``: the screenshot of a page for the review, under
  ``test-artifacts/screenshots/`` (role: admin, owner, worker or researcher).
- ``live_worker``: the ``live`` RQ queue run by a SimpleWorker thread, as in production;
  ``chat_worker`` the same for the ``chat`` queue (the chat pump and judge).

Use pytest-django's ``live_server`` for the site. Playwright's sync API runs an event loop
in this thread, so Django's async-safety check is relaxed for these tests only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"
SCREENSHOTS = ARTIFACTS.parent / "screenshots"


def _require_chromium() -> None:
    if Path(CHROMIUM).exists():
        return
    message = f"{CHROMIUM} is missing (apt-get install chromium); browser tests need it"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


# One Playwright per process. A module elsewhere that imports these fixtures gets its own
# session-scoped copy, and a second sync_playwright() in this thread fails ("using Playwright
# Sync API inside the asyncio loop"): the copies share this one, the last to finish stops it.
_PLAYWRIGHT: dict = {"instance": None, "users": 0}


@pytest.fixture(scope="session")
def playwright_instance():
    _require_chromium()
    from playwright.sync_api import sync_playwright

    if _PLAYWRIGHT["instance"] is None:
        _PLAYWRIGHT["instance"] = sync_playwright().start()
    _PLAYWRIGHT["users"] += 1
    try:
        yield _PLAYWRIGHT["instance"]
    finally:
        _PLAYWRIGHT["users"] -= 1
        if _PLAYWRIGHT["users"] == 0:
            _PLAYWRIGHT["instance"].stop()
            _PLAYWRIGHT["instance"] = None


@pytest.fixture(scope="session")
def browser(playwright_instance):
    browser = playwright_instance.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    yield browser
    browser.close()


@pytest.fixture
def browser_context(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.set_default_timeout(15_000)
    yield context
    context.close()


@pytest.fixture
def page(browser_context):
    return browser_context.new_page()


@pytest.fixture
def login(live_server):
    """Return ``login(context, user)``: sign ``user`` in for a browser context."""
    from django.conf import settings
    from django.test import Client

    def sign_in(context, user) -> None:
        client = Client()
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
        context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
        )

    return sign_in


@pytest.fixture
def shot(request):
    """Return ``shot(page, step)``: save a full-page screenshot for this test's step."""
    folder = ARTIFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    folder.mkdir(parents=True, exist_ok=True)
    counter = {"n": 0}

    def take(page, step: str) -> Path:
        counter["n"] += 1
        path = folder / f"{counter['n']:02d}-{re.sub(r'[^A-Za-z0-9_-]+', '_', step)}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def screenshot():
    """Return ``screenshot(page, name)``: save the full page as ``<name>.png`` for review."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = SCREENSHOTS / f"{re.sub(r'[^A-Za-z0-9_-]+', '-', name)}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def live_worker(redis_connection, live_server):
    """Run the ``live`` queue in a thread for the duration of the test."""
    from tests.annotation.conftest import BackgroundWorker

    worker = BackgroundWorker("live").start()
    yield worker
    worker.stop()


@pytest.fixture
def chat_worker(redis_connection, live_server):
    """Run the ``chat`` queue (the pump, the judge) in a thread for the duration of the test."""
    from tests.annotation.conftest import BackgroundWorker

    worker = BackgroundWorker("chat").start()
    yield worker
    worker.stop()
