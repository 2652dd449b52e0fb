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
