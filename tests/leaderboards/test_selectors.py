"""The leaderboard table selector: weights, sorting, paging, visibility, incomplete models."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.http import QueryDict
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboards.models import BoardCube, Dataset, Score
from leaderboards.selectors import (
    leaderboard_datasets,
    leaderboard_table,
    parse_leaderboard_query,
)
from leaderboards.tables import (
    DatasetRecord,
    LeaderboardWeights,
    ModelRecord,
    ScoreColumns,
    ScoreRecord,
    build_leaderboard_table,
)
from models_hub.models import Model
from tasks.config import parse_task_config
from tests.factories import DatasetFactory, ModelFactory, UserFactory

MAIN = "macro_f1"


def make_models(
    task, count: int, datasets, *, metrics_of=None, owner=None, prefix="model", **model_fields
):
    """Create ``count`` published models with a Score on each dataset, in bulk.

    ``metrics_of(index, dataset)`` returns the Score metrics; the default gives model
    ``i`` a main metric of ``50 + i % 50`` and slower, bigger models as ``i`` grows.
    """
    owner = owner or UserFactory()
    models = Model.objects.bulk_create(
        Model(
            task=task,
            owner=owner,
            name=f"{prefix}-{index:04d}",
            protocol="none",
            endpoint_url="",
            is_published=model_fields.get("is_published", True),
            is_anonymous=model_fields.get("is_anonymous", False),
        )
        for index in range(count)
    )

    def default_metrics(index, dataset):
        return {
            MAIN: 50.0 + index % 50,
            "examples_per_second": 10.0 + index % 7,
            "latency_p95_ms": 100.0 + index % 11,
            "memory_utilization": 2.0 + index % 5,
        }

    metrics_of = metrics_of or default_metrics
    scores = []
    for index, model in enumerate(models):
        for dataset in datasets:
            metrics = metrics_of(index, dataset)
            if metrics is None:
                continue
            scores.append(
                Score(
                    model=model,
                    dataset=dataset,
                    config_version=dataset.config_version,
                    metrics=metrics,
                    main_metric=MAIN,
                    main_value=metrics.get(MAIN),
                    ci_low=(metrics.get(MAIN) or 0) - 2,
                    ci_high=(metrics.get(MAIN) or 0) + 2,
                    per_tag={"negation": {MAIN: metrics.get(MAIN)}},
                )
            )
    Score.objects.bulk_create(scores)
    return models


def forget_computed_boards():
    """Drop the computed pages and score cubes: for data changed behind the ORM's back
    (``bulk_update`` leaves ``updated_at`` as it was, so the data version cannot see it)."""
    cache.clear()
    BoardCube.objects.all().delete()


def table_for(task, user=None, querydict="", **overrides):
    """Return the table the page would show for ``querydict`` (a query string)."""
    user = user or AnonymousUser()
    datasets = leaderboard_datasets(task, user)
    query = parse_leaderboard_query(QueryDict(querydict), task.config, datasets)
    arguments = {
        "weights": query.weights,
        "sort": query.sort,
        "page": query.page,
        "page_size": query.page_size,
        "user": user,
        "datasets": datasets,
        "messages": query.messages,
    }
    arguments.update(overrides)
    return leaderboard_table(task, **arguments)


@pytest.fixture
def two_datasets(task):
    return [
        DatasetFactory(task=task, slug="alpha", name="Alpha"),
        DatasetFactory(task=task, slug="beta", name="Beta"),
    ]


def scored(task, dataset, model_metrics: dict[str, dict]):
    """Create one model per entry with the given metrics on ``dataset``."""
    created = {}
    for name, metrics in model_metrics.items():
        model = ModelFactory(task=task, name=name)
        Score.objects.create(
            model=model,
            dataset=dataset,
            config_version=dataset.config_version,
            metrics=metrics,
            main_metric=MAIN,
            main_value=metrics.get(MAIN),
        )
        created[name] = model
    return created


@pytest.mark.django_db
def test_parse_defaults_come_from_the_config_and_dataset_weights(task, two_datasets):
    Dataset.objects.filter(slug="beta").update(weight=2.5)
    datasets = leaderboard_datasets(task, AnonymousUser())
    weights, sort, page = parse_leaderboard_query(QueryDict(""), task.config, datasets)
    assert weights.metrics[MAIN] == 4.0
    assert weights.metrics["latency_p95_ms"] == 1.0
    assert weights.datasets == {"alpha": 1.0, "beta": 2.5}
    assert (sort, page) == ("-dynascore", 1)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "w_macro_f1=abc",
        "w_macro_f1=-1",
        "w_macro_f1=nan",
        "w_macro_f1=inf",
        "w_macro_f1=1e308",
        "d_alpha=%00",
        "sort=password",
        "sort=-__class__",
        "page=0",
        "page=-3",
        "page=99999999999999999999",
        "page_size=0",
        "page_size=100000",
        "page=%C2%B2",
    ],
)
def test_parse_bad_values_fall_back_with_a_message(task, two_datasets, query):
    datasets = leaderboard_datasets(task, AnonymousUser())
    parsed = parse_leaderboard_query(QueryDict(query), task.config, datasets)
    assert parsed.messages
    assert parsed.weights.metrics[MAIN] == 4.0
    assert parsed.weights.datasets["alpha"] == 1.0
    assert parsed.sort == "-dynascore"
    assert parsed.page == 1


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
    # AMRS(throughput) = mean(|20-40|/10, |10-20|/10) = 1.5; weights 2/3 and 1/3.
    expected = {
        "A": 2 / 3 * 80 + 1 / 3 * 10 / 1.5,
        "B": 2 / 3 * 70 + 1 / 3 * 20 / 1.5,
        "C": 2 / 3 * 60 + 1 / 3 * 40 / 1.5,
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
            "complete-low": {MAIN: 10.0, "examples_per_second": 5.0},
            "missing-speed": {MAIN: 99.0},
            "complete-high": {MAIN: 90.0, "examples_per_second": 6.0},
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
    assert table.rows[0].ci_low == pytest.approx(80.5)
    assert table.rows[0].ci_high == pytest.approx(84.5)


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


# -- the columnar loading (pure) -------------------------------------------------------------

json_values = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.booleans(),
    st.sampled_from(["1.5", "text", ""]),
    st.just([1.0]),
)
score_records = st.builds(
    ScoreRecord,
    model_id=st.integers(min_value=1, max_value=5),
    dataset_slug=st.sampled_from(["alpha", "beta"]),
    metrics=st.one_of(
        st.dictionaries(
            st.sampled_from([MAIN, "latency_p95_ms", "memory_utilization", "fairness"]),
            json_values,
        ),
        st.sampled_from([[], "not a dict"]),
    ),
    per_tag=st.just({}),
    main_value=st.one_of(st.none(), st.floats(allow_nan=True)),
    ci_low=st.none(),
    ci_high=st.none(),
    columns=st.fixed_dictionaries(
        {"latency_p95_ms": st.one_of(st.none(), st.floats()), "memory_gb": st.none()}
    ),
)


NAMES = (MAIN, "latency_p95_ms", "memory_utilization", "fairness")
# Every metric present and a number: the one-pass path of ``ScoreColumns.metric_matrix``.
complete_score_records = score_records.map(
    lambda record: ScoreRecord(
        record.model_id,
        record.dataset_slug,
        {name: float(index) + 0.5 for index, name in enumerate(NAMES)},
        record.per_tag,
        record.main_value,
        None,
        None,
        record.columns,
    )
)
number_metrics = st.fixed_dictionaries(
    dict.fromkeys(NAMES, st.one_of(st.floats(), st.integers(-(10**6), 10**6)))
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(score_records, max_size=8),
    st.lists(st.tuples(complete_score_records, number_metrics), max_size=8),
)
def test_score_columns_extract_metrics_as_score_records_do(records, complete):
    for batch in (records, [replace(record, metrics=metrics) for record, metrics in complete]):
        columns = ScoreColumns.from_records(batch)
        matrix = columns.metric_matrix(NAMES, MAIN)
        assert matrix.shape == (len(batch), len(NAMES))
        for index, name in enumerate(NAMES):
            want = [record.metric(name, MAIN) for record in batch]
            for got in (columns.metric(name, MAIN).tolist(), matrix[:, index].tolist()):
                assert [None if value != value else value for value in got] == want


def test_best_per_tag_is_the_same_for_json_dicts_and_other_mappings():
    # Plain dicts (what JSON decodes to) take the numpy path; other mappings the loop.
    specs = parse_task_config(
        (Path(__file__).resolve().parents[2] / "tasks/demo_data/sentiment.yaml").read_text()
    ).metrics()
    datasets = [
        DatasetRecord("alpha", "Alpha", "scoring", 1, 1.0),
        DatasetRecord("beta", "Beta", "scoring", 2, 3.0),
    ]
    models = [ModelRecord(index, f"m{index}", "owner", False, True) for index in range(1, 7)]

    def records(wrap):
        return [
            ScoreRecord(
                model_id=index,
                dataset_slug=slug,
                metrics={MAIN: 50.0 + index},
                per_tag=wrap(
                    {
                        "negation": wrap({MAIN: float(index % 3) + position}),
                        "sarcasm": wrap({MAIN: 7.0}),  # a tie: the smallest key wins
                        "emoji": wrap({MAIN: None if index == 2 else 100.0 - index}),
                    }
                ),
                main_value=50.0 + index,
                ci_low=None,
                ci_high=None,
                columns={},
            )
            for index in range(1, 7)
            for position, slug in enumerate(["alpha", "beta"])
        ]

    tables = [
        build_leaderboard_table(
            task_code="t",
            metric_specs=specs,
            datasets=datasets,
            models=models,
            scores=records(wrap),
            weights=LeaderboardWeights(metrics={}, datasets={}),
        )
        for wrap in (dict, MappingProxyType)
    ]
    assert tables[0].best_per_tag == tables[1].best_per_tag
    assert [(leader.tag, leader.model_name) for leader in tables[0].best_per_tag] == [
        ("emoji", "m1"),
        ("negation", "m2"),
        ("sarcasm", "m1"),
    ]


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


def test_json_values_decodes_what_json_does_with_orjson_first():
    """The score columns are decoded in one call; what orjson refuses (NaN, integers
    beyond 64 bits) is still decoded as ``json`` does, and a text that is not JSON stays
    text, as ``JSONField`` leaves it."""
    from leaderboards.selectors import _json_values

    assert _json_values([]) == []
    assert _json_values(['{"a": 1.5}', None, "[1, 2]", '"x"']) == [{"a": 1.5}, None, [1, 2], "x"]
    nan, big = _json_values(['{"a": NaN}', str(2**70)])
    assert math.isnan(nan["a"]) and big == 2**70
    assert _json_values(['{"a": 1}', "not json", '{"b": ']) == [{"a": 1}, "not json", '{"b": ']
