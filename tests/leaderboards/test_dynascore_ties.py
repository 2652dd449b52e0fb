"""The Dynascore is a function of the models, not of their ids or names (issue 30, point 8).

Tied models are one level of the AMRS (``leaderboards.dynascore.tie_levels``), and two
consecutive levels exchange at the mean rate of their cross pairs: the order, ids and names
of tied models cannot move any score, and a model within ``epsilon`` of another moves each
rate only toward the rate it would give alone (docs/leaderboard.md).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from leaderboards import dynascore
from leaderboards.dynascore import (
    MetricInput,
    compute_dynascore_arrays,
    compute_dynascores,
    level_pair_rate,
    tie_levels,
)
from leaderboards.intervals import dynascore_resamples
from leaderboards.tables.build import (
    MAIN_METRIC_RESOLUTION,
    LeaderboardRequest,
    build_leaderboard_table,
)
from leaderboards.tables.query import default_weights
from leaderboards.tables.records import DatasetRecord, ModelRecord, ScoreRecord
from tasks.config.types import Direction, MetricSpec

ACC_ROB = [MetricInput("acc", weight=4), MetricInput("rob", weight=1)]
# The issue's minimal case: M and O tie at 37.5.
ISSUE_BOARD = {
    "W": {"acc": 27.5, "rob": 95.0},
    "M": {"acc": 37.5, "rob": 100.0},
    "O": {"acc": 37.5, "rob": 85.0},
    "S": {"acc": 40.0, "rob": 87.5},
}


def test_swapping_the_names_of_two_tied_models_swaps_nothing_but_the_names():
    first = compute_dynascores(ISSUE_BOARD, ACC_ROB, main_metric="acc")
    swapped = {**ISSUE_BOARD, "M": ISSUE_BOARD["O"], "O": ISSUE_BOARD["M"]}
    second = compute_dynascores(swapped, ACC_ROB, main_metric="acc")
    # The tied pair is one level: W to it (5 / 10 + 10 / 10) / 2 = 0.75, it to S
    # (12.5 / 2.5 + 2.5 / 2.5) / 2 = 3, so AMRS rob = (0.75 + 3) / 2 = 1.875.
    assert first.amrs["rob"] == second.amrs["rob"] == 1.875
    assert first.dynascores["M"] == second.dynascores["O"] == 0.8 * 37.5 + 0.2 * 100 / 1.875
    assert first.dynascores["O"] == second.dynascores["M"]
    assert first.dynascores["W"] == second.dynascores["W"]
    assert first.dynascores["S"] == second.dynascores["S"]
    # The tied model with robustness 100 is ahead of the other whatever it is called.
    assert [score.model for score in first.ranking] == ["S", "M", "O", "W"]
    assert [score.model for score in second.ranking] == ["S", "O", "M", "W"]


def test_a_level_keeps_its_models_and_two_levels_exchange_at_their_cross_pairs_mean():
    pairs = [(1.0, 10.0), (2.0, 4.0), (2.0, 8.0), (2.05, 0.0), (5.0, 3.0)]
    assert tie_levels(pairs, epsilon=0.1) == [[pairs[0]], pairs[1:4], [pairs[4]]]
    # Within epsilon is a chain: 2.0 -> 2.05 -> 2.12 is one level, though 2.0 and 2.12 are not.
    chained = [(2.0, 0.0), (2.05, 3.0), (2.12, 6.0)]
    assert len(tie_levels(chained, epsilon=0.1)) == 1
    assert tie_levels([(3.0, 1.0), (3.0, 1.0), (3.0, 1.0)], epsilon=0) == [[(3.0, 1.0)] * 3]
    # Every cross pair forms a ratio; the pairs inside a level form none.
    assert level_pair_rate([(1.0, 10.0)], pairs[1:4]) == pytest.approx((6 + 2 + 10 / 1.05) / 3)
    assert level_pair_rate(pairs[1:4], [(5.0, 3.0)]) == pytest.approx(
        (1 / 3 + 5 / 3 + 3 / 2.95) / 3
    )
    # Between two single models it is the paper's ratio; a level of copies is its model.
    assert level_pair_rate([(1.0, 10.0)], [(5.0, 3.0)]) == 7 / 4
    assert level_pair_rate([(1.0, 10.0)] * 3, [(5.0, 3.0)] * 2) == 7 / 4


def test_with_epsilon_zero_tied_models_are_pooled_instead_of_dividing_by_zero():
    board = {"a": {"acc": 50.0, "rob": 1.0}, "b": {"acc": 50.0, "rob": 3.0}}
    board["c"] = {"acc": 60.0, "rob": 7.0}
    result = compute_dynascores(board, ACC_ROB, main_metric="acc", epsilon=0)
    assert result.amrs["rob"] == 5.0 / 10.0
    fast = compute_dynascore_arrays(
        list(board),
        [[row["acc"], row["rob"]] for row in board.values()],
        ACC_ROB,
        main_metric="acc",
        epsilon=0,
    )
    assert fast.as_result() == result


def test_a_near_duplicate_on_the_leaderboard_joins_its_level_at_the_main_metrics_resolution():
    # A 70/90 and B 80/80; C is B again, 0.01 point higher. At the leaderboard's
    # resolution C joins B's level, and A and B keep their scores but for C's 0.01 point.
    two = {"A": {"acc": 70.0, "rob": 90.0}, "B": {"acc": 80.0, "rob": 80.0}}
    three = {**two, "C": {"acc": 80.01, "rob": 80.0}}
    before = compute_dynascores(two, ACC_ROB, main_metric="acc", epsilon=MAIN_METRIC_RESOLUTION)
    after = compute_dynascores(three, ACC_ROB, main_metric="acc", epsilon=MAIN_METRIC_RESOLUTION)
    assert before.dynascores == {"B": 80.0, "A": 74.0}
    assert after.amrs["rob"] == pytest.approx((10 / 10 + 10 / 10.01) / 2)
    assert after.dynascores["A"] == pytest.approx(74.0, abs=0.01)
    assert after.dynascores["B"] == pytest.approx(80.0, abs=0.01)


# -- properties ------------------------------------------------------------------------------

# Few distinct main values, so that ties and near-ties are the rule; the other metrics free.
main_values = st.sampled_from([10.0, 37.5, 37.5, 37.55, 40.0, 40.04, 62.5, 80.0, 80.01])
other_values = st.floats(min_value=0, max_value=100, allow_nan=False, allow_subnormal=False)
rows = st.lists(
    st.tuples(main_values, other_values, other_values, st.one_of(st.none(), other_values)),
    min_size=1,
    max_size=9,
)
EPSILONS = [0.0, 1e-4, MAIN_METRIC_RESOLUTION]
METRICS = [
    MetricInput("acc", weight=4),
    MetricInput("rob", weight=1),
    MetricInput("latency", "lower", weight=1, offset=100.0, resolution=5.0),
    MetricInput("spare", weight=0),  # weight 0: some models may lack it
]


def board_of(names, values):
    return {
        name: {"acc": acc, "rob": rob, "latency": latency, "spare": spare}
        for name, (acc, rob, latency, spare) in zip(names, values, strict=True)
    }


@settings(max_examples=300, deadline=None)
@given(rows, st.sampled_from(EPSILONS), st.randoms(use_true_random=False), st.data())
def test_ids_names_and_order_never_change_a_models_dynascore(values, epsilon, rng, data):
    count = len(values)
    names = data.draw(
        st.lists(
            st.text("abcdefghij", min_size=1, max_size=3),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    renamed = data.draw(
        st.lists(
            st.text("klmnopqrst", min_size=1, max_size=3),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    order = list(range(count))
    rng.shuffle(order)
    first = compute_dynascores(board_of(names, values), METRICS, main_metric="acc", epsilon=epsilon)
    second = compute_dynascores(
        board_of([renamed[i] for i in order], [values[i] for i in order]),
        METRICS,
        main_metric="acc",
        epsilon=epsilon,
    )
    assert first.amrs == second.amrs
    for index in range(count):
        # Bit for bit: the same floats for the same model, whatever it is called.
        assert first.dynascores[names[index]] == second.dynascores[renamed[index]]
    # The array path, in the shuffled order: the same floats again.
    table = np.array(
        [[v[0], v[1], v[2], np.nan if v[3] is None else v[3]] for v in values], dtype=float
    )
    fast = compute_dynascore_arrays(
        [renamed[i] for i in order], table[order], METRICS, main_metric="acc", epsilon=epsilon
    )
    assert dict(fast.amrs) == dict(first.amrs)
    for position, index in enumerate(order):
        score = first.dynascores[names[index]]
        got = fast.dynascores[position]
        assert (score is None and math.isnan(got)) or got == score


@settings(max_examples=200, deadline=None)
@given(rows, st.randoms(use_true_random=False))
def test_the_per_resample_dynascores_do_not_depend_on_the_order_of_tied_models(values, rng):
    count = len(values)
    names = [f"m{index}" for index in range(count)]
    table = np.array(
        [[v[0], v[1], v[2], np.nan if v[3] is None else v[3]] for v in values], dtype=float
    )
    noise = np.random.default_rng(count).normal(0.0, 1.0, (count, 50))
    resamples = table[:, :1] + noise
    order = list(range(count))
    rng.shuffle(order)
    kwargs = {"main_metric": "acc", "epsilon": MAIN_METRIC_RESOLUTION}
    first = dynascore_resamples(names, table, METRICS, main_resamples=resamples, **kwargs)
    second = dynascore_resamples(
        [f"x{index}" for index in order],
        table[order],
        METRICS,
        main_resamples=resamples[order],
        **kwargs,
    )
    np.testing.assert_array_equal(first[order], second)
    # With every resample at the point value, each row is the point Dynascore.
    point = compute_dynascore_arrays(names, table, METRICS, **kwargs)
    at_point = dynascore_resamples(
        names, table, METRICS, main_resamples=np.repeat(table[:, :1], 3, axis=1), **kwargs
    )
    np.testing.assert_array_equal(at_point, np.repeat(point.dynascores[:, None], 3, axis=1))


@settings(max_examples=200, deadline=None)
@given(rows, st.integers(min_value=0, max_value=8), st.sampled_from(EPSILONS))
def test_an_exact_copy_of_a_model_changes_no_other_models_score(values, target, epsilon):
    names = [f"m{index}" for index in range(len(values))]
    board = board_of(names, values)
    copied = board[names[target % len(values)]]
    before = compute_dynascores(board, METRICS, main_metric="acc", epsilon=epsilon)
    after = compute_dynascores(
        {**board, "copy": dict(copied)}, METRICS, main_metric="acc", epsilon=epsilon
    )
    level = [row for row in board.values() if abs(row["acc"] - copied["acc"]) < max(epsilon, 1)]
    if all(row == copied for row in level):
        # Its level's cross rates are unchanged, so every rate and every other score is.
        assert after.amrs == before.amrs
        for model, score in before.dynascores.items():
            assert after.dynascores[model] == score


def _same_level(board, row, host, epsilon):
    pairs = sorted(item["acc"] for item in board.values())
    low, high = sorted((row["acc"], host["acc"]))
    inside = [value for value in pairs if low <= value <= high]
    return all(b - a < epsilon for a, b in zip(inside, inside[1:], strict=False))


def test_the_leaderboard_gives_tied_models_their_values_scores_whatever_their_ids():
    specs = [
        MetricSpec("acc", "perf", Direction.HIGHER, 4.0, is_main=True),
        MetricSpec("robustness", "delta", Direction.HIGHER, 1.0),
    ]
    datasets = [DatasetRecord("only", "Only", "scoring", 1, 1.0)]

    def scores(names):
        # Each model keeps its name and values; ids follow the order of ``names``.
        models = [
            ModelRecord(index, name, "owner", False, True) for index, name in enumerate(names)
        ]
        records = [
            ScoreRecord(
                index,
                "only",
                {"acc": ISSUE_BOARD[name]["acc"], "robustness": ISSUE_BOARD[name]["rob"]},
                {},
                ISSUE_BOARD[name]["acc"],
                None,
                None,
                {},
            )
            for index, name in enumerate(names)
        ]
        table = build_leaderboard_table(
            LeaderboardRequest(
                task_code="t",
                metric_specs=specs,
                datasets=datasets,
                models=models,
                scores=records,
                weights=default_weights(specs, datasets),
            )
        )
        return {row.model_name: row.dynascore for row in table.rows}

    first = scores(["W", "M", "O", "S"])
    second = scores(["W", "O", "M", "S"])  # the tied pair's ids swapped
    assert first == second
    assert first["M"] == pytest.approx(0.8 * 37.5 + 0.2 * 100 / 1.875)


# -- a tied level keeps its spread (issue 30, point 8) ---------------------------------------

ISSUE_NEAR = {"A": {"acc": 70.0, "rob": 90.0}, "B": {"acc": 80.0, "rob": 80.0}}


def test_a_model_within_resolution_of_another_keeps_the_order_of_the_others():
    epsilon = MAIN_METRIC_RESOLUTION
    before = compute_dynascores(ISSUE_NEAR, ACC_ROB, main_metric="acc", epsilon=epsilon)
    board = {**ISSUE_NEAR, "C": {"acc": 80.01, "rob": 95.0}}
    after = compute_dynascores(board, ACC_ROB, main_metric="acc", epsilon=epsilon)
    assert before.dynascores == {"B": 80.0, "A": 74.0}
    # B and C are one level; A's rate to it is the mean of its rates to B and to C.
    assert after.amrs["rob"] == pytest.approx((10 / 10 + 5 / 10.01) / 2)
    assert after.dynascores["B"] == pytest.approx(85.34, abs=0.01)
    assert after.dynascores["A"] == pytest.approx(80.01, abs=0.01)
    assert after.dynascores["C"] == pytest.approx(89.35, abs=0.01)
    assert [score.model for score in after.ranking] == ["C", "B", "A"]


@pytest.mark.parametrize(("board", "copied"), [(ISSUE_NEAR, "A"), (ISSUE_NEAR, "B")])
def test_an_exact_copy_in_the_issues_case_changes_nothing(board, copied):
    before = compute_dynascores(board, ACC_ROB, main_metric="acc", epsilon=MAIN_METRIC_RESOLUTION)
    after = compute_dynascores(
        {**board, "copy": dict(board[copied])},
        ACC_ROB,
        main_metric="acc",
        epsilon=MAIN_METRIC_RESOLUTION,
    )
    assert after.amrs == before.amrs
    assert {model: after.dynascores[model] for model in board} == before.dynascores
    assert after.dynascores["copy"] == before.dynascores[copied]


def _level_of(board, host, epsilon):
    """The names of the models on ``host``'s level (a chain of steps below ``epsilon``)."""
    return [name for name, row in board.items() if _same_level(board, row, board[host], epsilon)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([10.0, 20.0, 30.0, 30.05, 40.0, 50.0, 50.0, 60.0]),
            other_values,
            other_values,
        ),
        min_size=2,
        max_size=8,
    ),
    st.integers(min_value=0, max_value=7),
    st.floats(min_value=-0.0999, max_value=0.0999),
    other_values,
    other_values,
)
def test_a_model_joining_a_tie_moves_each_rate_only_toward_the_rate_it_gives_alone(
    values, target, offset, rob, latency
):
    """Joining a level of k models moves AMRS 1 / (k + 1) of the way to its own rate.

    The rate with the newcomer alone in the level's place bounds the move: the AMRS lies
    between the board's and that one (exactly at k / (k + 1) and 1 / (k + 1)), and so does
    every metric's part of every other model's score. Averaging the level's values first
    (pooling) fails this: A 70/90, B 80/80 and C 80.01/95 gave a rate of 0.25, below both 1
    (without C) and 0.4995 (C in B's place).
    """
    epsilon = MAIN_METRIC_RESOLUTION
    board = {f"m{i}": {"acc": a, "rob": r, "latency": lat} for i, (a, r, lat) in enumerate(values)}
    host = f"m{target % len(values)}"
    newcomer = {"acc": board[host]["acc"] + offset, "rob": rob, "latency": latency}
    level = _level_of(board, host, epsilon)
    # It joins the host's level without bridging to another one.
    assume(
        all(
            abs(row["acc"] - newcomer["acc"]) >= epsilon or name in level
            for name, row in board.items()
        )
    )
    metrics = METRICS[:3]
    kwargs = {"main_metric": "acc", "epsilon": epsilon}
    before = compute_dynascores(board, metrics, **kwargs)
    after = compute_dynascores({**board, "new": newcomer}, metrics, **kwargs)
    alone_board = {name: row for name, row in board.items() if name not in level}
    alone = compute_dynascores({**alone_board, "new": newcomer}, metrics, **kwargs)
    size = len(level)
    for name in ("rob", "latency"):
        low, high = sorted((before.amrs[name], alone.amrs[name]))
        expected = (size * before.amrs[name] + alone.amrs[name]) / (size + 1)
        assert after.amrs[name] == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert low * (1 - 1e-9) <= after.amrs[name] <= high * (1 + 1e-9)
    for model in alone_board:
        parts = next(score for score in after.ranking if score.model == model).contributions
        parts_before = next(s for s in before.ranking if s.model == model).contributions
        parts_alone = next(s for s in alone.ranking if s.model == model).contributions
        for name, part in parts.items():
            if not (before.amrs[name] and alone.amrs[name]):
                continue  # a rate of 0 counts nothing: no part to compare with
            ends = [parts_before.get(name, 0.0), parts_alone.get(name, 0.0)]
            assert min(ends) - 1e-9 * abs(part) - 1e-12 <= part
            assert part <= max(ends) + 1e-9 * abs(part) + 1e-12


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=5), other_values, other_values),
        min_size=2,
        max_size=40,
    ),
    st.sampled_from([1, 3, 1 << 17]),
)
def test_the_array_path_gives_the_references_rates_on_levels_of_every_size(values, block):
    # Main values on a 0.5-point grid, some nudged within epsilon: levels of 1 to 40 models.
    board = {
        f"m{i}": {"acc": 40 + 0.5 * step + (0.05 if i % 3 == 0 else 0.0), "rob": r, "latency": lat}
        for i, (step, r, lat) in enumerate(values)
    }
    metrics = METRICS[:3]
    kwargs = {"main_metric": "acc", "epsilon": MAIN_METRIC_RESOLUTION}
    reference = compute_dynascores(board, metrics, **kwargs)
    table = np.array([[row["acc"], row["rob"], row["latency"]] for row in board.values()])
    with pytest.MonkeyPatch.context() as patch:
        # Small blocks of cross ratios take the same path as a large board's.
        patch.setattr(dynascore, "CROSS_RATIO_BLOCK", block)
        fast = compute_dynascore_arrays(list(board), table, metrics, **kwargs)
    assert dict(fast.amrs) == dict(reference.amrs)
    assert fast.as_result() == reference
