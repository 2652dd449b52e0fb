"""Bootstrap intervals and per-tag scores."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from tasks.metrics import (
    DEFAULT_RESAMPLES,
    MetricInputError,
    TagScore,
    bootstrap_ci,
    get_metric,
    metric_bootstrap_ci,
    metric_per_tag,
    metric_resamples,
    percentile_interval,
    resample_indices,
    resampled_statistics,
)


def test_bootstrap_is_deterministic_and_brackets_the_mean():
    rng = random.Random(1)
    scores = [100.0 * (rng.random() < 0.7) for _ in range(500)]
    first = bootstrap_ci(scores, seed=3)
    assert first == bootstrap_ci(scores, seed=3)
    assert first != bootstrap_ci(scores, seed=4)
    low, high = first
    assert low < np.mean(scores) < high
    assert 0.0 <= low < high <= 100.0


def test_bootstrap_width_shrinks_with_confidence():
    scores = np.linspace(0, 100, 200)
    low_90, high_90 = bootstrap_ci(scores, confidence=0.90)
    low_99, high_99 = bootstrap_ci(scores, confidence=0.99)
    assert low_99 <= low_90 and high_90 <= high_99


def test_bootstrap_custom_aggregate_uses_the_same_draws():
    scores = np.arange(50, dtype=float)
    assert bootstrap_ci(scores, aggregate=lambda row: float(np.mean(row))) == pytest.approx(
        bootstrap_ci(scores)
    )
    low, high = bootstrap_ci(scores, aggregate=np.median)
    assert low <= 24.5 <= high


def test_bootstrap_degenerate_inputs():
    assert bootstrap_ci([42.0]) == (42.0, 42.0)
    assert bootstrap_ci([5.0] * 10) == (5.0, 5.0)
    with pytest.raises(MetricInputError):
        bootstrap_ci([])
    with pytest.raises(MetricInputError):
        bootstrap_ci([1.0], confidence=1.0)
    with pytest.raises(MetricInputError):
        bootstrap_ci([1.0], n_resamples=0)


def test_metric_bootstrap_of_a_mean_metric_equals_bootstrap_of_example_scores():
    predictions = ["a", "b", "a", None, "c"] * 20
    golds = ["a", "a", "a", "b", "c"] * 20
    metric = get_metric("accuracy")
    expected = bootstrap_ci(metric.per_example_scores(predictions, golds), seed=9)
    assert metric_bootstrap_ci(metric, predictions, golds, seed=9) == pytest.approx(expected)


def test_corpus_metric_bootstrap_is_deterministic_and_fast():
    rng = random.Random(5)
    words = ["a", "b", "c", "d", "e", "f", "g", "h"]
    hypotheses = [" ".join(rng.choices(words, k=10)) for _ in range(2000)]
    references = [" ".join(rng.choices(words, k=10)) for _ in range(2000)]
    started = time.perf_counter()
    low, high = metric_bootstrap_ci("bleu", hypotheses, references, seed=1)
    assert time.perf_counter() - started < 10
    assert (low, high) == metric_bootstrap_ci("bleu", hypotheses, references, seed=1)
    score = get_metric("bleu").score(hypotheses, references)
    assert low <= score <= high


def test_corpus_metric_bootstrap_recomputes_macro_f1():
    predictions = ["a", "b", "c", "a", "b"] * 30
    golds = ["a", "b", "b", "a", "c"] * 30
    low, high = metric_bootstrap_ci("macro_f1", predictions, golds, n_resamples=10_000)
    assert low <= get_metric("macro_f1").score(predictions, golds) <= high
    assert DEFAULT_RESAMPLES >= 1000


def test_metric_per_tag_groups_examples():
    predictions = ["a", "b", "a", "a"]
    golds = ["a", "a", "a", "b"]
    tags = [["easy"], ["hard", "easy"], "hard", None]
    result = metric_per_tag("accuracy", predictions, golds, tags)
    assert list(result) == ["easy", "hard"]
    assert result["easy"] == TagScore(score=50.0, count=2)
    assert result["hard"] == TagScore(score=50.0, count=2)


def test_metric_per_tag_recomputes_corpus_metrics_per_group():
    predictions = ["x", "y", "x", "y"]
    golds = ["x", "x", "y", "y"]
    result = metric_per_tag("macro_f1", predictions, golds, [["t"], ["t"], ["u"], ["u"]])
    assert result["t"].score == pytest.approx(get_metric("macro_f1").score(["x", "y"], ["x", "x"]))


def test_metric_per_tag_length_mismatch():
    with pytest.raises(MetricInputError):
        metric_per_tag("accuracy", ["a"], ["a"], [])


def _loop_reference(metric_name, predictions, golds, n_resamples, seed):
    """Score each resample on its own: the slow reference of the vectorised path."""
    metric = get_metric(metric_name)
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, len(golds), size=(n_resamples, len(golds)), dtype=np.int64)
    return np.array(
        [
            metric.score([predictions[i] for i in row], [golds[i] for i in row])
            for row in indices.tolist()
        ]
    )


@pytest.mark.parametrize(
    ("metric_name", "predictions", "golds"),
    [
        ("accuracy", ["a", "b", "a", None, "c"] * 8, ["a", "a", "a", "b", "c"] * 8),
        ("macro_f1", ["a", "b", "c", "a", "b", "d"] * 7, ["a", "b", "b", "a", "c", "c"] * 7),
        ("micro_f1", ["a", "b", "c", "a", None] * 8, ["a", "b", "b", "a", "c"] * 8),
        (
            "squad_f1",
            ["the cat sat", "a dog", "blue", None, "red car"] * 8,
            [["cat sat"], "dog runs", ["green", "blue"], "x", "red"] * 8,
        ),
        ("exact_match", ["cat", "Dog.", "blue", None] * 10, ["cat", "dog", "green", "x"] * 10),
    ],
)
def test_vectorised_resamples_equal_a_loop_over_the_same_resamples(metric_name, predictions, golds):
    seed = (0, 7)
    values = metric_resamples(metric_name, predictions, golds, seed=seed)
    assert values.shape == (DEFAULT_RESAMPLES,)
    reference = _loop_reference(metric_name, predictions, golds, DEFAULT_RESAMPLES, seed)
    np.testing.assert_allclose(values, reference, rtol=1e-12, atol=1e-9)
    assert metric_bootstrap_ci(metric_name, predictions, golds, seed=seed) == pytest.approx(
        percentile_interval(reference)
    )


def test_vectorised_bleu_resamples_equal_a_loop_over_the_same_resamples():
    rng = random.Random(2)
    words = ["a", "b", "c", "d", "e"]
    hypotheses = [" ".join(rng.choices(words, k=6)) for _ in range(12)]
    references = [" ".join(rng.choices(words, k=6)) for _ in range(12)]
    values = metric_resamples("bleu", hypotheses, references, n_resamples=1000, seed=3)
    reference = _loop_reference("bleu", hypotheses, references, 1000, 3)
    np.testing.assert_allclose(values, reference, rtol=1e-9, atol=1e-9)


def test_every_metric_resamples_a_thousand_times_by_default_and_deterministically():
    predictions = ["a", "b", "c", "a", "b"] * 30
    golds = ["a", "b", "b", "a", "c"] * 30
    for name in ("accuracy", "macro_f1", "micro_f1"):
        first = metric_resamples(name, predictions, golds, seed=5)
        assert first.shape == (1000,)
        np.testing.assert_array_equal(first, metric_resamples(name, predictions, golds, seed=5))
        assert not np.array_equal(first, metric_resamples(name, predictions, golds, seed=6))


def test_the_index_matrix_does_not_depend_on_the_batch_size():
    whole = np.concatenate(list(resample_indices(37, 1000, (0, 4))))
    batched = np.concatenate(list(resample_indices(37, 1000, (0, 4), max_indices=100)))
    assert whole.shape == (1000, 37)
    np.testing.assert_array_equal(whole, batched)


def test_resampled_statistics_of_pair_codes_equal_those_of_the_examples():
    # Three distinct (prediction, gold) pairs standing for 50 examples.
    pair_statistics = np.array([[100.0, 1.0], [0.0, 1.0], [50.0, 1.0]])
    codes = np.array([0, 1, 2, 0, 0] * 10, dtype=np.int32)
    by_pairs = resampled_statistics(pair_statistics, codes=codes, seed=8)
    by_examples = resampled_statistics(pair_statistics[codes], seed=8)
    np.testing.assert_allclose(by_pairs, by_examples)
