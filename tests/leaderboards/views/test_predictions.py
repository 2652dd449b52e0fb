"""The predictions upload page (the model's owners only)."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from leaderboards.models import EvaluationRun, RunStatus
from tests.factories import UserFactory
from tests.leaderboards.evalkit import (
    import_sentiment,
    jsonl,
    sentiment_prob,
)


@pytest.mark.django_db
def test_upload_page(client, eval_task, eval_owner, file_model):
    dataset = import_sentiment(eval_task, 3, evaluate=False)
    url = reverse("leaderboards:predictions_upload", args=[file_model.pk])
    client.force_login(UserFactory(username="stranger"))
    assert client.get(url).status_code == 403
    client.force_login(eval_owner)
    assert client.get(url).status_code == 200

    bad = jsonl([{"uid": "u0", "label": "positive"}, {"uid": "zz", "label": "neutral"}])
    bad.name = "p.jsonl"
    response = client.post(url, {"dataset": dataset.slug, "file": bad})
    assert response.status_code == 400
    assert b"upload.E023" in response.content and b"<td>2</td>" in response.content
    assert not EvaluationRun.objects.exists()

    good = jsonl(
        [{"uid": f"u{i}", "label": "positive", "prob": sentiment_prob("positive")} for i in (0, 1)]
    )
    good.name = "p.jsonl"
    response = client.post(url, {"dataset": dataset.slug, "file": good, "partial": "on"})
    run = EvaluationRun.objects.get(model=file_model)
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboards:run_detail", args=[run.pk])
    assert run.status == RunStatus.DONE
    page = client.get(response["Location"])
    assert page.status_code == 200 and b"2 of 3 examples (partial)" in page.content


def _lines(uids) -> object:
    upload = jsonl(
        [{"uid": uid, "label": "positive", "prob": sentiment_prob("positive")} for uid in uids]
    )
    upload.name = "p.jsonl"
    return upload


@pytest.mark.django_db
def test_a_file_missing_ids_is_refused_on_the_page_then_shown_partial_everywhere(
    client, eval_task, eval_owner, file_model
):
    dataset = import_sentiment(eval_task, 400, evaluate=False)
    url = reverse("leaderboards:predictions_upload", args=[file_model.pk])
    client.force_login(eval_owner)
    assert b'name="partial"' in client.get(url).content

    covered = [f"u{index}" for index in range(300)]
    response = client.post(url, {"dataset": dataset.slug, "file": _lines(covered)})
    assert response.status_code == 400
    html = response.content.decode()
    assert "missing 100 of 400 ids: u300, u301, u302, u303, u304, …" in html
    # The page's refusal names its own way round: the box to tick, under that box.
    partial_box = html[html.index('name="partial"') :]
    assert "tick “Accept a partial file”" in partial_box
    assert "partial=true" not in html
    assert 'class="form-check' in html  # the site's crispy layout
    assert not EvaluationRun.objects.exists()

    response = client.post(url, {"dataset": dataset.slug, "file": _lines(covered), "partial": "on"})
    assert response.status_code == 302
    run = EvaluationRun.objects.get(model=file_model)
    assert (run.status, run.done, run.total) == (RunStatus.DONE, 300, 400)

    run_page = client.get(response["Location"]).content.decode()
    assert "300 of 400 examples (partial)" in run_page
    assert "75.0%" in run_page and "100.0%" not in run_page
    assert 'data-testid="score-coverage"' in run_page

    model_page = client.get(reverse("leaderboards:model", args=[file_model.pk])).content
    assert b"partial: 300 of 400" in model_page

    board = client.get(reverse("leaderboards:task", args=[eval_task.code])).content.decode()
    assert "partial: test: 300 of 400" in board  # the row's badge names the dataset
    assert "partial: 300 of 400" in board  # the breakdown's cell

    table = client.get(reverse("leaderboards:task_json", args=[eval_task.code])).json()
    (row,) = table["rows"]
    assert (row["partial"], row["partial_datasets"]) == (True, ["test"])
    cell = row["datasets"]["test"]
    assert (cell["covered"], cell["total"], cell["partial"]) == (300, 400, True)

    export = client.get(reverse("leaderboards:task_csv", args=[eval_task.code]))
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert (rows[0]["partial"], rows[0]["coverage"]) == ("True", "test: 300 of 400")
