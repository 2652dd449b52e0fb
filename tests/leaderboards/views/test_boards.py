"""Leaderboard pages: the board, htmx partial, exports, hostile params, and a fixed number
of queries at 5 and 200 models."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.cache import cache
from django.urls import reverse

from leaderboards.models import BoardCube
from leaderboards.selectors.cubes import score_cube
from tasks.accounts import site_settings_get
from tests.factories import DatasetFactory, ModelFactory, UserFactory
from tests.leaderboards.boardkit import MAIN, board_with, make_models, table_for, url


@pytest.fixture
def board(task):
    datasets = [
        DatasetFactory(task=task, slug="alpha", name="Alpha"),
        DatasetFactory(task=task, slug="beta", name="Beta"),
    ]
    make_models(task, 12, datasets)
    return task


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


@pytest.fixture
def close_board(task):
    """Two identical models (a tie) above a clearly worse one, with stored resamples."""
    dataset = DatasetFactory(task=task, slug="alpha", name="Alpha")

    def metrics(index, dataset):
        return {
            MAIN: 80.0 if index < 2 else 60.0,
            "examples_per_second": 10.0,
            "latency_p95_ms": 100.0,
            "memory_utilization": 2.0,
        }

    make_models(task, 3, [dataset], metrics_of=metrics)
    return task


@pytest.mark.django_db
def test_page_shows_intervals_rank_confidence_ties_and_how_they_are_computed(client, close_board):
    html = client.get(url("task", close_board.code)).content.decode()
    assert 'data-testid="interval-help"' in html
    assert "1,000" in html and "default_rng" in html and "(0, the dataset" in html
    assert "Ahead of the next" in html
    assert "Dynascore: ahead in 50% of resamples" in html
    assert f"{MAIN}: ahead in 100% of resamples" in html
    assert html.count('data-tie="1"') == 2  # the twins, on the Dynascore and on macro_f1
    # The Dynascore's interval says plainly which noise it covers.
    assert f"The Dynascore&#x27;s CI covers the sampling noise of {MAIN} only" in html or (
        f"The Dynascore's CI covers the sampling noise of {MAIN} only" in html
    )
    table = table_for(close_board)
    top = table.rows[0]
    assert f"{top.ci_low:,.1f}–{top.ci_high:,.1f}" in html
    assert f"{top.dynascore_ci_low:,.1f}–{top.dynascore_ci_high:,.1f}" in html


@pytest.mark.django_db
def test_json_and_csv_carry_the_intervals_and_rank_confidence(client, close_board):
    data = client.get(url("task_json", close_board.code)).json()
    first, second, third = data["rows"]
    assert first["ahead_of_next"]["dynascore_tie"] is True
    assert first["ahead_of_next"]["dynascore_share"] == 0.5
    assert second["ahead_of_next"]["main_metric_tie"] is False
    assert third["ahead_of_next"] is None
    assert first["ci_low"] < 80.0 < first["ci_high"]
    assert first["dynascore_ci_low"] <= first["dynascore"] <= first["dynascore_ci_high"]

    content = client.get(url("task_csv", close_board.code)).content.decode()
    header, *rows = list(csv.reader(io.StringIO(content)))
    columns = [dict(zip(header, row, strict=True)) for row in rows]
    assert columns[0]["dynascore_tie_with_next"] == "True"
    assert columns[0]["dynascore_next_ahead"] == "False"
    assert columns[0][f"{MAIN}_ahead_of_next_share"] == "0.5"
    assert columns[1][f"{MAIN}_tie_with_next"] == "False"
    assert columns[1]["dynascore_ahead_of_next_share"] == "1.0"
    assert columns[2]["dynascore_tie_with_next"] == ""
    assert float(columns[0]["dynascore_ci_low"]) == pytest.approx(first["dynascore_ci_low"])


@pytest.mark.django_db
def test_interval_bounds_are_rounded_as_the_point_values_are(client, board):
    # The resamples are float32: their bounds must not carry its digits (70.51523818969727).
    rows = client.get(url("task_json", board.code)).json()["rows"]
    bounds = [
        row[name]
        for row in rows
        for name in ("ci_low", "ci_high", "dynascore_ci_low", "dynascore_ci_high")
    ]
    assert bounds and None not in bounds
    assert all(bound == round(bound, 4) for bound in bounds)
    assert any(bound != round(bound, 2) for bound in bounds)  # rounded, not truncated away


@pytest.fixture
def fast_but_worse_board(task):
    """A fast model 10 points below a slow one on every resample (the same noise)."""
    dataset = DatasetFactory(task=task, slug="alpha", name="Alpha")

    def metrics(index, dataset):
        return {
            MAIN: 70.0 if index == 0 else 80.0,
            "examples_per_second": 100.0 if index == 0 else 10.0,
            "latency_p95_ms": 100.0,
            "memory_utilization": 2.0,
        }

    make_models(task, 2, [dataset], metrics_of=metrics)
    return task


# Throughput weighs more than the main metric: the fast model ranks first on the Dynascore.
SPEED_FIRST = f"w_{MAIN}=1&w_examples_per_second=5"


@pytest.mark.django_db
def test_a_row_whose_next_model_is_ahead_on_the_main_metric_says_so_and_is_no_tie(
    client, fast_but_worse_board
):
    code = fast_but_worse_board.code
    data = client.get(f"{url('task_json', code)}?{SPEED_FIRST}").json()
    first = data["rows"][0]
    assert first["model"] == "model-0000"
    # The next model is ahead on the main metric in every resample: not a tie.
    assert first["ahead_of_next"]["main_metric_share"] == 0.0
    assert first["ahead_of_next"]["main_metric_tie"] is False
    assert first["ahead_of_next"]["main_metric_next_ahead"] is True
    assert first["ahead_of_next"]["dynascore_share"] == 1.0
    assert first["ahead_of_next"]["dynascore_tie"] is False
    assert first["ahead_of_next"]["dynascore_next_ahead"] is False

    html = client.get(f"{url('task', code)}?{SPEED_FIRST}").content.decode()
    assert "the next model is ahead on the main metric" in html
    assert 'data-tie="1"' not in html

    content = client.get(f"{url('task_csv', code)}?{SPEED_FIRST}").content.decode()
    header, *rows = list(csv.reader(io.StringIO(content)))
    row = dict(zip(header, rows[0], strict=True))
    assert row[f"{MAIN}_tie_with_next"] == "False"
    assert row[f"{MAIN}_next_ahead"] == "True"
    assert row["dynascore_next_ahead"] == "False"


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


# Anonymous visitor, nothing cached, the task's score cube current. Page: task, task owners
# (prefetch), datasets, data version, score cube, the page rows' bootstrap resamples, forks,
# snapshots. JSON and the htmx table: no forks, snapshots.
PAGE_QUERIES = 8


JSON_QUERIES = 6


PARTIAL_QUERIES = 6


# The cube out of date (new scores): models, scores and the cube's upsert, in a savepoint
# (two statements more here, where the test runs in a transaction).
STALE_EXTRA = 5


# The same page of the same data again: neither the cube nor the resamples are read.
CACHED_SAVING = 2


# A signed-in visitor adds the user (the session is read from the cache: ``cached_db``).
SIGNED_IN_EXTRA = 1


# An anonymous visitor's full page reads the site settings row (the navbar's sign-up link)
# when the cache does not hold it: once per cache lifetime (``tasks.accounts``).
COLD_SETTINGS_EXTRA = 1


QUERY = f"?w_{MAIN}=2&sort=-latency_p95_ms&page=1&page_size=50"


@pytest.mark.django_db
@pytest.mark.parametrize("count", [5, 200])
def test_page_and_json_queries_are_constant(client, task, count, django_assert_num_queries):
    board_with(task, count)
    site_settings_get()  # the row exists, as on any site that has served a page
    page = reverse("leaderboards:task", args=[task.code]) + QUERY
    data = reverse("leaderboards:task_json", args=[task.code]) + QUERY
    for path, expected, headers, cold in (
        (page, PAGE_QUERIES, {}, COLD_SETTINGS_EXTRA),
        (page, PARTIAL_QUERIES, {"HTTP_HX_REQUEST": "true"}, 0),
        (data, JSON_QUERIES, {}, 0),
    ):
        cache.clear()
        BoardCube.objects.all().delete()
        with django_assert_num_queries(expected + STALE_EXTRA + cold):
            assert client.get(path, **headers).status_code == 200
        cache.clear()
        with django_assert_num_queries(expected + cold):
            assert client.get(path, **headers).status_code == 200
        with django_assert_num_queries(expected - CACHED_SAVING):
            assert client.get(path, **headers).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("count", [5, 200])
def test_signed_in_owner_queries_are_constant(
    client, task, owner, count, django_assert_num_queries
):
    board_with(task, count)
    score_cube(task)
    cache.clear()
    client.force_login(owner)
    with django_assert_num_queries(PAGE_QUERIES + SIGNED_IN_EXTRA):
        assert client.get(reverse("leaderboards:task", args=[task.code])).status_code == 200
    client.force_login(UserFactory())
    with django_assert_num_queries(JSON_QUERIES + SIGNED_IN_EXTRA):
        assert client.get(reverse("leaderboards:task_json", args=[task.code])).status_code == 200


@pytest.mark.django_db
def test_uncached_queries_match(client, task, settings, django_assert_num_queries):
    settings.LEADERBOARD_CACHE_SECONDS = 0
    board_with(task, 20)
    score_cube(task)
    site_settings_get()  # cached, as after any first page (``COLD_SETTINGS_EXTRA``)
    page = reverse("leaderboards:task", args=[task.code]) + QUERY
    for _ in range(2):
        # The data version is still read: it says whether the score cube is current.
        with django_assert_num_queries(PAGE_QUERIES):
            assert client.get(page).status_code == 200


@pytest.mark.django_db
def test_the_page_shows_the_trends_chart_only_when_it_says_something(client, task):
    page = client.get(url("task", task.code)).content.decode()
    assert 'data-testid="trends"' not in page
    dataset = DatasetFactory(task=task, slug="only", name="Only", round=task.rounds.get())
    make_models(task, 2, [dataset])
    page = client.get(url("task", task.code)).content.decode()
    assert 'data-testid="trends" data-kind="bar"' in page and "per dataset" in page


@pytest.mark.django_db
def test_the_rank_and_model_columns_are_marked_to_stay_in_view(client, board):
    page = client.get(url("task", board.code)).content.decode()
    assert '<th scope="col" class="lb-rank">#</th>' in page
    assert '<td class="lb-rank">1</td><td class="lb-model">' in page
    assert "leaderboards/leaderboard.css" in page


@pytest.mark.django_db
def test_a_refreshed_board_serves_the_default_public_page_with_its_intervals_from_the_cache(
    client, close_board, django_assert_num_queries
):
    from leaderboards.services.scores import board_cube_refresh

    cache.clear()
    board_cube_refresh(close_board.pk)
    path = url("task_json", close_board.code)
    with django_assert_num_queries(JSON_QUERIES - CACHED_SAVING):
        data = client.get(path).json()
    assert data["rows"][0]["ahead_of_next"]["dynascore_tie"] is True
    cache.clear()
    assert client.get(path).json() == data
