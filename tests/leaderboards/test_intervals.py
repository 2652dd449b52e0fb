"""The leaderboard's bootstrap intervals and rank confidence (pure: no database)."""

from __future__ import annotations

import numpy as np
import pytest

from leaderboards.dynascore import MetricInput, compute_dynascore_arrays, compute_dynascores
from leaderboards.intervals import (
    TIE_BELOW,
    PairConfidence,
    aggregate_resamples,
    ahead_share,
    dynascore_resamples,
    interval_bounds,
    neighbour_confidence,
    pair_confidence_both,
    shifted_bounds,
    shifted_dynascores,
)
from leaderboards.scoring import (
    BOOTSTRAP_RESAMPLES,
    PairColumn,
    bootstrap_interval,
    bootstrap_resamples,
    bootstrap_seed,
    pair_statistics,
    resamples_decode,
    resamples_encode,
)
from tasks.metrics import get_metric, metric_bootstrap_ci, metric_resamples, resample_indices


def _accuracy_resamples(correct, dataset_id):
    """Return the accuracy of ``correct`` (booleans) on the dataset's seeded resamples."""
    golds = ["yes"] * len(correct)
    predictions = ["yes" if right else "no" for right in correct]
    return metric_resamples(
        "accuracy",
        predictions,
        golds,
        n_resamples=BOOTSTRAP_RESAMPLES,
        seed=bootstrap_seed(dataset_id),
    )


def test_the_leaderboard_resamples_a_thousand_times_with_a_fixed_seed():
    assert BOOTSTRAP_RESAMPLES >= 1000
    assert bootstrap_seed(7) == bootstrap_seed(7) != bootstrap_seed(8)


def test_scores_of_distinct_pairs_equal_the_metric_on_the_whole_lists():
    predictions = ["a", "b", "c", "a", None, "b"] * 9
    golds = ["a", "b", "b", "a", "c", "c"] * 9
    column = PairColumn()
    for prediction, gold in zip(predictions, golds, strict=True):
        column.add(prediction, gold)
    for name in ("macro_f1", "accuracy"):
        metric = get_metric(name)
        statistics = pair_statistics(metric, column, {})
        values = bootstrap_resamples(
            metric, column.code_array(), statistics, {}, seed=bootstrap_seed(3)
        )
        expected = metric_resamples(metric, predictions, golds, seed=bootstrap_seed(3))
        np.testing.assert_allclose(values, expected, rtol=1e-12)
        assert bootstrap_interval(values) == pytest.approx(
            metric_bootstrap_ci(metric, predictions, golds, seed=bootstrap_seed(3))
        )
        # Deterministic: the same resamples on every call.
        again = bootstrap_resamples(
            metric, column.code_array(), statistics, {}, seed=bootstrap_seed(3)
        )
        np.testing.assert_array_equal(values, again)


def test_stored_resamples_round_trip_as_float32_and_refuse_other_lengths():
    values = np.linspace(40.0, 60.0, BOOTSTRAP_RESAMPLES)
    decoded = resamples_decode(resamples_encode(values))
    np.testing.assert_allclose(decoded, values, rtol=1e-6)
    assert resamples_decode(None) is None
    assert resamples_decode(resamples_encode(values[:10])) is None


def test_with_one_dataset_the_aggregate_interval_is_that_datasets_interval():
    rng = np.random.default_rng(1)
    values = _accuracy_resamples(rng.random(80) < 0.6, dataset_id=5)
    aggregate = aggregate_resamples(values[None, None, :], [2.5])
    lows, highs = interval_bounds(aggregate)
    low, high = bootstrap_interval(values)
    assert (lows[0], highs[0]) == pytest.approx((low, high))


def test_the_aggregate_interval_is_the_interval_of_the_weighted_aggregate():
    # Two datasets with known per-example scores, weights 1 and 3.
    first = np.array([100.0] * 30 + [0.0] * 20)
    second = np.array([100.0] * 10 + [0.0] * 70)
    ids, weights = (11, 12), (1.0, 3.0)
    per_dataset = np.stack(
        [
            _accuracy_resamples(scores > 0, dataset_id)
            for scores, dataset_id in zip((first, second), ids, strict=True)
        ]
    )
    lows, highs = interval_bounds(aggregate_resamples(per_dataset[None], weights))

    # The reference: resample b of each dataset, weighted per resample, then percentiles.
    first_rows = np.concatenate(list(resample_indices(first.size, 1000, bootstrap_seed(ids[0]))))
    second_rows = np.concatenate(list(resample_indices(second.size, 1000, bootstrap_seed(ids[1]))))
    reference = [
        (weights[0] * first[a].mean() + weights[1] * second[b].mean()) / sum(weights)
        for a, b in zip(first_rows, second_rows, strict=True)
    ]
    low, high = np.percentile(reference, [2.5, 97.5])
    assert (lows[0], highs[0]) == pytest.approx((low, high))
    # Not the average of the two datasets' own bounds.
    averaged_low = (
        weights[0] * bootstrap_interval(per_dataset[0])[0]
        + weights[1] * bootstrap_interval(per_dataset[1])[0]
    ) / sum(weights)
    assert lows[0] != pytest.approx(averaged_low, abs=1e-3)


def test_a_model_missing_resamples_on_a_dataset_has_no_aggregate_interval():
    resamples = np.full((2, 2, BOOTSTRAP_RESAMPLES), 50.0)
    resamples[1, 1] = np.nan
    lows, highs = interval_bounds(aggregate_resamples(resamples, [1.0, 1.0]))
    assert (lows[0], highs[0]) == (50.0, 50.0)
    assert np.isnan(lows[1]) and np.isnan(highs[1])


def test_a_model_right_everywhere_is_ahead_of_one_wrong_everywhere_in_every_resample():
    always = _accuracy_resamples([True] * 40, dataset_id=1)
    never = _accuracy_resamples([False] * 40, dataset_id=1)
    share = ahead_share(always, never)
    assert share == 1.0
    assert PairConfidence(share).is_tie is False


def test_two_identical_models_are_ahead_in_half_the_resamples_and_tied():
    rng = np.random.default_rng(4)
    correct = rng.random(60) < 0.5
    first = _accuracy_resamples(correct, dataset_id=2)
    second = _accuracy_resamples(correct, dataset_id=2)
    share = ahead_share(first, second)
    assert share == 0.5
    assert PairConfidence(share).is_tie is True


def test_a_clearly_ordered_pair_with_a_small_gap_is_a_statistical_tie():
    # The upper model is right wherever the lower one is, and on two more of 200 examples:
    # never behind, but level whenever a resample misses both of those examples.
    upper = _accuracy_resamples([True] * 102 + [False] * 98, dataset_id=3)
    lower = _accuracy_resamples([True] * 100 + [False] * 100, dataset_id=3)
    assert (upper >= lower).all()
    share = ahead_share(upper, lower)
    assert 0.5 < share < TIE_BELOW
    assert PairConfidence(share).is_tie is True
    # A wide gap is no tie.
    far = _accuracy_resamples([True] * 150 + [False] * 50, dataset_id=3)
    assert PairConfidence(ahead_share(far, lower)).is_tie is False


def test_neighbour_confidence_follows_the_ranking_and_knows_no_share_without_resamples():
    resamples = np.stack(
        [
            np.full(BOOTSTRAP_RESAMPLES, 70.0),
            np.full(BOOTSTRAP_RESAMPLES, 90.0),
            np.full(BOOTSTRAP_RESAMPLES, np.nan),
        ]
    )
    confidence = neighbour_confidence([1, 0, 2], resamples)
    assert confidence == {1: PairConfidence(1.0), 0: PairConfidence(None)}
    assert confidence[0].is_tie is None


def test_the_dynascore_per_resample_moves_only_the_main_metrics_part():
    rng = np.random.default_rng(9)
    models = [f"m{index}" for index in range(5)]
    metrics = [
        MetricInput("acc", weight=4.0),
        MetricInput("throughput", weight=1.0),
        MetricInput("latency", direction="lower", weight=1.0, offset=200.0),
    ]
    values = np.column_stack(
        [rng.uniform(50, 90, 5), rng.uniform(5, 50, 5), rng.uniform(50, 200, 5)]
    )
    main_resamples = values[:, :1] + rng.normal(0, 2, (5, BOOTSTRAP_RESAMPLES))
    scores = dynascore_resamples(
        models, values, metrics, main_metric="acc", main_resamples=main_resamples
    )
    assert scores.shape == (5, BOOTSTRAP_RESAMPLES)
    point = compute_dynascores(
        {
            model: {"acc": row[0], "throughput": row[1], "latency": row[2]}
            for model, row in zip(models, values.tolist(), strict=True)
        },
        metrics,
        main_metric="acc",
    )
    parts = {score.model: score.contributions for score in point.ranking}
    for index, model in enumerate(models):
        others = sum(value for name, value in parts[model].items() if name != "acc")
        np.testing.assert_allclose(
            scores[index], others + 4.0 / 6.0 * main_resamples[index], rtol=1e-12
        )
    # With the point values in every resample, every resample gives the point Dynascore.
    steady = dynascore_resamples(
        models,
        values,
        metrics,
        main_metric="acc",
        main_resamples=np.repeat(values[:, :1], 3, axis=1),
    )
    np.testing.assert_allclose(
        steady, np.repeat([[point.dynascores[model]] for model in models], 3, axis=1)
    )


def test_a_model_without_resamples_keeps_its_value_in_every_dynascore_and_gets_no_interval():
    metrics = [MetricInput("acc", weight=1.0), MetricInput("speed", weight=1.0)]
    values = np.array([[80.0, 10.0], [70.0, 30.0], [60.0, 20.0]])
    main_resamples = np.stack(
        [
            np.full(BOOTSTRAP_RESAMPLES, 80.0),
            np.full(BOOTSTRAP_RESAMPLES, np.nan),
            np.full(BOOTSTRAP_RESAMPLES, 60.0),
        ]
    )
    scores = dynascore_resamples(
        ["a", "b", "c"], values, metrics, main_metric="acc", main_resamples=main_resamples
    )
    point = compute_dynascores(
        {
            name: {"acc": row[0], "speed": row[1]}
            for name, row in zip("abc", values.tolist(), strict=True)
        },
        metrics,
        main_metric="acc",
    ).dynascores
    assert np.isnan(scores[1]).all()
    np.testing.assert_allclose(scores[0], point["a"], rtol=1e-12)
    np.testing.assert_allclose(scores[2], point["c"], rtol=1e-12)
    lows, highs = interval_bounds(scores)
    assert np.isnan(lows[1])
    assert lows[0] == pytest.approx(point["a"], rel=1e-12) == highs[0]


@pytest.mark.parametrize("direction", ["higher", "lower"])
def test_the_dynascore_bounds_are_the_percentiles_of_its_resamples(direction):
    rng = np.random.default_rng(4)
    models = [f"m{index}" for index in range(6)]
    metrics = [
        MetricInput(
            "err" if direction == "lower" else "acc",
            direction=direction,
            weight=3.0,
            offset=100.0 if direction == "lower" else 0.0,
        ),
        MetricInput("speed", weight=1.0),
    ]
    main = metrics[0].name
    values = np.column_stack([rng.uniform(20, 80, 6), rng.uniform(5, 50, 6)])
    values[2, 1] = np.nan  # incomplete: no interval
    main_resamples = values[:, :1] + rng.normal(0, 3, (6, BOOTSTRAP_RESAMPLES))
    point = compute_dynascore_arrays(models, values, metrics, main_metric=main)
    lows, highs = interval_bounds(main_resamples)
    expected = interval_bounds(shifted_dynascores(point, metrics[0], main_resamples))
    got = shifted_bounds(point, metrics[0], lows, highs)
    for one, other in zip(got, expected, strict=True):
        np.testing.assert_allclose(one, other, rtol=1e-12, equal_nan=True)
    assert np.isnan(got[0][2]) and np.isfinite(np.delete(got[0], 2)).all()
    assert (got[0] <= got[1])[np.isfinite(got[0])].all()


@pytest.mark.parametrize(
    ("direction", "resolution"), [("higher", 0.0), ("lower", 0.0), ("higher", 0.5)]
)
def test_both_confidences_at_once_equal_each_computed_from_its_resamples(direction, resolution):
    rng = np.random.default_rng(11)
    models = [f"m{index}" for index in range(8)]
    main = MetricInput(
        "score",
        direction=direction,
        weight=2.0,
        offset=100.0 if direction == "lower" else 0.0,
        resolution=resolution,
    )
    metrics = [main, MetricInput("speed", weight=1.0)]
    values = np.column_stack([rng.uniform(40, 60, 8), rng.uniform(5, 50, 8)])
    main_resamples = values[:, :1] + rng.normal(0, 4, (8, 200))
    main_resamples[5] = np.nan  # no resamples: its pairs have no share
    main_resamples[:, :3] = np.round(main_resamples[:, :3])  # some equal values: draws
    point = compute_dynascore_arrays(models, values, metrics, main_metric="score")
    order = point.order[: point.complete_count].tolist()
    pairs = list(zip(order, order[1:], strict=False))
    both = pair_confidence_both(pairs, main_resamples, point, main)
    on_main = neighbour_confidence(order, main_resamples)
    on_dynascore = neighbour_confidence(order, shifted_dynascores(point, main, main_resamples))
    assert set(both) == set(on_main) == set(order[:-1])
    for index, (first, second) in both.items():
        assert first.share == on_main[index].share
        if on_dynascore[index].share is None:
            assert second.share is None
        else:
            assert second.share == pytest.approx(on_dynascore[index].share, abs=0.011)
    assert any(pair.share is None for pair, _ in both.values())


@pytest.mark.parametrize(
    ("share", "tie", "next_ahead"),
    [
        (1.0, False, False),
        (0.95, False, False),  # the upper model is ahead in 95%: no tie
        (0.949, True, False),
        (0.5, True, False),
        (0.051, True, False),
        (0.05, False, True),  # the lower model is ahead in 95%
        (0.04, False, True),
        (0.0, False, True),
        (None, None, None),
    ],
)
def test_a_tie_is_two_sided_and_a_lower_model_ahead_is_said(share, tie, next_ahead):
    confidence = PairConfidence(share)
    assert confidence.is_tie is tie
    assert confidence.next_ahead is next_ahead
