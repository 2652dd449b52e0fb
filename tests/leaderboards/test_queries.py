"""The leaderboard page and its JSON run the same number of queries at 5 and 200 models."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import DatasetFactory, UserFactory
from tests.leaderboards.test_selectors import make_models

# Anonymous visitor. Page: task, task owners (prefetch), datasets, models, scores, forks,
# snapshots. JSON: the same without forks and snapshots.
PAGE_QUERIES = 7
JSON_QUERIES = 5
# The htmx refresh of the table needs no forks or snapshots either.
PARTIAL_QUERIES = 5
# A signed-in visitor adds the session and the user.
SIGNED_IN_EXTRA = 2


def board_with(task, count):
    datasets = [
        DatasetFactory(task=task, slug="alpha"),
        DatasetFactory(task=task, slug="beta"),
        DatasetFactory(task=task, slug="secret", access_type="hidden"),
    ]
    make_models(task, count, datasets)
    make_models(task, 2, datasets, prefix="hidden", is_published=False, is_anonymous=True)
    return task


@pytest.mark.django_db
@pytest.mark.parametrize("count", [5, 200])
def test_page_and_json_queries_are_constant(client, task, count, django_assert_num_queries):
    board_with(task, count)
    page = reverse("leaderboards:task", args=[task.code])
    data = reverse("leaderboards:task_json", args=[task.code])
    query = "?w_macro_f1=2&sort=-latency_p95_ms&page=1&page_size=50"
    with django_assert_num_queries(PAGE_QUERIES):
        assert client.get(page + query).status_code == 200
    with django_assert_num_queries(PARTIAL_QUERIES):
        assert client.get(page + query, HTTP_HX_REQUEST="true").status_code == 200
    with django_assert_num_queries(JSON_QUERIES):
        assert client.get(data + query).status_code == 200
    with django_assert_num_queries(JSON_QUERIES):
        assert client.get(reverse("leaderboards:task_csv", args=[task.code])).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("count", [5, 200])
def test_signed_in_owner_queries_are_constant(
    client, task, owner, count, django_assert_num_queries
):
    board_with(task, count)
    client.force_login(owner)
    page = reverse("leaderboards:task", args=[task.code])
    with django_assert_num_queries(PAGE_QUERIES + SIGNED_IN_EXTRA):
        assert client.get(page).status_code == 200
    client.force_login(UserFactory())
    with django_assert_num_queries(JSON_QUERIES + SIGNED_IN_EXTRA):
        assert client.get(reverse("leaderboards:task_json", args=[task.code])).status_code == 200
