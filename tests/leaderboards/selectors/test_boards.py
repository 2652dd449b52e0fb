"""The leaderboard table selector: weights, sorting, paging, visibility, incomplete models,
and pages that follow data changes through the cache."""

from __future__ import annotations

import math

import numpy as np
import pytest

from leaderboards.models import Score
from leaderboards.selectors.boards import leaderboard_table
from leaderboards.tables.results import LeaderboardWeights
from tests.factories import DatasetFactory, ModelFactory, UserFactory
from tests.leaderboards.boardkit import (
    MAIN,
    board_with,
    dataset_noise,
    forget_computed_boards,
    make_models,
    scored,
    table_for,
)


@pytest.mark.django_db
def test_dynascore_matches_a_hand_computation(task):
    dataset = DatasetFactory(task=task, slug="only")
    scored(
        task,
        dataset,
        {
            "A": {MAIN: 80.0, "examples_per_second": 10.0},
            "B": {MAIN: 70.0, "examples_per_second": 20.0},
            "C": {MAIN: 60.0, "examples_per_second": 40.0},
        },
    )
    table = table_for(task, querydict=f"w_{MAIN}=2&w_examples_per_second=1")
    # Throughput is compared at 10 %: each value is rounded to the nearest power of 1.1,
    # 10 -> 1.1**24, 20 -> 1.1**31, 40 -> 1.1**39 (tasks.metrics.jobs).
    a, b, c = 1.1**24, 1.1**31, 1.1**39
    # AMRS(throughput) = mean(|b - c| / 10, |a - b| / 10); weights 2/3 and 1/3.
    amrs = (abs(b - c) / 10 + abs(a - b) / 10) / 2
    expected = {
        "A": 2 / 3 * 80 + 1 / 3 * a / amrs,
        "B": 2 / 3 * 70 + 1 / 3 * b / amrs,
        "C": 2 / 3 * 60 + 1 / 3 * c / amrs,
    }
    got = {row.model_name: row.dynascore for row in table.rows}
    assert got == pytest.approx(expected)
    assert [row.rank for row in table.rows] == [1, 2, 3]
    # No model has latency, memory or delta metrics: hidden, not "incomplete for all".
    assert set(table.hidden_metrics) == {
        "robustness",
        "fairness",
        "latency_p95_ms",
        "memory_utilization",
    }
    assert not any(row.incomplete for row in table.rows)


@pytest.mark.django_db
def test_weights_from_the_url_change_the_ranking(task):
    dataset = DatasetFactory(task=task, slug="only")
    scored(
        task,
        dataset,
        {
            "accurate": {MAIN: 90.0, "examples_per_second": 1.0},
            "fast": {MAIN: 85.0, "examples_per_second": 100.0},
        },
    )
    default = table_for(task)
    assert [row.model_name for row in default.rows] == ["accurate", "fast"]
    speed = table_for(task, querydict=f"w_{MAIN}=0.5&w_examples_per_second=5")
    assert [row.model_name for row in speed.rows] == ["fast", "accurate"]


@pytest.mark.django_db
def test_dataset_weights_change_the_ranking(task, two_datasets):
    alpha, beta = two_datasets

    def metrics(index, dataset):
        good_on_alpha = (index == 0) == (dataset.slug == "alpha")
        return {MAIN: 90.0 if good_on_alpha else 60.0}

    make_models(task, 2, two_datasets, metrics_of=metrics)
    on_alpha = table_for(task, querydict="d_alpha=5&d_beta=0")
    on_beta = table_for(task, querydict="d_alpha=0&d_beta=5")
    assert on_alpha.rows[0].model_name == "model-0000"
    assert on_beta.rows[0].model_name == "model-0001"


@pytest.mark.django_db
def test_latency_offset_is_the_largest_value_and_memory_is_memory_saved(task, settings):
    settings.LEADERBOARD_INSTANCE_MEMORY_GB = 32
    dataset = DatasetFactory(task=task, slug="only")
    scored(
        task,
        dataset,
        {
            "A": {MAIN: 80.0, "latency_p95_ms": 100.0, "memory_utilization": 4.0},
            "B": {MAIN: 70.0, "latency_p95_ms": 300.0, "memory_utilization": 8.0},
        },
    )
    table = table_for(task)
    columns = {column.name: column for column in table.metrics}
    assert columns["latency_p95_ms"].offset == 300.0
    assert columns["memory_utilization"].offset == 32.0
    assert columns["latency_p95_ms"].direction == "lower"
    # Values shown are the measured ones, not the converted ones.
    assert table.rows[0].metrics["latency_p95_ms"] == 100.0


@pytest.mark.django_db
def test_job_metrics_fall_back_to_the_score_columns(task):
    dataset = DatasetFactory(task=task, slug="only")
    model = ModelFactory(task=task, name="columns")
    Score.objects.create(
        model=model,
        dataset=dataset,
        config_version=dataset.config_version,
        metrics={},
        main_metric=MAIN,
        main_value=77.0,
        latency_p95_ms=120.0,
        memory_gb=3.0,
        examples_per_second=12.0,
    )
    row = table_for(task).rows[0]
    assert row.metrics[MAIN] == 77.0
    assert row.metrics["latency_p95_ms"] == 120.0
    assert row.metrics["memory_utilization"] == 3.0
    assert row.metrics["examples_per_second"] == 12.0


@pytest.mark.django_db
def test_incomplete_models_are_listed_below_the_ranked_ones(task):
    dataset = DatasetFactory(task=task, slug="only")
    scored(
        task,
        dataset,
        {
            # An evaluated endpoint without a throughput; a model with no job metric at
            # all is a predictions-file model, which is ranked (test_scores_and_files.py).
            "complete-low": {MAIN: 10.0, "examples_per_second": 5.0, "latency_p95_ms": 9.0},
            "missing-speed": {MAIN: 99.0, "latency_p95_ms": 9.0},
            "complete-high": {MAIN: 90.0, "examples_per_second": 6.0, "latency_p95_ms": 9.0},
        },
    )
    ModelFactory(task=task, name="never-evaluated")
    table = table_for(task)
    names = [row.model_name for row in table.rows]
    assert names[:2] == ["complete-high", "complete-low"]
    assert set(names[2:]) == {"missing-speed", "never-evaluated"}
    incomplete = {row.model_name: row for row in table.rows if row.incomplete}
    assert incomplete["missing-speed"].missing_metrics == ("examples_per_second",)
    assert incomplete["missing-speed"].rank is None
    # Even when sorting ascending by Dynascore the incomplete ones stay below.
    ascending = table_for(task, querydict="sort=dynascore")
    assert [row.model_name for row in ascending.rows][:2] == ["complete-low", "complete-high"]


@pytest.mark.django_db
def test_all_zero_weights_give_a_message_not_an_error(task):
    dataset = DatasetFactory(task=task, slug="only")
    scored(task, dataset, {"A": {MAIN: 80.0}, "B": {MAIN: 70.0}})
    query = "&".join(
        f"w_{name}=0"
        for name in [
            MAIN,
            "robustness",
            "fairness",
            "examples_per_second",
            "latency_p95_ms",
            "memory_utilization",
        ]
    )
    table = table_for(task, querydict=query)
    assert table.error_code == "dynascore.E001"
    assert "weight" in table.error
    assert len(table.rows) == 2
    assert all(row.dynascore is None for row in table.rows)
    zero_datasets = table_for(task, querydict="d_only=0")
    assert zero_datasets.error_code == "dynascore.E001"


@pytest.mark.django_db
def test_constant_metric_adds_nothing_and_ties_share_a_rank(task):
    dataset = DatasetFactory(task=task, slug="only")
    scored(
        task,
        dataset,
        {
            "A": {MAIN: 80.0, "examples_per_second": 10.0},
            "B": {MAIN: 80.0, "examples_per_second": 10.0},
            "C": {MAIN: 60.0, "examples_per_second": 10.0},
        },
    )
    table = table_for(task)
    columns = {column.name: column for column in table.metrics}
    assert columns["examples_per_second"].contributes is False
    assert [row.rank for row in table.rows] == [1, 1, 3]
    assert table.rows[0].dynascore == pytest.approx(4 / 5 * 80)


@pytest.mark.django_db
def test_one_model(task):
    dataset = DatasetFactory(task=task, slug="only")
    scored(task, dataset, {"solo": {MAIN: 70.0, "examples_per_second": 3.0}})
    table = table_for(task)
    assert table.rows[0].rank == 1
    assert table.rows[0].dynascore == pytest.approx(4 / 5 * 70)


@pytest.mark.django_db
def test_sorting_by_any_column_and_paging(task, two_datasets):
    make_models(task, 23, two_datasets)
    by_latency = table_for(task, querydict="sort=latency_p95_ms&page_size=100")
    values = [row.metrics["latency_p95_ms"] for row in by_latency.rows]
    assert values == sorted(values)
    by_name_desc = table_for(task, querydict="sort=-name&page_size=100")
    names = [row.model_name for row in by_name_desc.rows]
    assert names == sorted(names, reverse=True)
    by_dataset = table_for(task, querydict="sort=-dataset:beta&page_size=100")
    beta = [row.datasets["beta"].value for row in by_dataset.rows]
    assert beta == sorted(beta, reverse=True)

    pages = [table_for(task, querydict=f"page={page}&page_size=10") for page in (1, 2, 3)]
    assert [len(page.rows) for page in pages] == [10, 10, 3]
    assert pages[0].page_count == 3 and pages[0].total_rows == 23
    all_rows = table_for(task, querydict="page_size=100").rows
    paged = [row.model_id for page in pages for row in page.rows]
    assert paged == [row.model_id for row in all_rows]
    beyond = table_for(task, querydict="page=9&page_size=10")
    assert beyond.page == 3 and beyond.messages


@pytest.mark.django_db
def test_hidden_datasets_and_unpublished_models_are_for_owners(task, owner, two_datasets):
    hidden = DatasetFactory(task=task, slug="secret", access_type="hidden")
    make_models(task, 2, [*two_datasets, hidden])
    stranger = UserFactory()
    private = ModelFactory(task=task, name="private", owner=stranger, is_published=False)
    Score.objects.create(
        model=private,
        dataset=two_datasets[0],
        config_version=two_datasets[0].config_version,
        metrics={MAIN: 99.0},
        main_metric=MAIN,
        main_value=99.0,
    )
    public = table_for(task)
    assert [dataset.slug for dataset in public.datasets] == ["alpha", "beta"]
    assert "secret" not in public.weights.datasets
    assert "private" not in [row.model_name for row in public.rows]
    assert all("secret" not in row.datasets for row in public.rows)
    assert "secret" not in str(public.as_dict())

    as_owner = table_for(task, user=owner)
    assert "secret" in [dataset.slug for dataset in as_owner.datasets]
    assert "private" in [row.model_name for row in as_owner.rows]
    # Hidden datasets never enter the Dynascore, so scores agree for everyone.
    owner_scores = {row.model_name: row.dynascore for row in as_owner.rows}
    for row in public.rows:
        assert owner_scores[row.model_name] == pytest.approx(row.dynascore)

    as_stranger = table_for(task, user=stranger)
    assert "private" in [row.model_name for row in as_stranger.rows]


@pytest.mark.django_db
def test_anonymous_models_show_as_anonymous(task, owner):
    dataset = DatasetFactory(task=task, slug="only")
    author = UserFactory(username="secret-author")
    model = ModelFactory(task=task, name="stealth", owner=author, is_anonymous=True)
    Score.objects.create(
        model=model,
        dataset=dataset,
        config_version=dataset.config_version,
        metrics={MAIN: 50.0},
        main_metric=MAIN,
        main_value=50.0,
    )
    row = table_for(task).rows[0]
    assert (row.model_name, row.owner_name, row.is_anonymous) == ("Anonymous", "anonymous", True)
    dumped = str(table_for(task).as_dict())
    assert "stealth" not in dumped and "secret-author" not in dumped
    assert table_for(task, user=author).rows[0].model_name == "stealth"
    assert table_for(task, user=owner).rows[0].model_name == "stealth"


@pytest.mark.django_db
def test_trends_best_per_tag_and_ci(task):
    from tasks.services import round_open

    second = round_open(task)
    first = task.rounds.get(number=1)
    round_one = DatasetFactory(task=task, slug="r1", round=first)
    round_two = DatasetFactory(task=task, slug="r2", round=second)

    def metrics(index, dataset):
        return {MAIN: 60.0 + index * 10 + (5 if dataset.slug == "r2" else 0)}

    make_models(task, 3, [round_one, round_two], metrics_of=metrics)
    table = table_for(task)
    assert table.trend_rounds == (1, 2)
    assert table.trends[0].model_name == "model-0002"
    assert table.trends[0].values == (80.0, 85.0)
    assert [leader.as_dict() for leader in table.best_per_tag] == [
        {"tag": "negation", "model": "model-0002", "value": 82.5}
    ]
    # The CI of the aggregate: the percentiles of the per-resample average of both rounds.
    per_resample = (
        (80.0 + dataset_noise(round_one)).astype(np.float32)
        + (85.0 + dataset_noise(round_two)).astype(np.float32)
    ) / 2
    low, high = np.percentile(per_resample, [2.5, 97.5])
    assert table.rows[0].ci_low == pytest.approx(low, abs=1e-4)
    assert table.rows[0].ci_high == pytest.approx(high, abs=1e-4)


@pytest.mark.django_db
def test_as_dict_is_json_serialisable_and_inputs_unchanged(task, two_datasets):
    import json

    make_models(task, 3, two_datasets)
    weights = LeaderboardWeights(metrics={MAIN: 4.0}, datasets={"alpha": 1.0})
    before = (dict(weights.metrics), dict(weights.datasets))
    table = leaderboard_table(task, weights=weights, sort="-dynascore", page=1, page_size=50)
    assert (dict(weights.metrics), dict(weights.datasets)) == before
    text = json.dumps(table.as_dict())
    assert math.isfinite(json.loads(text)["rows"][0]["dynascore"])


@pytest.mark.django_db
def test_best_per_tag_reads_main_per_tag_and_falls_back_to_per_tag(task):
    """``Score.main_per_tag`` gives the same leaders as ``per_tag``; rows without it (or
    written for another main metric) are read from ``per_tag``."""
    from leaderboards.models import main_per_tag_of

    dataset = DatasetFactory(task=task, slug="tagged")
    make_models(task, 4, [dataset])
    scores = list(Score.objects.filter(dataset=dataset).order_by("model_id"))
    for index, score in enumerate(scores):
        score.per_tag = {
            "negation": {MAIN: 50.0 + index, "count": 3},
            "sarcasm": {MAIN: 90.0 - index, "count": 2},
            "emoji": {"count": 1},
        }
    Score.objects.bulk_update(scores, ["per_tag"])
    legacy = table_for(task).best_per_tag
    assert [(leader.tag, leader.value) for leader in legacy] == [
        ("negation", 53.0),
        ("sarcasm", 90.0),
    ]

    for score in scores:
        score.main_per_tag = main_per_tag_of(score.per_tag, MAIN)
    assert scores[0].main_per_tag == {"negation": 50.0, "sarcasm": 90.0}
    Score.objects.bulk_update(scores, ["main_per_tag"])
    forget_computed_boards()
    assert table_for(task).best_per_tag == legacy

    # A stale denormalised value for another main metric is ignored: per_tag is read.
    scores[0].main_per_tag = {"sarcasm": 1000.0}
    scores[0].main_metric = "other"
    Score.objects.bulk_update(scores[:1], ["main_per_tag", "main_metric"])
    forget_computed_boards()
    assert table_for(task).best_per_tag == legacy


@pytest.mark.django_db
def test_a_changed_score_shows_at_once_despite_the_cache(task):
    board_with(task, 5)
    before = table_for(task)
    assert table_for(task).rows == before.rows  # served from the cache
    score = Score.objects.filter(model_id=before.rows[-1].model_id).first()
    score.metrics = {**score.metrics, MAIN: 1000.0}
    score.main_value = 1000.0
    score.save()
    after = table_for(task)
    assert after.rows[0].model_id == before.rows[-1].model_id


@pytest.mark.django_db
def test_new_models_and_removed_scores_show_at_once_despite_the_cache(task):
    """The data version counts the task's models and the board's scores: a model added
    (even without scores) or a score deleted changes the page at once."""
    board_with(task, 3)
    before = table_for(task)
    assert before.total_rows == 3
    (late,) = make_models(task, 1, [], prefix="late")
    assert table_for(task).total_rows == 4
    Score.objects.filter(model_id=before.rows[0].model_id, dataset__slug="alpha").delete()
    after = table_for(task)
    incomplete = {row.model_id for row in after.rows if row.incomplete}
    assert incomplete == {late.pk, before.rows[0].model_id}


@pytest.mark.django_db
def test_cached_pages_keep_viewers_apart(task, owner):
    board_with(task, 3)
    public = table_for(task)
    as_owner = table_for(task, user=owner)
    assert len(as_owner.rows) == len(public.rows) + 2
    assert len(table_for(task).rows) == len(public.rows)


@pytest.mark.django_db
def test_the_trends_chart_draws_dataset_bars_with_one_round_and_hides_with_nothing(task):
    assert table_for(task).trends_chart is None
    first = task.rounds.get(number=1)
    alpha = DatasetFactory(task=task, slug="alpha", name="Alpha", round=first)
    beta = DatasetFactory(task=task, slug="beta", name="Beta", round=first)

    def metrics(index, dataset):
        if index == 0 and dataset.slug == "beta":
            return None
        return {MAIN: 60.0 + index * 10 + (5 if dataset.slug == "beta" else 0)}

    make_models(task, 2, [alpha, beta], metrics_of=metrics)
    chart = table_for(task).trends_chart
    assert chart["kind"] == "bar" and chart["labels"] == ["Alpha", "Beta"]
    assert chart["series"] == [{"model": "model-0001", "values": [70.0, 75.0]}]


@pytest.mark.django_db
def test_the_trends_chart_draws_lines_across_two_rounds(task):
    from tasks.services import round_open

    second = round_open(task, carry_over=False)
    round_one = DatasetFactory(task=task, slug="r1", round=task.rounds.get(number=1))
    round_two = DatasetFactory(task=task, slug="r2", round=second)
    make_models(task, 2, [round_one, round_two])
    chart = table_for(task).trends_chart
    assert chart["kind"] == "line" and chart["labels"] == ["Round 1", "Round 2"]
    assert len(chart["series"]) == 2
