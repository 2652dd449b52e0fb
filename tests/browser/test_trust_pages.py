"""The trust pages in a browser: a big dataset upload imported by a job (its progress page),
where a dataset's inputs go, the sealed view of a run on a hidden dataset, and the limits a
model's owner meets (registrations per day, the read-timeout cap)."""

from __future__ import annotations

import json
import re

import pytest

from leaderboards.models import Dataset, EvaluationRun, RunStatus, RunTrigger
from models_hub.budget import budget_charge
from models_hub.models import BudgetKind
from tests.browser.e2e_helpers import signed_in_page
from tests.factories import ModelFactory, TaskFactory, UserFactory
from tests.leaderboards.evalkit import import_sentiment, sentiment_rows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def jsonl_file(name: str, rows: list[dict]) -> dict:
    body = "".join(json.dumps(row) + "\n" for row in rows).encode()
    return {"name": name, "mimeType": "application/jsonl", "buffer": body}


def test_owner_uploads_a_big_dataset_and_watches_the_import(
    live_server, browser, login, screenshot, redis_connection, settings
):
    from tests.annotation.conftest import BackgroundWorker

    settings.UPLOAD_INLINE_MAX_BYTES = 2000
    owner = UserFactory(username="big-owner", is_staff=True)
    task = TaskFactory(code="big-sentiment", name="Big sentiment", owners=[owner])
    context, page = signed_in_page(browser, login, owner)
    try:
        page.goto(f"{live_server.url}/tasks/{task.code}/datasets/upload")
        page.fill("#id_name", "Held-out test")
        page.fill("#id_slug", "held-out")
        page.select_option("#id_access_type", "hidden")
        page.set_input_files("#id_file", jsonl_file("test.jsonl", sentiment_rows(400)))
        page.get_by_role("button", name="Upload").click()
        page.wait_for_url(re.compile(r"/uploads/\d+/$"))
        page.wait_for_selector(".upload-state[data-state=queued]")
        assert "all or nothing" in page.content()
        worker = BackgroundWorker("default").start()
        try:
            page.wait_for_selector(".upload-state[data-state=done]", timeout=30_000)
        finally:
            worker.stop()
        assert "Imported 400 rows" in page.locator("[data-testid=upload-done]").inner_text()
        screenshot(page, "owner-upload-progress")
        page.get_by_role("link", name="See them").click()
        page.wait_for_url(re.compile(r"/datasets/held-out/$"))
        sentence = page.locator("[data-testid=inputs-to-others]").inner_text()
        assert "only to the models of the task's owners" in sentence
        screenshot(page, "owner-dataset-detail")
        assert Dataset.objects.get(slug="held-out").row_count == 400
        assert not page.js_errors, page.js_errors
    finally:
        context.close()


def test_a_models_owner_sees_a_hidden_run_sealed_and_meets_the_limits(
    live_server, browser, login, screenshot, settings
):
    settings.MODELS_HUB_REGISTRATIONS_PER_DAY = 1
    settings.MODELS_HUB_READ_TIMEOUT_CAP = 60
    owner = UserFactory(username="vault-owner", is_staff=True)
    researcher = UserFactory(username="researcher")
    task = TaskFactory(code="vault", name="Vault", owners=[owner])
    hidden = import_sentiment(task, 6, evaluate=False, access_type="hidden", name="Vault set")
    model = ModelFactory(
        task=task,
        owner=researcher,
        name="my-model",
        protocol="dynatask",
        endpoint_url="http://127.0.0.1:9/",
    )
    budget_charge(researcher, task, BudgetKind.REGISTRATION)  # as its registration spent
    run = EvaluationRun.objects.create(
        model=model,
        dataset=hidden,
        config_version=hidden.config_version,
        trigger=RunTrigger.MODEL_REGISTERED,
        status=RunStatus.FAILED,
        total=6,
        done=4,
        failed_count=2,
        error_code="run.finalize_failed",
        error_message="the score of tag odd: 0.25",
    )
    context, page = signed_in_page(browser, login, researcher)
    try:
        page.goto(f"{live_server.url}/runs/{run.pk}/")
        page.wait_for_selector("[data-testid=sealed-note]")
        html = page.content()
        assert "Vault set" not in html and "0.25" not in html
        assert "4 / 6 examples" in page.locator(".run-counts").inner_text()
        screenshot(page, "researcher-run-sealed")
        page.goto(f"{live_server.url}/models/{model.pk}/results/")
        page.wait_for_selector(".model-runs")
        assert "Vault set" not in page.content()
        screenshot(page, "researcher-model-results")

        page.goto(f"{live_server.url}/models/{model.pk}/edit")
        page.fill("#id_read_timeout", "120")
        page.get_by_role("button", name=re.compile("Save", re.IGNORECASE)).click()
        page.wait_for_selector("text=at most 60 s for this model")
        screenshot(page, "researcher-model-edit-timeout")

        page.goto(f"{live_server.url}/tasks/{task.code}/models/register")
        page.fill("#id_name", "another-model")
        page.select_option("#id_protocol", "none")
        page.get_by_role("button", name=re.compile("Register", re.IGNORECASE)).click()
        page.wait_for_selector("text=per task and dataset in 24 hours")
        screenshot(page, "researcher-model-register-limit")
        assert not page.js_errors, page.js_errors
    finally:
        context.close()
