"""Accuracy and F1 against scikit-learn, acceptable answers, None predictions, edge cases."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from tasks.metrics import MetricInputError, get_metric

LABELS = ["entailed", "neutral", "contradictory", "other"]

label_pairs = st.integers(min_value=1, max_value=60).flatmap(
    lambda size: st.tuples(
        st.lists(st.sampled_from(LABELS), min_size=size, max_size=size),
        st.lists(st.sampled_from(LABELS), min_size=size, max_size=size),
    )
)


@settings(max_examples=150, deadline=None)
@given(label_pairs)
def test_accuracy_matches_sklearn(pair):
    golds, predictions = pair
    assert get_metric("accuracy").score(predictions, golds) == pytest.approx(
        100 * accuracy_score(golds, predictions), abs=1e-9
    )


@settings(max_examples=150, deadline=None)
@given(label_pairs)
def test_f1_matches_sklearn(pair):
    golds, predictions = pair
    for average in ("macro", "micro"):
        expected = 100 * f1_score(golds, predictions, average=average, zero_division=0)
        assert get_metric(f"{average}_f1").score(predictions, golds) == pytest.approx(
            expected, abs=1e-9
        )


def test_micro_f1_counts_a_failed_prediction_as_a_wrong_label():
    rng = random.Random(7)
    golds = [rng.choice(LABELS[:3]) for _ in range(300)]
    predictions = [rng.choice([*LABELS[:3], None]) for _ in range(300)]
    # A failed prediction is a false negative of its gold and a false positive of a label
    # that is no class: scikit-learn with that label among the labels, and no F1 of its own.
    sentinel = "<no prediction>"
    as_labels = [sentinel if p is None else p for p in predictions]
    labels = sorted(set(golds) | {p for p in predictions if p is not None}) + [sentinel]
    expected = 100 * f1_score(golds, as_labels, labels=labels, average="micro", zero_division=0)
    assert get_metric("micro_f1").score(predictions, golds) == pytest.approx(expected)


def test_macro_f1_counts_a_failed_prediction_as_the_worst_wrong_answers():
    rng = random.Random(7)
    golds = [rng.choice(LABELS[:3]) for _ in range(60)]
    predictions = [rng.choice([*LABELS[:3], None, None]) if i % 3 else golds[i] for i in range(60)]
    missing = [gold for gold, p in zip(golds, predictions, strict=True) if p is None]
    seen = set(golds) | {p for p in predictions if p is not None}
    total = 0.0
    for label in seen:
        tp = sum(g == p == label for g, p in zip(golds, predictions, strict=True))
        fp = sum(p == label != g for g, p in zip(golds, predictions, strict=True))
        fn = sum(g == label != p for g, p in zip(golds, predictions, strict=True))
        # every missing answer whose gold is another label is a false positive of this one
        fp += sum(gold != label for gold in missing)
        total += 2 * tp / (2 * tp + fp + fn)
    expected = 100 * total / (len(seen) + len(missing))  # one phantom label per missing answer
    assert get_metric("macro_f1").score(predictions, golds) == pytest.approx(expected)


def test_leaving_out_the_wrong_answers_does_not_raise_macro_f1():
    # Issue 30's repro: the full file scores 66.67, its six right answers alone scored 80.0.
    golds = ["a", "a", "a", "b", "b", "b", "c", "c", "c"]
    full = ["a", "a", "b", "b", "b", "c", "c", "c", "a"]
    right_only = [p if p == g else None for p, g in zip(full, golds, strict=True)]
    metric = get_metric("macro_f1")
    assert metric.score(full, golds) == pytest.approx(200 / 3)
    assert metric.score(right_only, golds) < metric.score(full, golds)
    assert get_metric("micro_f1").score(right_only, golds) == pytest.approx(
        get_metric("micro_f1").score(full, golds)
    )


def test_f1_uses_first_answer_of_a_gold_list():
    metric = get_metric("macro_f1")
    assert metric.score(["a", "b"], [["a", "b"], ["b", "a"]]) == 100.0
    assert metric.score(["b", "a"], [["a", "b"], ["b", "a"]]) == 0.0


def test_f1_on_integer_and_boolean_labels():
    assert get_metric("micro_f1").score([1, 0, 1], [1, 1, 1]) == pytest.approx(
        100 * f1_score([1, 1, 1], [1, 0, 1], average="micro")
    )


def test_accuracy_accepts_any_of_a_list_of_answers():
    metric = get_metric("accuracy")
    assert metric.score(["Paris", "Lyon"], [["paris", "Paris"], ["Nice", "Lille"]]) == 50.0


def test_accuracy_gold_string_is_one_answer():
    # "abc" is not a list of the acceptable answers "a", "b" and "c".
    assert get_metric("accuracy").score(["a"], ["abc"]) == 0.0


def test_none_prediction_is_wrong():
    metric = get_metric("accuracy")
    assert metric.score([None, "a"], ["a", "a"]) == 50.0
    assert metric.score([None], [None]) == 0.0


def test_multilabel_prediction_compares_label_sets():
    metric = get_metric("accuracy")
    assert metric.score([["b", "a"]], [["a", "b"]]) == 100.0
    assert metric.score([["a"]], [["a", "b"]]) == 0.0
    # A list of acceptable label sets.
    assert metric.score([["c"]], [[["a", "b"], ["c"]]]) == 100.0


def test_selection_values_compare_by_text():
    assert get_metric("accuracy").score([{"text": "cat", "start": 4}], ["cat"]) == 100.0


@pytest.mark.parametrize("name", ["accuracy", "macro_f1", "micro_f1"])
def test_empty_inputs_raise(name):
    with pytest.raises(MetricInputError) as raised:
        get_metric(name).score([], [])
    assert raised.value.code == "metrics.E002"


def test_length_mismatch_raises():
    with pytest.raises(MetricInputError) as raised:
        get_metric("accuracy").score(["a"], ["a", "b"])
    assert raised.value.code == "metrics.E004"


def test_per_example_scores():
    metric = get_metric("macro_f1")
    assert metric.per_example_scores(["a", None, "c"], ["a", "b", "b"]) == [100.0, 0.0, 0.0]
    assert not metric.is_decomposable
    assert get_metric("accuracy").is_decomposable
