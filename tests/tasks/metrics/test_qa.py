"""SQuAD F1 / exact match and VQA accuracy on hand-checked examples."""

from __future__ import annotations

import pytest

from tasks.metrics import get_metric, string_f1, vqa_example_accuracy
from tasks.metrics.text import normalize_squad_answer, normalize_vqa_answer, squad_token_f1


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("The Cat", "cat"),
        ("  An   apple.  ", "apple"),
        ("U.S.A.", "usa"),
        ("don't", "dont"),
        ("theatre", "theatre"),  # articles are whole words only
        ("a, the and an", "and"),
    ],
)
def test_squad_normalisation(text, normalised):
    assert normalize_squad_answer(text) == normalised


def test_squad_exact_match_after_normalisation():
    metric = get_metric("exact_match")
    assert metric.score(["The Cat"], ["cat"]) == 100.0
    assert metric.score(["cats"], ["cat"]) == 0.0
    assert metric.score(["Denver Broncos"], [["Broncos", "the Denver Broncos!"]]) == 100.0


@pytest.mark.parametrize(
    ("prediction", "gold", "f1"),
    [
        ("the big black cat", "a black cat sat", 2 / 3),  # P = R = 2/3
        ("Barack Obama", "Obama", 2 / 3),  # P = 1/2, R = 1
        ("cat cat", "cat", 2 / 3),  # bag of tokens: P = 1/2, R = 1
        ("dog", "cat", 0.0),
        ("The Cat", "cat", 1.0),
        ("the", "a", 1.0),  # live decision: both normalise to nothing, the same answer
        ("the", "cat", 0.0),
    ],
)
def test_string_f1_known_values(prediction, gold, f1):
    assert string_f1(prediction, gold) == pytest.approx(f1)


@pytest.mark.parametrize(
    ("prediction", "gold", "f1", "exact"),
    [
        # The official SQuAD v1.1 script: F1 is 0 when no token is shared, so whenever a
        # side normalises to nothing, even when both do; exact match compares the strings.
        ("the", "a", 0.0, 1.0),
        ("", "", 0.0, 1.0),
        (".", "An!", 0.0, 1.0),
        ("", "cat", 0.0, 0.0),
        ("cat", "the", 0.0, 0.0),
        ("A cat.", "the cat", 1.0, 1.0),
    ],
)
def test_squad_metrics_on_answers_that_normalise_to_nothing_follow_v1_1(
    prediction, gold, f1, exact
):
    assert squad_token_f1(prediction, gold) == f1
    assert get_metric("squad_f1").score([prediction], [gold]) == 100 * f1
    assert get_metric("squad_f1").per_example_scores([prediction], [gold]) == [100 * f1]
    assert get_metric("exact_match").score([prediction], [gold]) == 100 * exact


def test_squad_f1_of_an_empty_answer_is_0_against_every_gold():
    # The best over the golds: an answer of no token shares none with any of them.
    assert get_metric("squad_f1").score(["The"], [["a", "the cat", ""]]) == 0.0
    assert get_metric("exact_match").score(["The"], [["a", "the cat", ""]]) == 100.0


def test_squad_f1_takes_best_gold_and_averages():
    metric = get_metric("squad_f1")
    score = metric.score(["Barack Obama", "dog"], [["Obama", "Barack Obama"], "cat"])
    assert score == pytest.approx(50.0)
    assert metric.per_example_scores(["Barack Obama"], ["Obama"]) == [pytest.approx(200 / 3)]


def test_none_prediction_scores_zero():
    assert string_f1(None, "cat") == 0.0
    assert get_metric("squad_f1").score([None], ["cat"]) == 0.0
    assert get_metric("exact_match").score([None], [""]) == 0.0


@pytest.mark.parametrize(
    ("matches", "accuracy"),
    # k of 10 answers match: (k * min(1, (k-1)/3) + (10-k) * min(1, k/3)) / 10.
    [(0, 0.0), (1, 0.3), (2, 0.6), (3, 0.9), (4, 1.0), (10, 1.0)],
)
def test_vqa_leave_one_out_formula(matches, accuracy):
    gold = ["yes"] * matches + ["no"] * (10 - matches)
    assert vqa_example_accuracy("yes", gold) == pytest.approx(accuracy)


def test_vqa_metric_is_percent_average():
    golds = [["2"] * 2 + ["3"] * 8, ["red"] * 10]
    assert get_metric("vqa_accuracy").score(["two", "Red."], golds) == pytest.approx(80.0)


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("Two", "2"),
        ("the dog.", "dog"),
        ("dont", "don't"),
        ("3.5", "3.5"),
        ("1,000", "1000"),
        ("yes!", "yes"),
        ("t-shirt", "t shirt"),
        ("12:30", "12:30"),
        ("A   Man", "man"),
    ],
)
def test_vqa_normalisation(text, normalised):
    assert normalize_vqa_answer(text) == normalised


def test_vqa_single_gold_string_is_one_answer():
    assert vqa_example_accuracy("yes", "yes") == 1.0
    # Never split into the characters "y", "e", "s".
    assert vqa_example_accuracy("y", "yes") == 0.0


def test_vqa_few_answers_use_reachable_divisor():
    # Three answers: full credit needs the two other annotators.
    assert vqa_example_accuracy("a", ["a", "b", "c"]) == pytest.approx(1 / 3)
    assert vqa_example_accuracy("a", ["a", "a", "a"]) == 1.0


def test_vqa_none_prediction_and_empty_gold():
    assert vqa_example_accuracy(None, ["yes"] * 10) == 0.0
    assert vqa_example_accuracy("yes", []) == 0.0
