"""The task's score cube read by the pages: equal to pages built from the scores, rebuilt
when its data version moves; the version itself; the JSON decoding of its score rows."""

from __future__ import annotations

import math

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.http import QueryDict
from django.urls import reverse

from leaderboards.cubes import (
    cube_decode,
)
from leaderboards.models import BoardCube, Score
from leaderboards.selectors.boards import leaderboard_datasets
from leaderboards.selectors.cubes import json_texts_decode, leaderboard_data_version, score_cube
from leaderboards.tables.build import LeaderboardRequest, build_leaderboard_table
from leaderboards.tables.query import parse_leaderboard_query
from leaderboards.tables.records import DatasetRecord, ModelRecord, ScoreRecord
from models_hub.models import RegisteredModel
from tasks.permissions import can_manage_task
from tests.factories import DatasetFactory, TaskFactory, UserFactory
from tests.leaderboards.boardkit import MAIN, assert_same_cube, board_with, make_models, table_for

QUERIES = (
    "",
    f"w_{MAIN}=1&w_latency_p95_ms=3&sort=name",
    "d_alpha=0&sort=-examples_per_second&page_size=3&page=2",
    "sort=dataset:beta",
)


def records_table(task, user, querydict):
    """The table built the way it was before cubes: from the viewer's records."""
    datasets = leaderboard_datasets(task, user)
    query = parse_leaderboard_query(QueryDict(querydict), task.config, datasets)
    manages = can_manage_task(user, task)
    user_id = user.pk if user.is_authenticated else None
    models = [
        ModelRecord(
            model.pk,
            model.name,
            model.owner.username,
            model.is_anonymous,
            not model.is_anonymous or manages or model.owner_id == user_id,
        )
        for model in RegisteredModel.objects.filter(task=task).select_related("owner")
        if manages or model.is_published or model.owner_id == user_id
    ]
    slugs = {dataset.pk: dataset.slug for dataset in datasets}
    scores = [
        ScoreRecord(
            score.model_id,
            slugs[score.dataset_id],
            score.metrics,
            score.per_tag,
            score.main_value,
            score.ci_low,
            score.ci_high,
            {"latency_p95_ms": score.latency_p95_ms},
            main_resamples=score.main_resamples,
        )
        for score in Score.objects.filter(dataset_id__in=list(slugs))
    ]
    return build_leaderboard_table(
        LeaderboardRequest(
            task_code=task.code,
            metric_specs=task.config.metrics(),
            datasets=[
                DatasetRecord(d.slug, d.name, str(d.access_type), None, float(d.weight))
                for d in datasets
            ],
            models=models,
            scores=scores,
            weights=query.weights,
            sort=query.sort,
            page=query.page,
            page_size=query.page_size,
        )
    )


@pytest.mark.django_db
def test_pages_from_the_cube_equal_pages_built_from_the_scores(task, owner):
    datasets = [
        DatasetFactory(task=task, slug="alpha"),
        DatasetFactory(task=task, slug="beta"),
        DatasetFactory(task=task, slug="secret", access_type="hidden"),
        DatasetFactory(task=task, slug="empty"),  # no scores: not in the cube
    ]

    def metrics_of(index, dataset):
        if dataset.slug == "empty" or (index == 4 and dataset.slug == "beta"):
            return None
        return {MAIN: 40.0 + (index * 7) % 13 + len(dataset.slug), "latency_p95_ms": 90.0 + index}

    author = UserFactory(username="author")
    make_models(task, 9, datasets, metrics_of=metrics_of)
    make_models(
        task,
        3,
        datasets,
        metrics_of=metrics_of,
        owner=author,
        prefix="mine",
        is_published=False,
        is_anonymous=True,
    )
    make_models(task, 2, datasets, metrics_of=metrics_of, prefix="anon", is_anonymous=True)
    for user in (AnonymousUser(), author, owner, UserFactory()):
        for querydict in QUERIES:
            cache.clear()
            from_cube = table_for(task, user=user, querydict=querydict).as_dict()
            assert from_cube == records_table(task, user, querydict).as_dict(), (user, querydict)


@pytest.mark.django_db
def test_a_page_rebuilds_a_cube_that_is_out_of_date_and_stores_it(task):
    dataset = DatasetFactory(task=task, slug="alpha")
    (first,) = make_models(task, 1, [dataset])
    assert not BoardCube.objects.exists()
    assert table_for(task).rows[0].metrics[MAIN] == 50.0
    stored = BoardCube.objects.get(task=task)
    assert stored.version == leaderboard_data_version(task)

    score = Score.objects.get(model=first)
    score.metrics = {**score.metrics, MAIN: 77.0}
    score.save()
    assert table_for(task).rows[0].metrics[MAIN] == 77.0
    assert (
        BoardCube.objects.get(task=task).version == leaderboard_data_version(task) != stored.version
    )

    # Reading a current cube writes nothing.
    built_at = BoardCube.objects.get(task=task).built_at
    cache.clear()
    assert table_for(task).rows[0].metrics[MAIN] == 77.0
    assert BoardCube.objects.get(task=task).built_at == built_at


@pytest.mark.django_db
def test_a_damaged_stored_cube_is_rebuilt_and_the_page_still_shows(client, task):
    dataset = DatasetFactory(task=task, slug="alpha")
    make_models(task, 2, [dataset])
    score_cube(task)
    BoardCube.objects.filter(task=task).update(payload=b"\x05\x00\x00\x00{junk")
    cache.clear()
    response = client.get(reverse("leaderboards:task", args=[task.code]))
    assert response.status_code == 200 and b"model-0001" in response.content
    assert_same_cube(cube_decode(bytes(BoardCube.objects.get(task=task).payload)), score_cube(task))


@pytest.mark.django_db
def test_renaming_a_model_owner_shows_at_once(task):
    dataset = DatasetFactory(task=task, slug="alpha")
    author = UserFactory(username="before")
    make_models(task, 1, [dataset], owner=author)
    assert table_for(task).rows[0].owner_name == "before"
    # A sign-in saves ``last_login`` only: the cube stays.
    author.save(update_fields=["last_login"])
    assert BoardCube.objects.filter(task=task).exists()
    author.username = "after"
    author.save()
    assert not BoardCube.objects.filter(task=task).exists()
    cache.clear()
    assert table_for(task).rows[0].owner_name == "after"


@pytest.mark.django_db
def test_a_config_change_is_a_new_data_version(task, owner):
    from tasks.services import task_update_config

    dataset = DatasetFactory(task=task, slug="alpha")
    make_models(task, 2, [dataset])
    versions = [leaderboard_data_version(task)]
    # The scores refer to the current version: a new version is made.
    task_update_config(task, task.current_config.yaml_text + "\n# edited\n", user=owner)
    task.refresh_from_db()
    versions.append(leaderboard_data_version(task))
    # Nothing refers to the new version yet: edited in place (same id), other metrics.
    yaml_text = task.current_config.yaml_text.replace("macro_f1", "accuracy")
    assert yaml_text != task.current_config.yaml_text
    task_update_config(task, yaml_text, user=owner)
    task.refresh_from_db()
    versions.append(leaderboard_data_version(task))
    assert len(set(versions)) == 3


@pytest.mark.django_db
def test_the_data_version_sees_every_model_and_score_of_the_task(task, django_assert_num_queries):
    """One query, whatever the number of models; the cube holds every dataset of the task
    (hidden ones for its owners), so a change on any of them is a new version."""
    board_with(task, 3)
    with django_assert_num_queries(1):
        version = leaderboard_data_version(task)
    Score.objects.filter(dataset__slug="secret").first().save()
    assert leaderboard_data_version(task) != version
    version = leaderboard_data_version(task)
    Score.objects.filter(dataset__slug="secret").first().delete()
    assert leaderboard_data_version(task) != version
    version = leaderboard_data_version(task)
    task.models.first().save()
    assert leaderboard_data_version(task) != version
    other = board_with(TaskFactory(), 2)
    version = leaderboard_data_version(task)
    Score.objects.filter(dataset__task=other).first().save()
    assert leaderboard_data_version(task) == version


def test_json_values_decodes_what_json_does_with_orjson_first():
    """The score columns are decoded in one call; what orjson refuses (NaN, integers
    beyond 64 bits) is still decoded as ``json`` does, and a text that is not JSON stays
    text, as ``JSONField`` leaves it."""

    assert json_texts_decode([]) == []
    assert json_texts_decode(['{"a": 1.5}', None, "[1, 2]", '"x"']) == [
        {"a": 1.5},
        None,
        [1, 2],
        "x",
    ]
    nan, big = json_texts_decode(['{"a": NaN}', str(2**70)])
    assert math.isnan(nan["a"]) and big == 2**70
    assert json_texts_decode(['{"a": 1}', "not json", '{"b": ']) == [{"a": 1}, "not json", '{"b": ']
