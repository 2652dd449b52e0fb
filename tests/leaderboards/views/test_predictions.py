"""The predictions upload page (the model's owners only)."""

from __future__ import annotations

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
    response = client.post(url, {"dataset": dataset.slug, "file": good})
    run = EvaluationRun.objects.get(model=file_model)
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboards:run_detail", args=[run.pk])
    assert run.status == RunStatus.DONE
    page = client.get(response["Location"])
    assert page.status_code == 200 and b"2 / 3 examples" in page.content
