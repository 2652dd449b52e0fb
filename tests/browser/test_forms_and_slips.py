"""Forms and small slips, in Chromium at 1280 px:

1. a visitor sees the favicon and the navbar's sign-up link;
2. the predictions upload page uses the site's form layout, and its refusal of a file that
   misses examples says, under the box, to tick "Accept a partial file"; ticked, it scores;
3. the dataset page offers its inputs as a JSON Lines download.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from leaderboards.models import EvaluationRun
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import ModelFactory, TaskFactory, UserFactory
from tests.leaderboards.evalkit import import_sentiment, sentiment_prob

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_visitor_sees_the_favicon_and_the_sign_up_link(live_server, browser, login, screenshot):
    context, page = signed_in_page(browser, login, None)
    try:
        page.goto(live_server.url + "/")
        icon = page.locator("link[rel=icon]").get_attribute("href")
        response = page.request.get(live_server.url + icon)
        assert response.ok and response.headers["content-type"].startswith("image/svg+xml")
        page.locator("#nav-signup").click()
        page.wait_for_url("**/accounts/signup/")
        screenshot(page, "visitor-signup-from-navbar")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()


def test_the_predictions_refusal_says_to_tick_partial(
    live_server, browser, login, screenshot, tmp_path
):
    owner = UserFactory(username="slips-owner", is_staff=True)
    task = TaskFactory(code="sentiment", owners=[owner])
    dataset = import_sentiment(task, 6, evaluate=False, access_type="public")
    model = ModelFactory(task=task, owner=owner, name="file-model")
    lines = [
        {"uid": f"u{i}", "label": "positive", "prob": sentiment_prob("positive")} for i in range(4)
    ]
    upload = tmp_path / "predictions.jsonl"
    upload.write_text("".join(json.dumps(line) + "\n" for line in lines))
    context, page = signed_in_page(browser, login, owner)
    try:
        page.goto(live_server.url + reverse("leaderboards:predictions_upload", args=[model.pk]))
        page.select_option("select[name=dataset]", dataset.slug)
        page.set_input_files("input[name=file]", str(upload))
        page.click("#predictions-upload button[type=submit]")
        refusal = page.locator("#predictions-upload .invalid-feedback")
        refusal.wait_for()
        assert "tick “Accept a partial file”" in refusal.inner_text()
        assert "missing 2 of 6 ids" in refusal.inner_text()
        screenshot(page, "researcher-predictions-partial-refused")
        assert not EvaluationRun.objects.exists()

        page.set_input_files("input[name=file]", str(upload))
        page.check("input[name=partial]")
        page.click("#predictions-upload button[type=submit]")
        page.wait_for_url("**/runs/**")
        assert EvaluationRun.objects.filter(model=model).exists()

        page.goto(
            live_server.url
            + reverse("leaderboards:dataset_detail", args=["sentiment", dataset.slug])
        )
        with page.expect_download() as download_info:
            page.locator("[data-testid=download-inputs]").click()
        download = download_info.value
        assert download.suggested_filename == f"sentiment-{dataset.slug}-inputs.jsonl"
        rows = [json.loads(line) for line in Path(download.path()).read_text().splitlines()]
        assert [row["uid"] for row in rows] == [f"u{i}" for i in range(6)]
        screenshot(page, "researcher-dataset-download")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
