"""The leaderboard page and its JSON run the same number of queries at 5 and 200 models."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from leaderboards.models import BoardCube, Score
from leaderboards.selectors import _data_version, score_cube
from tests.factories import DatasetFactory, TaskFactory, UserFactory
from tests.leaderboards.test_selectors import MAIN, make_models, table_for

# Anonymous visitor, nothing cached, the task's score cube current. Page: task, task owners
# (prefetch), datasets, data version, score cube, forks, snapshots. JSON and the htmx table:
# no forks, snapshots.
PAGE_QUERIES = 7
JSON_QUERIES = 5
PARTIAL_QUERIES = 5
# The cube out of date (new scores): models, scores and the cube's upsert, in a savepoint
# (two statements more here, where the test runs in a transaction).
STALE_EXTRA = 5
# The same page of the same data again: the cube is not read.
CACHED_SAVING = 1
# A signed-in visitor adds the user (the session is read from the cache: ``cached_db``).
SIGNED_IN_EXTRA = 1
QUERY = f"?w_{MAIN}=2&sort=-latency_p95_ms&page=1&page_size=50"


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
    page = reverse("leaderboards:task", args=[task.code]) + QUERY
    data = reverse("leaderboards:task_json", args=[task.code]) + QUERY
    for url, expected, headers in (
        (page, PAGE_QUERIES, {}),
        (page, PARTIAL_QUERIES, {"HTTP_HX_REQUEST": "true"}),
        (data, JSON_QUERIES, {}),
    ):
        cache.clear()
        BoardCube.objects.all().delete()
        with django_assert_num_queries(expected + STALE_EXTRA):
            assert client.get(url, **headers).status_code == 200
        cache.clear()
        with django_assert_num_queries(expected):
            assert client.get(url, **headers).status_code == 200
        with django_assert_num_queries(expected - CACHED_SAVING):
            assert client.get(url, **headers).status_code == 200


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
    page = reverse("leaderboards:task", args=[task.code]) + QUERY
    for _ in range(2):
        # The data version is still read: it says whether the score cube is current.
        with django_assert_num_queries(PAGE_QUERIES):
            assert client.get(page).status_code == 200


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
def test_the_data_version_sees_every_model_and_score_of_the_task(task, django_assert_num_queries):
    """One query, whatever the number of models; the cube holds every dataset of the task
    (hidden ones for its owners), so a change on any of them is a new version."""
    board_with(task, 3)
    with django_assert_num_queries(1):
        version = _data_version(task)
    Score.objects.filter(dataset__slug="secret").first().save()
    assert _data_version(task) != version
    version = _data_version(task)
    Score.objects.filter(dataset__slug="secret").first().delete()
    assert _data_version(task) != version
    version = _data_version(task)
    task.models.first().save()
    assert _data_version(task) != version
    other = board_with(TaskFactory(), 2)
    version = _data_version(task)
    Score.objects.filter(dataset__task=other).first().save()
    assert _data_version(task) == version


@pytest.mark.django_db
def test_cached_pages_keep_viewers_apart(task, owner):
    board_with(task, 3)
    public = table_for(task)
    as_owner = table_for(task, user=owner)
    assert len(as_owner.rows) == len(public.rows) + 2
    assert len(table_for(task).rows) == len(public.rows)
