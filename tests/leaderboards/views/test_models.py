"""The model page: card, scores and runs, the example browser (owners), 404 for others."""

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboards.models import DatasetExample, EvaluationRun, Prediction, Score
from tests.factories import DatasetFactory, ModelFactory
from tests.leaderboards.boardkit import MAIN, url


@pytest.mark.django_db
def test_model_page_browser_filters_wrong_answers_and_compares(client, task, owner):
    dataset = DatasetFactory(task=task, slug="set")
    first, second = ModelFactory(task=task, name="first"), ModelFactory(task=task, name="second")
    examples = [
        DatasetExample.objects.create(
            dataset=dataset,
            position=index,
            uid=f"uid-{index}",
            inputs={"statement": f"text {index}"},
            gold={"label": "positive"},
        )
        for index in range(3)
    ]
    for model, labels in (
        (first, ["positive", "negative", "positive"]),
        (second, ["negative"] * 3),
    ):
        run = EvaluationRun.objects.create(
            model=model, dataset=dataset, config_version=dataset.config_version, trigger="rerun"
        )
        for example, label in zip(examples, labels, strict=True):
            Prediction.objects.create(run=run, example=example, output={"label": label})
    client.force_login(owner)
    page = client.get(url("model", first.pk))
    assert page.status_code == 200
    assert page.context["browser"].total == 3
    wrong = client.get(url("model", first.pk) + "?wrong=1&dataset=set")
    assert [example.uid for example in wrong.context["browser"].examples] == ["uid-1"]
    compared = client.get(url("model", first.pk) + f"?compare={second.pk}")
    rows = compared.context["browser"].examples
    assert [row.compare_correct for row in rows] == [False, False, False]
    assert [row.correct for row in rows] == [True, False, True]
    html = compared.content.decode()
    assert "second" in html
    hostile = client.get(url("model", first.pk) + "?compare=x&page=-9&dataset=%00&wrong=yes")
    assert hostile.status_code == 200


@pytest.mark.django_db
def test_model_page_shows_card_scores_and_runs(client, task):
    dataset = DatasetFactory(task=task, slug="set", name="The set")
    model = ModelFactory(task=task, name="carded", license="MIT", card="Trained **well**.")
    Score.objects.create(
        model=model,
        dataset=dataset,
        config_version=dataset.config_version,
        metrics={MAIN: 71.5},
        main_metric=MAIN,
        main_value=71.5,
    )
    run = EvaluationRun.objects.create(
        model=model, dataset=dataset, config_version=dataset.config_version, trigger="rerun"
    )
    html = client.get(url("model", model.pk)).content.decode()
    assert "MIT" in html and "<strong>well</strong>" in html
    assert f'href="{reverse("leaderboards:run_detail", args=[run.pk])}"' in html
    assert "71.50" in html and 'data-testid="model-runs"' in html


@pytest.mark.django_db
def test_unpublished_model_page_is_404_for_others(client, task):
    model = ModelFactory(task=task, is_published=False)
    assert client.get(url("model", model.pk)).status_code == 404
    assert client.get(url("model", 999999)).status_code == 404
    assert client.get(url("task", "no-such-task")).status_code == 404
