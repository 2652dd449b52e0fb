"""In Chromium at 1280 px: the leaderboard's sort lives in the URL (and survives a reload),
its model column stays in view when the table scrolls; a model's owner reads the per-example
table of a standard dataset and retries a failed run."""

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboards.models import (
    DatasetExample,
    EvaluationRun,
    EvaluationShard,
    Prediction,
    RunStatus,
    RunTrigger,
)
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import DatasetFactory, ModelFactory, TaskFactory, UserFactory
from tests.leaderboards.boardkit import MAIN, make_models

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROWS = "[data-testid=leaderboard] tbody tr"


def _all_metrics(index, dataset):
    return {
        MAIN: 50.0 + index * 3,
        "examples_per_second": 10.0 + index,
        "latency_p95_ms": 100.0 + index,
        "memory_utilization": 2.0 + index % 3,
        "robustness": 90.0 - index,
        "fairness": 80.0 + index,
    }


def test_the_sort_follows_the_url_and_the_model_column_stays_in_view(
    live_server, browser, login, screenshot
):
    task = TaskFactory(code="board-1280", owners=[UserFactory(username="board-1280-owner")])
    datasets = [
        DatasetFactory(task=task, slug=slug, name=f"Dataset {slug}", round=task.rounds.get())
        for slug in ("alpha", "beta", "gamma")
    ]
    make_models(
        task, 6, datasets, metrics_of=_all_metrics, owner=UserFactory(username="a-researcher")
    )
    context, page = signed_in_page(browser, login, None)
    try:
        board = live_server.url + reverse("leaderboards:task", args=[task.code])
        page.goto(board)
        assert "model-0005" in page.locator(ROWS).first.inner_text()  # best Dynascore first

        page.locator("[data-testid=leaderboard] thead a", has_text="Model").click()
        page.wait_for_function("new URLSearchParams(location.search).get('sort') === 'name'")
        page.wait_for_function(f"document.querySelector('{ROWS}').innerText.includes('model-0000')")
        page.locator("[data-testid=leaderboard] thead a", has_text="Model").click()
        page.wait_for_function("new URLSearchParams(location.search).get('sort') === '-name'")
        page.wait_for_function(f"document.querySelector('{ROWS}').innerText.includes('model-0005')")
        sorted_url = page.url
        page.reload()
        assert page.url == sorted_url
        assert "model-0005" in page.locator(ROWS).first.inner_text()
        assert "▼" in page.locator("[data-testid=leaderboard] th.lb-model").inner_text()
        page.go_back()
        page.wait_for_function("new URLSearchParams(location.search).get('sort') === 'name'")
        page.wait_for_function(f"document.querySelector('{ROWS}').innerText.includes('model-0000')")

        # At 1280 px the table either fits or scrolls with the model column kept in view.
        geometry = page.evaluate(
            """() => {
              const table = document.querySelector('[data-testid=leaderboard]');
              const box = table.closest('.table-responsive');
              const cell = () => table.querySelector('tbody tr td.lb-model');
              const before = cell().getBoundingClientRect().left;
              box.scrollLeft = box.scrollWidth;
              return {overflows: box.scrollWidth > box.clientWidth, scrolled: box.scrollLeft,
                      before, after: cell().getBoundingClientRect().left,
                      boxLeft: box.getBoundingClientRect().left};
            }"""
        )
        assert page.viewport_size["width"] == 1280
        if geometry["overflows"]:
            assert geometry["scrolled"] > 0
            assert abs(geometry["after"] - geometry["before"]) < 1, geometry
        assert geometry["after"] >= geometry["boxLeft"] - 1
        screenshot(page, "researcher-leaderboard-1280")
        assert page.locator("[data-testid=trends][data-kind=bar]").is_visible()
        assert not page.js_errors, page.js_errors
    finally:
        context.close()


def test_a_model_owner_reads_the_examples_table(live_server, browser, login, screenshot):
    owner = UserFactory(username="table-task-owner")
    author = UserFactory(username="table-author")
    task = TaskFactory(code="table-e2e", owners=[owner])
    model = ModelFactory(task=task, owner=author, name="authors-model")
    dev = DatasetFactory(task=task, slug="dev", name="Dev set", access_type="public")
    DatasetFactory(task=task, slug="extra", name="Extra set", access_type="standard")
    DatasetFactory(task=task, slug="test", name="Test set", access_type="scoring")
    run = EvaluationRun.objects.create(
        model=model, dataset=dev, config_version=dev.config_version, trigger="rerun"
    )
    rows = [
        ("d1", "A lovely, warm afternoon in the park.", "positive", "positive"),
        ("d2", "The service was slow and the soup was cold.", "negative", "neutral"),
        ("d3", '<script>window.pwned = 1</script> "quoted" & <b>bold</b>', "neutral", "neutral"),
    ]
    for position, (uid, text, gold, label) in enumerate(rows):
        example = DatasetExample.objects.create(
            dataset=dev,
            position=position,
            uid=uid,
            inputs={"statement": text},
            gold={"label": gold},
            tags=["demo"] if position == 0 else [],
        )
        labels = ("negative", "positive", "neutral")
        probs = {name: (0.8 if name == label else 0.1) for name in labels}
        Prediction.objects.create(run=run, example=example, output={"label": label, "prob": probs})
    context, page = signed_in_page(browser, login, author)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    try:
        page.goto(live_server.url + reverse("leaderboards:model", args=[model.pk]))
        table = page.locator("[data-testid=example-table]")
        assert table.is_visible()
        options = page.locator("#browser-dataset option").all()
        assert [option.inner_text() for option in options] == ["Dev set"]
        header = table.locator("thead").inner_text()
        for column in ("Input", "Gold", "Prediction", "Correct"):
            assert column in header
        assert table.locator("tr[data-uid=d1]").get_attribute("data-correct") == "yes"
        assert table.locator("tr[data-uid=d2]").get_attribute("data-correct") == "no"
        hostile = table.locator("tr[data-uid=d3] .browser-input").inner_text()
        assert "<script>window.pwned = 1</script>" in hostile and "<b>bold</b>" in hostile
        assert page.evaluate("window.pwned") is None and not dialogs
        screenshot(page, "researcher-examples-table")

        page.check("#browser-wrong")
        with page.expect_navigation():
            page.locator("[data-testid=example-browser] button[type=submit]").click()
        assert "wrong=1" in page.url
        assert page.locator("[data-testid=example-table] tbody tr").count() == 1
        assert not page.js_errors, page.js_errors
    finally:
        context.close()


def test_a_model_owner_retries_a_failed_run(
    live_server, browser, login, screenshot, redis_connection
):
    owner = UserFactory(username="retry-task-owner")
    author = UserFactory(username="retry-author")
    task = TaskFactory(code="retry-e2e", owners=[owner])
    dataset = DatasetFactory(task=task, slug="dev", name="Dev set", access_type="standard")
    dataset.row_count = 40
    dataset.save()
    model = ModelFactory(
        task=task,
        owner=author,
        name="flaky-model",
        protocol="dynatask",
        endpoint_url="http://127.0.0.1:9/",
    )
    run = EvaluationRun.objects.create(
        model=model,
        dataset=dataset,
        config_version=dataset.config_version,
        trigger=RunTrigger.RERUN,
        total=40,
        done=25,
        status=RunStatus.FAILED,
        error_code="model.unreachable",
        error_message="could not connect to the model",
    )
    EvaluationShard.objects.create(run=run, index=0, start=0, end=40, status=RunStatus.FAILED)
    stranger_context, stranger = signed_in_page(browser, login, UserFactory(username="reader"))
    try:
        stranger.goto(live_server.url + reverse("leaderboards:run_detail", args=[run.pk]))
        assert stranger.locator("[data-testid=run-failed]").is_visible()
        assert stranger.locator("button.run-retry").count() == 0
    finally:
        stranger_context.close()

    context, page = signed_in_page(browser, login, author)
    try:
        page.goto(live_server.url + reverse("leaderboards:model", args=[model.pk]))
        page.wait_for_selector("#model-runs-progress button.run-retry")
        page.goto(live_server.url + reverse("leaderboards:run_detail", args=[run.pk]))
        retry = page.locator("button.run-retry")
        assert retry.is_visible()
        screenshot(page, "researcher-run-retry")
        retry.click()
        page.wait_for_selector(".run-state[data-state=queued]")
        run.refresh_from_db()
        assert run.status == RunStatus.QUEUED
        assert page.locator("button.run-retry").count() == 0
        screenshot(page, "researcher-run-retried")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
