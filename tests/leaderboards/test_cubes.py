"""The score cube: the leaderboard data of a task stored as arrays, rebuilt when it changes."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.http import QueryDict
from django.urls import reverse

from leaderboards.cubes import (
    CubeFormatError,
    CubeModel,
    ScoreCube,
    cube_board,
    cube_build,
    cube_decode,
    cube_encode,
)
from leaderboards.models import BoardCube, Score
from leaderboards.selectors import (
    _data_version,
    leaderboard_datasets,
    score_cube,
)
from leaderboards.tables import (
    DatasetRecord,
    ModelRecord,
    ScoreColumns,
    ScoreRecord,
    build_leaderboard_table,
    parse_leaderboard_query,
)
from models_hub.models import Model
from tasks.permissions import can_manage_task
from tests.factories import DatasetFactory, UserFactory
from tests.leaderboards.test_selectors import MAIN, make_models, table_for

QUERIES = (
    "",
    f"w_{MAIN}=1&w_latency_p95_ms=3&sort=name",
    "d_alpha=0&sort=-examples_per_second&page_size=3&page=2",
    "sort=dataset:beta",
)


def small_cube() -> ScoreCube:
    """Three models (one unpublished, one anonymous) on datasets 7 and 9."""
    models = [
        CubeModel(3, "three", 30, "carol", False, True),
        CubeModel(1, "one", 10, "alice", True, True),
        CubeModel(2, "two", 20, "bob", False, False),
    ]
    scores = ScoreColumns(
        model_ids=[1, 1, 2, 3, 99],
        dataset_slugs=["7", "9", "7", "9", "7"],
        metrics=[{"acc": 0.5}, {"acc": 0.6}, {"acc": 0.7}, {"acc": float("inf")}, {"acc": 1.0}],
        per_tag=[{}, {}, {}, {}, {}],
        main_values=[0.5, 0.6, 0.7, None, 1.0],
        ci_lows=[0.4, 0.5, 0.6, None, 0.9],
        ci_highs=[0.6, 0.7, 0.8, None, 1.0],
        columns={},
        main_per_tag=[{"neg": 0.1}, {"neg": 0.2, "pos": 0.3}, {}, {"pos": "bad"}, {"neg": 1.0}],
    )
    return cube_build(models, scores, ["acc"], "acc")


def assert_same_cube(first: ScoreCube, second: ScoreCube) -> None:
    for name, value in vars(first).items():
        other = getattr(second, name)
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and value.shape == other.shape, name
            assert np.array_equal(value, other, equal_nan=value.dtype.kind == "f"), name
        else:
            assert value == other, name


def test_a_cube_holds_every_model_sorted_and_the_scores_of_known_models():
    cube = small_cube()
    assert cube.keys == ["000000000001", "000000000002", "000000000003"]
    assert cube.names == ["one", "two", "three"] and cube.dataset_ids == [7, 9]
    assert cube.published.tolist() == [True, False, True]
    assert cube.anonymous.tolist() == [True, False, False]
    # Model 99 is not a model of the task; an infinite value is no value.
    assert np.array_equal(cube.main, [[0.5, 0.6], [0.7, np.nan], [np.nan, np.nan]], equal_nan=True)
    assert cube.present.tolist() == [[True, True], [True, False], [False, True]]
    assert cube.tag_names == ["neg", "pos"]
    assert (
        np.array_equal(cube.tag_values[0], [[0.1, np.nan], [0.2, 0.3]], equal_nan=True)
        and np.isnan(cube.tag_values[1:]).all()
    )


def test_encode_then_decode_gives_the_same_cube():
    cube = small_cube()
    payload = cube_encode(cube)
    assert_same_cube(cube_decode(payload), cube)
    assert_same_cube(cube_decode(memoryview(payload)), cube)
    empty = cube_build([], ScoreColumns([], [], [], [], [], [], [], {}), ["acc"], "acc")
    assert_same_cube(cube_decode(cube_encode(empty)), empty)


@pytest.mark.parametrize(
    "damage",
    [
        lambda payload: payload[:-1],
        lambda payload: payload + b"\0",
        lambda payload: payload[:3],
        lambda payload: b"\xff\xff\x00\x00" + payload[4:],
        lambda payload: payload.replace(b'"format":1', b'"format":0'),
        lambda payload: b"not a cube at all",
        lambda payload: b"",
    ],
)
def test_a_damaged_or_foreign_cube_is_refused_with_its_own_error(damage):
    with pytest.raises(CubeFormatError):
        cube_decode(damage(cube_encode(small_cube())))


def test_cube_board_gives_each_viewer_their_models_and_datasets_in_order():
    cube = small_cube()
    public = cube_board(
        cube, datasets=[(9, "nine"), (5, "new"), (7, "seven")], manages=False, user_id=None
    )
    assert public.keys == ["000000000001", "000000000003"]
    assert [model.show_identity for model in public.models] == [False, True]
    assert public.slugs == ["nine", "new", "seven"]
    # Dataset 5 has no scores yet: all missing.
    assert np.array_equal(
        public.main, [[0.6, np.nan, 0.5], [np.nan, np.nan, np.nan]], equal_nan=True
    )
    assert public.present.tolist() == [[True, False, True], [True, False, False]]
    # The owner of the unpublished model 2 sees it; the owner of anonymous model 1 its name.
    assert cube_board(cube, datasets=[], manages=False, user_id=20).keys == [
        "000000000001",
        "000000000002",
        "000000000003",
    ]
    mine = cube_board(cube, datasets=[(7, "seven")], manages=False, user_id=10)
    assert mine.models[0].show_identity and mine.models[0].name == "one"
    owners = cube_board(cube, datasets=[(7, "seven")], manages=True, user_id=None)
    assert len(owners.models) == 3 and all(model.show_identity for model in owners.models)
    # The board's arrays are copies: a caller may change them.
    owners.values[:] = 0
    assert cube.values[0, 0, 0] == 0.5


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
        for model in Model.objects.filter(task=task).select_related("owner")
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
        )
        for score in Score.objects.filter(dataset_id__in=list(slugs))
    ]
    return build_leaderboard_table(
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
    assert stored.version == _data_version(task)

    score = Score.objects.get(model=first)
    score.metrics = {**score.metrics, MAIN: 77.0}
    score.save()
    assert table_for(task).rows[0].metrics[MAIN] == 77.0
    assert BoardCube.objects.get(task=task).version == _data_version(task) != stored.version

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
    versions = [_data_version(task)]
    # The scores refer to the current version: a new version is made.
    task_update_config(task, task.current_config.yaml_text + "\n# edited\n", user=owner)
    task.refresh_from_db()
    versions.append(_data_version(task))
    # Nothing refers to the new version yet: edited in place (same id), other metrics.
    yaml_text = task.current_config.yaml_text.replace("macro_f1", "accuracy")
    assert yaml_text != task.current_config.yaml_text
    task_update_config(task, yaml_text, user=owner)
    task.refresh_from_db()
    versions.append(_data_version(task))
    assert len(set(versions)) == 3


@pytest.mark.django_db
def test_cubes_are_stored_uncompressed_on_postgresql():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL column setting")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = %s::regclass AND attname = %s",
            [BoardCube._meta.db_table, "payload"],
        )
        assert cursor.fetchone() == ("e",)
