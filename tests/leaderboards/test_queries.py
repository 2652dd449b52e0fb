"""The leaderboard page and its JSON run the same number of queries at 5 and 200 models."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from leaderboards.models import Score
from tests.factories import DatasetFactory, UserFactory
from tests.leaderboards.test_selectors import MAIN, make_models, table_for

# Anonymous visitor, nothing cached. Page: task, task owners (prefetch), datasets, data
# version, models, scores, forks, snapshots. JSON and the htmx table: no forks, snapshots.
PAGE_QUERIES = 8
JSON_QUERIES = 6
PARTIAL_QUERIES = 6
# The same page of the same data again: models and scores come from the cache.
CACHED_SAVING = 2
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
    page = reverse("leaderboards:task", args=[task.code]) + QUERY
    for _ in range(2):
        # Without the cache there is no data-version query either.
        with django_assert_num_queries(PAGE_QUERIES - 1):
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
def test_the_data_version_ignores_scores_off_the_board(task, django_assert_num_queries):
    """A hidden dataset's scores are not on the public board: they do not change the
    public page's version (one query, whatever the number of models)."""
    from leaderboards.selectors import _data_version, leaderboard_datasets

    board_with(task, 3)
    public = leaderboard_datasets(task, None)
    assert "secret" not in {dataset.slug for dataset in public}
    with django_assert_num_queries(1):
        version = _data_version(task, public)
    Score.objects.filter(dataset__slug="secret").delete()
    assert _data_version(task, public) == version
    Score.objects.filter(dataset__slug="alpha").first().save()
    assert _data_version(task, public) != version


@pytest.mark.django_db
def test_cached_pages_keep_viewers_apart(task, owner):
    board_with(task, 3)
    public = table_for(task)
    as_owner = table_for(task, user=owner)
    assert len(as_owner.rows) == len(public.rows) + 2
    assert len(table_for(task).rows) == len(public.rows)
