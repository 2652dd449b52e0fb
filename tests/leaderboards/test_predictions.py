"""Predictions files: all or nothing with line numbers, scored exactly like an endpoint run
with the same outputs, and the upload page (owners of the model only)."""

from __future__ import annotations

import io
import json

import pytest
from django.urls import reverse

from leaderboards import services
from leaderboards.models import EvaluationRun, Prediction, RunStatus, RunTrigger, Score
from tasks.errors import InvalidUpload, PermissionDenied
from tests.factories import ModelFactory, UserFactory
from tests.leaderboards.evalkit import (
    KeywordSentiment,
    import_sentiment,
    make_model,
    run_worker,
    serving,
)


def _lines(rows: list[dict]) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(row) + "\n" for row in rows).encode())


def _prob(label: str) -> dict:
    return {name: (0.8 if name == label else 0.1) for name in ("negative", "positive", "neutral")}


def _codes(error) -> list[tuple[int, str]]:
    return [(item["line"], item["code"]) for item in error.details["errors"]]


@pytest.fixture
def file_model(eval_task, eval_owner):
    return ModelFactory(task=eval_task, owner=eval_owner, name="file-model")


@pytest.mark.django_db
def test_bad_lines_are_named_and_nothing_is_kept(eval_task, file_model):
    dataset = import_sentiment(eval_task, 6, evaluate=False)
    rows = [
        {"uid": "u0", "label": "positive", "prob": _prob("positive")},
        {"uid": "u1", "label": "banana", "prob": _prob("negative")},  # not a label
        {"uid": "nope", "label": "neutral", "prob": _prob("neutral")},  # unknown uid
        {"uid": "u0", "label": "neutral", "prob": _prob("neutral")},  # repeated uid
        {"uid": "u3", "label": "neutral", "prob": _prob("neutral"), "extra": 1},  # not output
        {"uid": "u4", "label": "negative", "prob": _prob("negative")},
    ]
    with pytest.raises(InvalidUpload) as caught:
        services.predictions_import(file_model, dataset, _lines(rows), filename="p.jsonl")
    codes = _codes(caught.value)
    assert {line for line, _ in codes} == {2, 3, 4, 5}
    assert (3, "upload.E023") in codes
    assert (4, "upload.E020") in codes
    assert (5, "upload.E010") in codes
    assert any(line == 2 and code.startswith("value.") for line, code in codes)
    # All or nothing: no run, no prediction, no score.
    assert not EvaluationRun.objects.filter(model=file_model).exists()
    assert not Prediction.objects.exists()
    assert not Score.objects.filter(model=file_model).exists()


@pytest.mark.django_db
def test_invalid_json_and_empty_file(eval_task, file_model):
    dataset = import_sentiment(eval_task, 2, evaluate=False)
    payload = io.BytesIO(b'{"uid": "u0", "label": "positive"}\n{not json\n')
    with pytest.raises(InvalidUpload) as caught:
        services.predictions_import(file_model, dataset, payload, filename="p.jsonl")
    assert (2, "upload.E003") in _codes(caught.value)
    with pytest.raises(InvalidUpload) as caught:
        services.predictions_import(file_model, dataset, io.BytesIO(b""), filename="p.jsonl")
    assert _codes(caught.value) == [(0, "upload.E008")]
    assert not EvaluationRun.objects.exists()


@pytest.mark.django_db
def test_only_the_models_owners_upload(eval_task, file_model):
    dataset = import_sentiment(eval_task, 2, evaluate=False)
    rows = [{"uid": "u0", "label": "positive", "prob": _prob("positive")}]
    with pytest.raises(PermissionDenied):
        services.predictions_import(
            file_model, dataset, _lines(rows), user=UserFactory(username="stranger")
        )


@pytest.mark.django_db(transaction=True)
def test_upload_scores_like_an_endpoint_run_with_the_same_outputs(
    eval_task, eval_owner, redis_connection, fast_client
):
    with serving(KeywordSentiment()) as server:
        live = make_model(eval_task, eval_owner, server.url, name="live")
        dataset = import_sentiment(eval_task, 40, evaluate=False)
        services.evaluation_run_create(live, dataset, shard_size=15)
        run_worker()
    live_score = Score.objects.get(model=live, dataset=dataset)
    outputs = Prediction.objects.filter(run=live_score.run).values_list("example__uid", "output")
    rows = [{"uid": uid, **output} for uid, output in outputs]

    uploaded = ModelFactory(task=eval_task, owner=eval_owner, name="uploaded")
    run = services.predictions_import(
        uploaded, dataset, _lines(rows), filename="p.jsonl", user=eval_owner
    )
    assert run.status == RunStatus.DONE
    assert run.trigger == RunTrigger.PREDICTIONS_UPLOAD
    assert (run.done, run.total, run.failed_count) == (40, 40, 0)
    score = Score.objects.get(model=uploaded, dataset=dataset)
    assert score.main_value == live_score.main_value
    assert score.metrics["macro_f1"] == live_score.metrics["macro_f1"]
    assert (score.ci_low, score.ci_high) == (live_score.ci_low, live_score.ci_high)
    assert score.per_tag == live_score.per_tag
    assert score.example_count == live_score.example_count == 40
    # A file says nothing about speed: no job metrics.
    assert score.examples_per_second is None and score.latency_p50_ms is None

    # Lines left out count as wrong answers (the model gave none).
    partial = ModelFactory(task=eval_task, owner=eval_owner, name="partial")
    run = services.predictions_import(partial, dataset, _lines(rows[:20]), filename="p.jsonl")
    assert (run.done, run.failed_count) == (20, 20)
    partial_score = Score.objects.get(model=partial, dataset=dataset)
    assert partial_score.example_count == 40
    assert partial_score.main_value < live_score.main_value


@pytest.mark.django_db
def test_upload_page(client, eval_task, eval_owner, file_model):
    dataset = import_sentiment(eval_task, 3, evaluate=False)
    url = reverse("leaderboards:predictions_upload", args=[file_model.pk])
    client.force_login(UserFactory(username="stranger"))
    assert client.get(url).status_code == 403
    client.force_login(eval_owner)
    assert client.get(url).status_code == 200

    bad = _lines([{"uid": "u0", "label": "positive"}, {"uid": "zz", "label": "neutral"}])
    bad.name = "p.jsonl"
    response = client.post(url, {"dataset": dataset.slug, "file": bad})
    assert response.status_code == 400
    assert b"upload.E023" in response.content and b"<td>2</td>" in response.content
    assert not EvaluationRun.objects.exists()

    good = _lines(
        [{"uid": f"u{i}", "label": "positive", "prob": _prob("positive")} for i in (0, 1)]
    )
    good.name = "p.jsonl"
    response = client.post(url, {"dataset": dataset.slug, "file": good})
    run = EvaluationRun.objects.get(model=file_model)
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboards:run_detail", args=[run.pk])
    assert run.status == RunStatus.DONE
    page = client.get(response["Location"])
    assert page.status_code == 200 and b"2 / 3 examples" in page.content
