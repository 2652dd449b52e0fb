"""The Dynascore is a function of the models, not of their ids or names (issue 30, point 8).

Tied models are one level of the AMRS (``leaderboards.dynascore.pooled_levels``): their
order, ids and names cannot move any score, and a model within ``epsilon`` of another
moves the rates of exchange by at most the bound documented in docs/leaderboard.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from leaderboards.dynascore import (
    MetricInput,
    compute_dynascore_arrays,
    compute_dynascores,
    pooled_levels,
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
    # The tied pair is one level (37.5, rob 92.5): (2.5 / 10 + 5 / 2.5) / 2 = 1.125.
    assert first.amrs["rob"] == second.amrs["rob"] == 1.125
    assert first.dynascores["M"] == second.dynascores["O"] == 0.8 * 37.5 + 0.2 * 100 / 1.125
    assert first.dynascores["O"] == second.dynascores["M"]
    assert first.dynascores["W"] == second.dynascores["W"]
    assert first.dynascores["S"] == second.dynascores["S"]
    # The model with robustness 100 wins whatever it is called.
    assert first.ranking[0].model == "M" and second.ranking[0].model == "O"


def test_a_level_is_its_models_means_and_a_lone_model_is_itself():
    pairs = [(1.0, 10.0), (2.0, 4.0), (2.0, 8.0), (2.05, 0.0), (5.0, 3.0)]
    assert pooled_levels(pairs, epsilon=0.1) == [
        (1.0, 10.0),
        (pytest.approx(6.05 / 3), 4.0),
        (5.0, 3.0),
    ]
    # Within epsilon is a chain: 2.0 -> 2.05 -> 2.12 is one level, though 2.0 and 2.12 are not.
    chained = [(2.0, 0.0), (2.05, 3.0), (2.12, 6.0)]
    assert len(pooled_levels(chained, epsilon=0.1)) == 1
    assert pooled_levels([(3.0, 1.0), (3.0, 1.0), (3.0, 1.0)], epsilon=0) == [(3.0, 1.0)]


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


def test_a_near_duplicate_on_the_leaderboard_is_pooled_at_the_main_metrics_resolution():
    # A 70/90 and B 80/80; C is B again, 0.01 point higher. At the leaderboard's
    # resolution C joins B's level, and A and B keep their scores but for C's 0.005 point.
    two = {"A": {"acc": 70.0, "rob": 90.0}, "B": {"acc": 80.0, "rob": 80.0}}
    three = {**two, "C": {"acc": 80.01, "rob": 80.0}}
    before = compute_dynascores(two, ACC_ROB, main_metric="acc", epsilon=MAIN_METRIC_RESOLUTION)
    after = compute_dynascores(three, ACC_ROB, main_metric="acc", epsilon=MAIN_METRIC_RESOLUTION)
    assert before.dynascores == {"B": 80.0, "A": 74.0}
    assert after.amrs["rob"] == pytest.approx(10 / 10.005)
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


def amrs_bound(board, newcomer, epsilon):
    """The documented bound on how far each rate can move when ``newcomer`` joins a level.

    For the level L of k models that the newcomer joins (within epsilon of one of them,
    not of another level), with a = |x_new - mean_L x| / (k + 1) and
    b = |perf_new - mean_L perf| / (k + 1), each of L's (at most two) level pairs of rate
    r moves by at most (a + r * b) / epsilon, and the AMRS, their mean over the P pairs,
    by the sum of those over P.
    """
    bounds = {}
    for name in ("rob", "latency"):
        metric = next(item for item in METRICS if item.name == name)
        pairs = sorted((row["acc"], _converted(metric, row[name])) for row in board.values())
        levels = pooled_levels(pairs, epsilon=epsilon)
        position = next(
            index
            for index, (perf, _) in enumerate(levels)
            if _level_members(pairs, levels, index, newcomer["acc"], epsilon)
        )
        members = _level_members(pairs, levels, position, newcomer["acc"], epsilon)
        size = len(members)
        a = abs(_converted(metric, newcomer[name]) - levels[position][1]) / (size + 1)
        b = abs(newcomer["acc"] - levels[position][0]) / (size + 1)
        total = 0.0
        for other in (position - 1, position + 1):
            if 0 <= other < len(levels):
                (p1, x1), (p2, x2) = levels[position], levels[other]
                total += (a + abs(x2 - x1) / abs(p2 - p1) * b) / epsilon
        bounds[name] = total / max(len(levels) - 1, 1)
    return bounds


def _converted(metric, value):
    if metric.resolution:
        value = round(value / metric.resolution) * metric.resolution
    return value if metric.direction == "higher" else metric.offset - value


def _level_members(pairs, levels, index, perf, epsilon):
    """The pairs of level ``index`` when ``perf`` is within epsilon of one of them."""
    groups, current = [], [pairs[0]]
    for previous, pair in zip(pairs, pairs[1:], strict=False):
        step = pair[0] - previous[0]
        if step < epsilon or step == 0:
            current.append(pair)
        else:
            groups.append(current)
            current = [pair]
    groups.append(current)
    assert len(groups) == len(levels)
    members = groups[index]
    return members if any(abs(perf - p) < epsilon for p, _ in members) else []


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=100, allow_nan=False, allow_subnormal=False),
            other_values,
            other_values,
        ),
        min_size=2,
        max_size=8,
    ),
    st.integers(min_value=0, max_value=7),
    st.floats(min_value=-0.0999, max_value=0.0999),
    st.one_of(st.none(), st.tuples(other_values, other_values)),
)
def test_a_model_within_resolution_of_another_moves_the_rates_within_the_bound(
    values, target, offset, others
):
    epsilon = MAIN_METRIC_RESOLUTION
    board = {f"m{i}": {"acc": a, "rob": r, "latency": lat} for i, (a, r, lat) in enumerate(values)}
    host = board[f"m{target % len(values)}"]
    # A near-duplicate of ``host`` (its other values, or new ones), within epsilon of it.
    rob, latency = (host["rob"], host["latency"]) if others is None else others
    newcomer = {"acc": host["acc"] + offset, "rob": rob, "latency": latency}
    # It joins the host's level without bridging to another one.
    assume(
        all(
            abs(row["acc"] - newcomer["acc"]) >= epsilon or _same_level(board, row, host, epsilon)
            for row in board.values()
        )
    )
    metrics = METRICS[:3]
    before = compute_dynascores(board, metrics, main_metric="acc", epsilon=epsilon)
    after = compute_dynascores(
        {**board, "new": newcomer}, metrics, main_metric="acc", epsilon=epsilon
    )
    bounds = amrs_bound(board, newcomer, epsilon)
    for name, bound in bounds.items():
        assert abs(after.amrs[name] - before.amrs[name]) <= bound * (1 + 1e-9) + 1e-9


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
        # Its level's means are unchanged, so every rate and every other score is.
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
    assert first["M"] == pytest.approx(0.8 * 37.5 + 0.2 * 100 / 1.125)
