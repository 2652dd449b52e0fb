"""The score cube (pure): built from records, encoded and decoded, cut into viewers' boards."""

from __future__ import annotations

import numpy as np
import pytest

from leaderboards.cubes import (
    CUBE_FORMAT,
    CubeFormatError,
    CubeModel,
    ScoreCube,
    cube_board,
    cube_build,
    cube_decode,
    cube_encode,
)
from leaderboards.tables.records import ScoreColumns
from tests.leaderboards.boardkit import assert_same_cube


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
        covered=[40, 30, None, 50, 50],
        totals=[40, 50, 40, 50, 50],
    )
    return cube_build(models, scores, ["acc"], "acc")


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
    # Coverage: -1 where it is not known or there is no score.
    assert cube.covered.tolist() == [[40, 30], [-1, -1], [-1, 50]]
    assert cube.totals.tolist() == [[40, 50], [40, 0], [0, 50]]
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
        lambda payload: payload.replace(b'"format":%d' % CUBE_FORMAT, b'"format":0'),
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
    assert [public.coverage(0, position) for position in range(3)] == [
        (30, 50),
        (None, None),
        (40, 40),
    ]
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
