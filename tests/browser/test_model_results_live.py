"""A researcher's own results, in Chromium:

1. the owner of a model reads its per-example results on a public dataset, probabilities as
   small bars with their numbers;
2. the model's results page refreshes its run history and scores when a run fails and when
   it is retried, without a reload;
3. the model card refreshes its health; a model without an endpoint says it has none.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from leaderboards.models import (
    DatasetExample,
    EvaluationRun,
    EvaluationShard,
    Prediction,
    RunStatus,
    RunTrigger,
)
from models_hub.models import ModelStatus, RegisteredModel
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import DatasetFactory, ModelFactory, TaskFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def author():
    return UserFactory(username="results-author")


@pytest.fixture
def task():
    return TaskFactory(code="results-live", owners=[UserFactory(username="results-owner")])


def test_probabilities_show_as_bars_with_numbers(
    live_server, browser, login, screenshot, author, task
):
    model = ModelFactory(task=task, owner=author, name="bars-model")
    dev = DatasetFactory(task=task, slug="dev", name="Dev set", access_type="public")
    run = EvaluationRun.objects.create(
        model=model, dataset=dev, config_version=dev.config_version, trigger="rerun"
    )
    example = DatasetExample.objects.create(
        dataset=dev,
        position=0,
        uid="p1",
        inputs={"statement": "Lovely."},
        gold={"label": "positive"},
    )
    probs = {"negative": 0.05, "positive": 0.87, "neutral": 0.08}
    Prediction.objects.create(run=run, example=example, output={"label": "positive", "prob": probs})
    context, page = signed_in_page(browser, login, author)
    try:
        page.goto(live_server.url + reverse("leaderboards:model", args=[model.pk]))
        cell = page.locator("tr[data-uid=p1] .browser-prediction")
        bars = cell.locator(".answer-probs[data-field=prob] [data-label]")
        assert bars.count() == 3
        positive = cell.locator("[data-label=positive]")
        assert "0.87" in positive.inner_text()
        width = positive.locator(".progress-bar").evaluate("bar => bar.style.width")
        assert width == "87%"
        assert "{" not in cell.inner_text()  # no raw JSON
        screenshot(page, "researcher-example-probabilities")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()


def test_the_results_page_follows_a_failed_and_retried_run(
    live_server, browser, login, screenshot, author, task, redis_connection
):
    dataset = DatasetFactory(task=task, slug="dev", name="Dev set", access_type="standard")
    model = ModelFactory(
        task=task,
        owner=author,
        name="live-model",
        protocol="dynatask",
        endpoint_url="http://127.0.0.1:9/",
    )
    run = EvaluationRun.objects.create(
        model=model,
        dataset=dataset,
        config_version=dataset.config_version,
        trigger=RunTrigger.RERUN,
        total=40,
        done=10,
        status=RunStatus.RUNNING,
    )
    EvaluationShard.objects.create(run=run, index=0, start=0, end=40, status=RunStatus.RUNNING)
    history = "[data-testid=model-runs]"
    context, page = signed_in_page(browser, login, author)
    try:
        page.goto(live_server.url + reverse("leaderboards:model", args=[model.pk]))
        page.wait_for_selector(f"#run-progress-{run.pk}")
        assert "Running" in page.locator(history).inner_text()

        EvaluationShard.objects.filter(run=run).update(status=RunStatus.FAILED)
        EvaluationRun.objects.filter(pk=run.pk).update(
            status=RunStatus.FAILED,
            error_code="model.unreachable",
            error_message="could not connect to the model",
            finished_at=timezone.now(),
        )
        page.wait_for_function(
            f"document.querySelector('{history}').innerText.includes('could not connect')"
        )
        assert "Failed" in page.locator(history).inner_text()
        screenshot(page, "researcher-results-run-failed")

        page.locator(f"#run-progress-{run.pk} button.run-retry").click()
        page.wait_for_function(f"document.querySelector('{history}').innerText.includes('Queued')")
        assert "could not connect" not in page.locator(history).inner_text()
        screenshot(page, "researcher-results-run-retried")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()


def test_the_model_card_refreshes_its_health(live_server, browser, login, screenshot, author, task):
    model = ModelFactory(
        task=task,
        owner=author,
        name="health-model",
        protocol="dynatask",
        endpoint_url="http://127.0.0.1:9/",
        status=ModelStatus.UNKNOWN,
    )
    file_model = ModelFactory(
        task=task, owner=author, name="file-model", protocol="none", endpoint_url=""
    )
    context, page = signed_in_page(browser, login, author)
    try:
        page.clock.install()
        page.goto(live_server.url + reverse("models_hub:detail", args=[model.pk]))
        status = page.locator("[data-testid=health-status]")
        assert status.inner_text() == "Unknown"
        RegisteredModel.objects.filter(pk=model.pk).update(
            status=ModelStatus.HEALTHY, last_health_at=timezone.now(), last_health_latency_ms=12.0
        )
        page.clock.run_for(11_000)
        page.wait_for_function(
            "document.querySelector('[data-testid=health-status]').innerText === 'Healthy'"
        )
        assert "12 ms" in page.locator("#model-health").inner_text()
        screenshot(page, "researcher-model-card-health")

        page.goto(live_server.url + reverse("models_hub:detail", args=[file_model.pk]))
        text = page.locator("#model-health").inner_text()
        assert "no health checks" in text and "is checked" not in text
        assert page.locator("#model-health").get_attribute("hx-get") is None
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
