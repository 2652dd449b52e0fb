"""In Chromium: a model's owner uploads a predictions file that misses ids, is told which,
accepts it as partial, and finds the score marked partial on the run page and the board."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from leaderboards.models import EvaluationRun
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import ModelFactory, TaskFactory, UserFactory
from tests.leaderboards.evalkit import import_sentiment, sentiment_prob

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _predictions(count: int) -> dict:
    rows = [
        {"uid": f"u{index}", "label": "positive", "prob": sentiment_prob("positive")}
        for index in range(count)
    ]
    body = "".join(json.dumps(row) + "\n" for row in rows).encode()
    return {"name": "outputs.jsonl", "mimeType": "application/jsonl", "buffer": body}


def test_a_partial_file_is_refused_then_accepted_and_shown_partial(
    live_server, browser, login, screenshot
):
    owner = UserFactory(username="coverage-owner")
    author = UserFactory(username="coverage-author")
    task = TaskFactory(code="coverage-e2e", owners=[owner])
    dataset = import_sentiment(task, 40, evaluate=False)
    model = ModelFactory(task=task, owner=author, name="file-model")
    context, page = signed_in_page(browser, login, author)
    try:
        page.goto(live_server.url + reverse("leaderboards:predictions_upload", args=[model.pk]))
        page.select_option("#id_dataset", dataset.slug)
        page.set_input_files("#id_file", _predictions(30))
        page.get_by_role("button", name="Upload and score").click()
        # The refusal sits under the "Accept a partial file" box (the site's crispy layout).
        refusal = page.locator("#predictions-upload .invalid-feedback")
        refusal.wait_for()
        message = refusal.inner_text()
        assert "missing 10 of 40 ids: u30, u31, u32, u33, u34, …" in message
        assert "tick “Accept a partial file”" in message
        assert not EvaluationRun.objects.filter(model=model).exists()
        screenshot(page, "researcher-predictions-missing-ids")

        page.set_input_files("#id_file", _predictions(30))
        page.check("#id_partial")
        page.get_by_role("button", name="Upload and score").click()
        page.wait_for_selector("[data-testid=score-coverage]")
        assert "30 of 40 examples (partial)" in page.locator(".run-counts").inner_text()
        bar = page.locator(".run-progress .progress-bar")
        assert bar.inner_text().strip() == "75.0%" and "bg-warning" in bar.get_attribute("class")
        assert "30 of 40" in page.locator("[data-testid=score-coverage]").inner_text()
        screenshot(page, "researcher-run-partial")

        page.goto(live_server.url + reverse("leaderboards:task", args=[task.code]))
        badge = page.locator("[data-testid=leaderboard] [data-partial]")
        assert "partial: test: 30 of 40" in badge.inner_text()
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
