"""The leaderboard query string: defaults from the config and datasets, bad values explained."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import QueryDict

from leaderboards.models import Dataset
from leaderboards.selectors.boards import leaderboard_datasets
from leaderboards.tables.query import parse_leaderboard_query
from tests.leaderboards.boardkit import MAIN


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
