"""The board from counted battles: the pure module's ratings, ranks, ties and matrices."""

from __future__ import annotations

import numpy as np

from annotation.arena import ratings
from annotation.arena.board import (
    CountedBattle,
    board_dict_without,
    board_view,
    build_board,
    share_above,
)


def battles_from(strengths: dict[int, float], count: int, seed: int = 1) -> list[CountedBattle]:
    rng = np.random.default_rng(seed)
    ids = sorted(strengths)
    result = []
    for _ in range(count):
        a, b = rng.choice(ids, size=2, replace=False)
        p = 1.0 / (1.0 + 10 ** ((strengths[b] - strengths[a]) / 400))
        draw = rng.random()
        vote = "tie" if draw < 0.1 else ("a" if draw < 0.1 + 0.9 * p else "b")
        result.append(CountedBattle(int(a), int(b), f"m{a}", f"m{b}", vote, 10, 12))
    return result


def test_the_board_ranks_by_the_pure_ratings_with_intervals_and_matrices():
    strengths = {7: 1200.0, 3: 1000.0, 11: 900.0}
    battles = battles_from(strengths, 600)
    board = build_board(battles, resamples=200)
    ids = [3, 7, 11]
    index = {model: i for i, model in enumerate(ids)}
    pairs = ratings.pair_counts(
        [index[b.model_a] for b in battles],
        [index[b.model_b] for b in battles],
        [board_outcome(b.vote) for b in battles],
        3,
    )
    expected = ratings.to_ratings(ratings.fit_strengths(pairs))
    assert [row.name for row in board.rows] == ["m7", "m3", "m11"]
    for row in board.rows:
        assert abs(row.rating - expected[index[row.model_id]]) < 1e-6
        assert row.low <= row.rating <= row.high
        assert row.battles == sum(1 for b in battles if row.model_id in (b.model_a, b.model_b))
    assert board.rows[-1].ahead is None and board.rows[0].ahead > 0.95
    assert not board.rows[0].tie_with_next
    assert board.battle_matrix[0][0] == 0 and board.battle_matrix[0][1] == board.battle_matrix[1][0]
    assert board.win_matrix[0][1] + board.win_matrix[1][0] == 1.0
    assert board.battles == 600 and set(board.pair_ahead) == {(3, 7), (3, 11), (7, 11)}


def board_outcome(vote: str) -> int:
    return {"a": ratings.A_WINS, "b": ratings.B_WINS}.get(vote, ratings.TIE)


def test_permuting_battles_or_renaming_ids_never_changes_a_rating():
    battles = battles_from({1: 1100.0, 2: 1000.0, 5: 950.0, 9: 1020.0}, 400)
    board = build_board(battles, resamples=50)
    shuffled = list(reversed(battles))
    renamed = [
        CountedBattle(b.model_a * 100, b.model_b * 100, b.name_a, b.name_b, b.vote) for b in battles
    ]
    for other in (build_board(shuffled, resamples=50), build_board(renamed, resamples=50)):
        assert {row.name: round(row.rating, 9) for row in other.rows} == {
            row.name: round(row.rating, 9) for row in board.rows
        }


def test_close_models_are_a_statistical_tie_and_both_bad_counts_as_a_tie():
    battles = [CountedBattle(1, 2, "x", "y", vote) for vote in ["a", "b"] * 10 + ["both_bad"]]
    board = build_board(battles, resamples=100)
    assert board.rows[0].tie_with_next
    assert abs(board.rows[0].rating - 1000.0) < 1e-6


def test_style_control_adds_a_length_controlled_rating():
    battles = [CountedBattle(1, 2, "long", "short", "a", 900, 100) for _ in range(30)] + [
        CountedBattle(1, 2, "long", "short", "b", 100, 900) for _ in range(20)
    ]
    plain = build_board(battles, resamples=20)
    styled = build_board(battles, resamples=20, style_control=True)
    assert all(row.style_rating is None for row in plain.rows)
    assert styled.length_coefficient > 0
    assert all(row.style_rating is not None for row in styled.rows)
    assert styled.as_dict()["rows"][0]["style_controlled_rating"] is not None


def test_fewer_than_two_models_make_an_empty_board():
    assert build_board([]).rows == []
    assert build_board([]).as_dict()["rows"] == []


def test_a_viewer_who_may_not_see_a_model_gets_the_board_without_it():
    """The hidden model's row, matrix line and column go; the ratings stay those fitted on
    every battle; ranks are renumbered and "ahead of the next" is taken against the next row
    shown, as the bootstrap would give it on that order."""
    strengths = {1: 1300.0, 2: 1100.0, 3: 1090.0, 4: 800.0}
    board = build_board(battles_from(strengths, 800, seed=4), resamples=300)
    order = [row.model_id for row in board.rows]
    hidden = order[1]
    shown = board_view(board, frozenset({hidden, 99}))
    assert [row.model_id for row in shown.rows] == [pk for pk in order if pk != hidden]
    assert [row.rank for row in shown.rows] == [1, 2, 3]
    whole = {row.model_id: row for row in board.rows}
    for row in shown.rows:
        assert row.rating == whole[row.model_id].rating and row.elo == whole[row.model_id].elo
    kept = [order.index(row.model_id) for row in shown.rows]
    assert shown.battle_matrix == [[board.battle_matrix[i][j] for j in kept] for i in kept]
    assert shown.win_matrix == [[board.win_matrix[i][j] for j in kept] for i in kept]
    first, second = shown.rows[0].model_id, shown.rows[1].model_id
    expected = share_above(board.pair_ahead, first, second)
    assert shown.rows[0].ahead == expected and 0.5 < expected <= 1.0
    assert shown.rows[0].tie_with_next == ratings.is_tie(expected)
    assert shown.rows[1].ahead == whole[second].ahead and shown.rows[-1].ahead is None
    assert all(hidden not in pair for pair in shown.pair_ahead)
    assert board_view(board, frozenset({99})) is board
    as_json = board_dict_without(board.as_dict(), {hidden})
    assert as_json["models"] == [row.name for row in shown.rows]
    assert as_json["battle_matrix"] == shown.battle_matrix
    assert as_json["rows"][0]["ahead_of_next"] is None  # its next row is gone
