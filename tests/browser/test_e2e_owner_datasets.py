"""End to end: a task owner uploads contexts (admin) and a dataset (site), then watches the
evaluation of the task's model progress on the run page until it is done.

The model is a real loopback server that takes 0.1 s per batch (batch size 1), the run is
split in shards of 6 examples, and a real RQ ``eval`` worker thread runs it, so the htmx-polled
progress bar is seen between 0 and 100% before it shows done.
"""

from __future__ import annotations

import json
import re

import pytest

from leaderboards.models import Dataset, EvaluationRun, RunStatus, Score
from leaderboards.services import runs as run_services
from tasks.models import Context
from tests.browser.e2e_helpers import (
    SlowKeywordSentiment,
    eval_worker,
    model_server,
    signed_in_page,
)
from tests.factories import TaskFactory, UserFactory
from tests.leaderboards.evalkit import make_model, sentiment_rows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EXAMPLES = 48
CONTEXTS = [
    {"context": {"context": "Describe a meal you ate at a new restaurant."}, "tag": "food"},
    {"context": {"context": "Describe the last film you watched."}, "tag": "film"},
    {"context": {"context": "Describe your commute this morning."}, "tag": "daily"},
]


def jsonl_file(name: str, rows: list[dict]) -> dict:
    body = "".join(json.dumps(row) + "\n" for row in rows).encode()
    return {"name": name, "mimeType": "application/jsonl", "buffer": body}


def counts(page) -> tuple[int, int]:
    text = page.locator(".run-counts").inner_text()
    done, total = re.match(r"\s*(\d+)\s*/\s*(\d+)", text).groups()
    return int(done), int(total)


def test_owner_uploads_contexts_and_a_dataset_and_watches_the_evaluation(
    live_server, browser, login, shot, redis_connection, monkeypatch
):
    owner = UserFactory(username="dataset-owner", is_staff=True)
    task = TaskFactory(code="owned-sentiment", name="Owned sentiment", owners=[owner])
    # Small shards so that the stored progress moves several times during the run.
    monkeypatch.setattr(run_services, "DEFAULT_SHARD_SIZE", 6)
    context, page = signed_in_page(browser, login, owner)
    with model_server(SlowKeywordSentiment(delay=0.1)) as server, eval_worker():
        model = make_model(task, owner, server.url, name="slow-keyword")
        model.batch_size, model.max_concurrency = 1, 1
        model.save(update_fields=["batch_size", "max_concurrency"])
        try:
            # 1. Contexts, in the admin.
            page.goto(f"{live_server.url}/admin/tasks/task/{task.pk}/upload-contexts/")
            page.wait_for_selector("input#id_file")
            shot(page, "upload-contexts-form")
            page.set_input_files("#id_file", jsonl_file("contexts.jsonl", CONTEXTS))
            page.click("input[type=submit][value=Upload]")
            page.wait_for_selector(".messagelist .success")
            assert "Imported 3 contexts" in page.locator(".messagelist").inner_text()
            assert Context.objects.filter(task=task).count() == 3
            shot(page, "contexts-imported")

            # 2. A dataset, on the site: its evaluation is queued at once.
            page.goto(f"{live_server.url}/tasks/{task.code}/datasets/upload")
            page.fill("#id_name", "Held-out test")
            page.fill("#id_slug", "held-out")
            page.set_input_files("#id_file", jsonl_file("test.jsonl", sentiment_rows(EXAMPLES)))
            shot(page, "upload-dataset-form")
            page.get_by_role("button", name="Upload").click()
            page.wait_for_url(re.compile(r"/datasets/held-out/$"))
            assert f"Imported {EXAMPLES} examples" in page.content()
            shot(page, "dataset-imported")
            dataset = Dataset.objects.get(task=task, slug="held-out")
            run = EvaluationRun.objects.get(dataset=dataset, model=model)
            assert run.shards.count() == EXAMPLES // 6

            # 3. The run page: the bar moves (htmx polls every 2 s), then shows done.
            page.goto(f"{live_server.url}/runs/{run.pk}/")
            page.wait_for_selector(".run-progress .progress-bar")
            shot(page, "run-page")
            page.wait_for_function(
                """() => {
                    const text = document.querySelector('.run-counts').innerText;
                    const m = text.match(/(\\d+) \\/ (\\d+)/);
                    return m && +m[1] > 0 && +m[1] < +m[2];
                }""",
                timeout=20_000,
            )
            done, total = counts(page)
            assert 0 < done < total == EXAMPLES
            bar = page.locator(".run-progress .progress-bar")
            assert "progress-bar-animated" in bar.get_attribute("class")
            percent = float(page.locator(".run-progress .progress").get_attribute("aria-valuenow"))
            assert 0 < percent < 100
            shot(page, "progress-moving")
            page.wait_for_selector(".run-state[data-state=done]", timeout=30_000)
            assert counts(page) == (EXAMPLES, EXAMPLES)
            bar = page.locator(".run-progress .progress-bar")
            assert "bg-success" in bar.get_attribute("class")
            assert bar.inner_text().strip() in ("100%", "100.0%")
            shot(page, "progress-done")

            page.reload()
            page.wait_for_selector("dl")
            assert "macro_f1" in page.content()
            shot(page, "run-with-score")
            run.refresh_from_db()
            assert run.status == RunStatus.DONE and run.done == EXAMPLES
            assert Score.objects.filter(model=model, dataset=dataset).exists()
            assert not page.js_errors, page.js_errors
        finally:
            context.close()
