"""Leaderboard pages: the board, htmx partial, exports, hostile params, the model page."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from leaderboards.models import DatasetExample, EvaluationRun, Prediction, Score
from tests.factories import DatasetFactory, ModelFactory, UserFactory
from tests.leaderboards.test_selectors import MAIN, make_models, table_for


@pytest.fixture
def board(task):
    datasets = [
        DatasetFactory(task=task, slug="alpha", name="Alpha"),
        DatasetFactory(task=task, slug="beta", name="Beta"),
    ]
    make_models(task, 12, datasets)
    return task


def url(name, *args):
    return reverse(f"leaderboards:{name}", args=args)


@pytest.mark.django_db
def test_page_renders_columns_arrows_ci_and_breakdown(client, board):
    response = client.get(url("task", board.code))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-testid="leaderboard"' in html
    assert 'data-testid="breakdown"' in html
    assert "Latency p95 (ms)" in html and "↓" in html and "↑" in html
    assert "95% CI" in html
    assert 'hx-trigger="change"' in html and 'hx-push-url="true"' in html
    assert 'type="range"' in html and 'name="d_alpha"' in html
    assert "chart.umd.min.js" in html
    assert "model-0049" not in html  # only 12 models


@pytest.mark.django_db
def test_htmx_request_gets_the_table_partial(client, board):
    response = client.get(url("task", board.code), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and 'data-testid="leaderboard"' in html
    restore = client.get(
        url("task", board.code), HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true"
    )
    assert "<html" in restore.content.decode()


@pytest.mark.django_db
def test_json_and_csv_equal_the_page_table(client, board):
    query = f"w_{MAIN}=1&w_examples_per_second=3&sort=-examples_per_second&page=2&page_size=5"
    expected = table_for(board, querydict=query)
    response = client.get(url("task_json", board.code) + "?" + query)
    data = response.json()
    assert data == expected.as_dict()
    assert [row["model"] for row in data["rows"]] == [row.model_name for row in expected.rows]
    assert data["page"] == 2 and len(data["rows"]) == 5

    page = client.get(url("task", board.code) + "?" + query).content.decode()
    positions = [page.index(f">{row.model_name}<") for row in expected.rows]
    assert positions == sorted(positions)

    content = client.get(url("task_csv", board.code) + "?" + query).content.decode()
    rows = list(csv.reader(io.StringIO(content)))
    assert rows[0] == expected.csv_header()
    assert [row[1] for row in rows[1:]] == [row.model_name for row in expected.rows]
    assert rows[1][3] == str(expected.rows[0].dynascore)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "w_macro_f1=abc&sort=nope&page=x",
        "page=-1&page_size=99999999999999999999999",
        "sort=dataset:nope",
        "sort=%00&w_latency_p95_ms=1e999",
        "d_alpha=0&d_beta=0",
        "w_macro_f1=0&w_robustness=0&w_fairness=0&w_examples_per_second=0"
        "&w_latency_p95_ms=0&w_memory_utilization=0",
        "page=3&page=x&sort=name&sort=-dynascore",
        "w_macro_f1[]=1&__proto__=1",
        "d_alpha=" + "9" * 5000,
        "page=%C2%B2&page_size=%EF%BC%91",
        "w_macro_f1=1_0&d_beta=0x10&sort=%F0%9F%98%80",
    ],
)
def test_hostile_params_never_500(client, board, query):
    for name in ("task", "task_json", "task_csv"):
        response = client.get(url(name, board.code) + "?" + query)
        assert response.status_code == 200, (name, query)


@pytest.mark.django_db
def test_all_zero_weights_show_a_clear_message(client, board):
    query = "&".join(
        f"w_{name}=0"
        for name in (
            MAIN,
            "robustness",
            "fairness",
            "examples_per_second",
            "latency_p95_ms",
            "memory_utilization",
        )
    )
    html = client.get(url("task", board.code) + "?" + query).content.decode()
    assert 'data-testid="board-error"' in html
    assert "every metric weight is 0" in html


@pytest.mark.django_db
def test_hidden_datasets_and_gold_invisible_to_non_owners(client, task, owner):
    public = DatasetFactory(task=task, slug="public-set", name="Public set")
    hidden = DatasetFactory(task=task, slug="secret-set", name="Secret set", access_type="hidden")
    author = UserFactory(username="author")
    (model,) = make_models(task, 1, [public, hidden], owner=author)
    example = DatasetExample.objects.create(
        dataset=public,
        position=0,
        uid="ex-1",
        inputs={"statement": "fine"},
        gold={"label": "GOLDLABELXYZ"},
    )
    run = EvaluationRun.objects.create(
        model=model, dataset=public, config_version=public.config_version, trigger="rerun"
    )
    EvaluationRun.objects.create(
        model=model, dataset=hidden, config_version=hidden.config_version, trigger="rerun"
    )
    Prediction.objects.create(run=run, example=example, output={"label": "positive"})

    for who in (None, author):
        if who:
            client.force_login(who)
        board = client.get(url("task", task.code)).content.decode()
        assert "Secret set" not in board and "secret-set" not in board
        assert "secret-set" not in client.get(url("task_json", task.code)).content.decode()
        page = client.get(url("model", model.pk)).content.decode()
        assert "Public set" in page
        assert "Secret set" not in page
        assert "GOLDLABELXYZ" not in page
        assert 'data-testid="example-browser"' not in page

    client.force_login(owner)
    board = client.get(url("task", task.code)).content.decode()
    assert "Secret set" in board
    page = client.get(url("model", model.pk)).content.decode()
    assert "Secret set" in page and "GOLDLABELXYZ" in page


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


@pytest.mark.django_db
def test_empty_board_and_hidden_task(client, task, owner):
    html = client.get(url("task", task.code)).content.decode()
    assert "No models on this leaderboard yet." in html
    assert client.get(url("task_json", task.code)).json()["rows"] == []
    ModelFactory(task=task, name="unscored")
    DatasetFactory(task=task, slug="set")
    data = client.get(url("task_json", task.code)).json()
    assert data["rows"][0]["incomplete"] is True
    assert data["messages"] == ["No model has a score on the scoring datasets yet."]
    task.hidden = True
    task.save()
    assert client.get(url("task", task.code)).status_code == 404
    client.force_login(owner)
    assert client.get(url("task", task.code)).status_code == 200
