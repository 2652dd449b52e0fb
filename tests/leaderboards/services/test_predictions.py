"""Predictions files: all or nothing with line numbers, scored exactly like an endpoint run
with the same outputs."""

from __future__ import annotations

import io

import pytest

from core.errors import InvalidUpload, PermissionDenied
from leaderboards.models import (
    DatasetExample,
    EvaluationRun,
    Prediction,
    RunStatus,
    RunTrigger,
    Score,
)
from leaderboards.services.predictions import predictions_import
from leaderboards.services.runs import evaluation_run_create
from tests.factories import ModelFactory, UserFactory
from tests.leaderboards.evalkit import (
    KeywordSentiment,
    import_sentiment,
    jsonl,
    make_model,
    run_worker,
    sentiment_prob,
    serving,
)


def _codes(error) -> list[tuple[int, str]]:
    return [(item["line"], item["code"]) for item in error.details["errors"]]


@pytest.mark.django_db
def test_bad_lines_are_named_and_nothing_is_kept(eval_task, file_model):
    dataset = import_sentiment(eval_task, 6, evaluate=False)
    rows = [
        {"uid": "u0", "label": "positive", "prob": sentiment_prob("positive")},
        {"uid": "u1", "label": "banana", "prob": sentiment_prob("negative")},  # not a label
        # an unknown uid
        {"uid": "nope", "label": "neutral", "prob": sentiment_prob("neutral")},
        {"uid": "u0", "label": "neutral", "prob": sentiment_prob("neutral")},  # repeated uid
        {
            "uid": "u3",
            "label": "neutral",
            "prob": sentiment_prob("neutral"),
            "extra": 1,
        },  # not output
        {"uid": "u4", "label": "negative", "prob": sentiment_prob("negative")},
    ]
    with pytest.raises(InvalidUpload) as caught:
        predictions_import(file_model, dataset, jsonl(rows), filename="p.jsonl")
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
        predictions_import(file_model, dataset, payload, filename="p.jsonl")
    assert (2, "upload.E003") in _codes(caught.value)
    with pytest.raises(InvalidUpload) as caught:
        predictions_import(file_model, dataset, io.BytesIO(b""), filename="p.jsonl")
    assert _codes(caught.value) == [(1, "upload.E008")]
    assert not EvaluationRun.objects.exists()


@pytest.mark.django_db
def test_only_the_models_owners_upload(eval_task, file_model):
    dataset = import_sentiment(eval_task, 2, evaluate=False)
    rows = [{"uid": "u0", "label": "positive", "prob": sentiment_prob("positive")}]
    with pytest.raises(PermissionDenied):
        predictions_import(file_model, dataset, jsonl(rows), user=UserFactory(username="stranger"))


@pytest.mark.django_db(transaction=True)
def test_upload_scores_like_an_endpoint_run_with_the_same_outputs(
    eval_task, eval_owner, redis_connection, fast_client
):
    with serving(KeywordSentiment()) as server:
        live = make_model(eval_task, eval_owner, server.url, name="live")
        dataset = import_sentiment(eval_task, 40, evaluate=False)
        evaluation_run_create(live, dataset, shard_size=15)
        run_worker()
    live_score = Score.objects.get(model=live, dataset=dataset)
    outputs = Prediction.objects.filter(run=live_score.run).values_list("example__uid", "output")
    rows = [{"uid": uid, **output} for uid, output in outputs]

    uploaded = ModelFactory(task=eval_task, owner=eval_owner, name="uploaded")
    run = predictions_import(uploaded, dataset, jsonl(rows), filename="p.jsonl", user=eval_owner)
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

    assert (score.covered_count, score.is_partial) == (40, False)

    # A file that leaves lines out is refused, unless accepted as partial: then the lines
    # left out count as wrong answers (the model gave none) and the score says so.
    partial = ModelFactory(task=eval_task, owner=eval_owner, name="partial")
    with pytest.raises(InvalidUpload):
        predictions_import(partial, dataset, jsonl(rows[:20]), filename="p.jsonl")
    run = predictions_import(partial, dataset, jsonl(rows[:20]), filename="p.jsonl", partial=True)
    assert (run.done, run.total, run.failed_count) == (20, 40, 20)
    partial_score = Score.objects.get(model=partial, dataset=dataset)
    assert (partial_score.example_count, partial_score.covered_count) == (40, 20)
    assert partial_score.is_partial and partial_score.coverage == "20 of 40"
    assert partial_score.main_value < live_score.main_value


@pytest.mark.django_db
def test_a_file_missing_ids_is_refused_naming_the_first_ones_and_their_count(eval_task, file_model):
    dataset = import_sentiment(eval_task, 12, evaluate=False)
    rows = [
        {"uid": f"u{index}", "label": "positive", "prob": sentiment_prob("positive")}
        for index in (0, 2, 4, 5)
    ]
    with pytest.raises(InvalidUpload) as caught:
        predictions_import(file_model, dataset, jsonl(rows), filename="p.jsonl")
    error = caught.value
    assert "missing 8 of 12 ids: u1, u3, u6, u7, u8, …" in error.message
    assert error.details["missing_ids"] == ["u1", "u3", "u6", "u7", "u8"]
    assert (error.details["missing_count"], error.details["total"]) == (8, 12)
    assert _codes(error) == [(1, "upload.E024")]
    assert not EvaluationRun.objects.exists() and not Prediction.objects.exists()

    # Fewer missing than named: every one, and no ellipsis.
    rows = [
        {"uid": f"u{index}", "label": "positive", "prob": sentiment_prob("positive")}
        for index in range(12)
        if index != 7
    ]
    with pytest.raises(InvalidUpload) as caught:
        predictions_import(file_model, dataset, jsonl(rows), filename="p.jsonl")
    assert "missing 1 of 12 ids: u7;" in caught.value.message


@pytest.mark.django_db
def test_a_partial_file_is_scored_with_its_coverage(eval_task, file_model):
    dataset = import_sentiment(eval_task, 8, evaluate=False)
    rows = [
        {"uid": f"u{index}", "label": "positive", "prob": sentiment_prob("positive")}
        for index in range(6)
    ]
    run = predictions_import(file_model, dataset, jsonl(rows), filename="p.jsonl", partial=True)
    assert run.status == RunStatus.DONE
    assert (run.done, run.total) == (6, 8)
    score = Score.objects.get(model=file_model, dataset=dataset)
    assert (score.covered_count, score.example_count, score.coverage) == (6, 8, "6 of 8")
    assert score.is_partial

    # partial=True with every line: a complete score.
    rows += [
        {"uid": f"u{index}", "label": "positive", "prob": sentiment_prob("positive")}
        for index in (6, 7)
    ]
    predictions_import(file_model, dataset, jsonl(rows), filename="p.jsonl", partial=True)
    score.refresh_from_db()
    assert (score.covered_count, score.is_partial) == (8, False)


@pytest.mark.django_db
def test_leaving_the_wrong_answers_out_of_a_file_does_not_raise_its_score(eval_task, eval_owner):
    # Issue 30: macro F1 counted a missing answer as a false negative only, so the right
    # answers of a file, sent alone as a partial file, outscored the whole file.
    dataset = import_sentiment(eval_task, 9, evaluate=False)
    golds = dict(DatasetExample.objects.filter(dataset=dataset).values_list("uid", "gold"))
    wrong = {"u1": "positive", "u2": "negative", "u4": "positive"}
    rows = [
        {"uid": uid, "label": wrong.get(uid, gold["label"])} for uid, gold in sorted(golds.items())
    ]
    for row in rows:
        row["prob"] = sentiment_prob(row["label"])
    whole = ModelFactory(task=eval_task, owner=eval_owner, name="whole")
    right_only = ModelFactory(task=eval_task, owner=eval_owner, name="right-only")
    predictions_import(whole, dataset, jsonl(rows), filename="p.jsonl")
    kept = [row for row in rows if row["uid"] not in wrong]
    predictions_import(right_only, dataset, jsonl(kept), filename="p.jsonl", partial=True)
    whole_score = Score.objects.get(model=whole, dataset=dataset)
    partial_score = Score.objects.get(model=right_only, dataset=dataset)
    assert whole_score.main_metric == "macro_f1"
    assert whole_score.main_value == pytest.approx(60.0)
    assert partial_score.is_partial
    assert partial_score.main_value < whole_score.main_value
    assert partial_score.ci_high <= whole_score.ci_high


def test_a_file_with_400_bad_lines_reports_the_first_100_of_400(eval_task, file_model):
    dataset = import_sentiment(eval_task, 2, evaluate=False)
    payload = io.BytesIO(b"{not json\n" * 400)
    with pytest.raises(InvalidUpload) as caught:
        predictions_import(file_model, dataset, payload, filename="p.jsonl")
    error = caught.value
    assert error.message == (
        "the first 100 of 400 problems in the predictions file; nothing was imported"
    )
    assert [line for line, _code in _codes(error)] == list(range(1, 101))
    assert error.details["error_count"] == 400
