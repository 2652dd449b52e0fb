"""Helpers of the end-to-end browser scenarios: signed-in pages, real loopback model servers
and a real RQ ``eval`` worker thread (no mocks)."""

from __future__ import annotations

import contextlib
import time

from tests.leaderboards.evalkit import KeywordSentiment, serving

VIEWPORT = {"width": 1280, "height": 1000}


def signed_in_page(browser, login, user):
    """Return ``(context, page)`` of a fresh browser context signed in as ``user``."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(15_000)
    if user is not None:
        login(context, user)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.js_errors = errors
    return context, page


class SlowKeywordSentiment(KeywordSentiment):
    """The deterministic keyword sentiment model, ``delay`` seconds per batch."""

    def __init__(self, delay: float = 0.05, **kwargs):
        super().__init__(**kwargs)
        self.delay = delay

    def predict(self, batch):
        time.sleep(self.delay)
        return super().predict(batch)


# A ``models_hub.server`` for a handler on a free loopback port.
model_server = serving


@contextlib.contextmanager
def eval_worker():
    """The ``eval`` queue run by a non-forking worker thread (as ``rqworker eval`` would)."""
    from tests.annotation.conftest import BackgroundWorker

    worker = BackgroundWorker("eval").start()
    try:
        yield worker
    finally:
        worker.stop()
