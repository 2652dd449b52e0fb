"""Fleiss' kappa and Krippendorff's alpha against textbook examples (pure, no DB)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from annotation.agreement import category_counts, fleiss_kappa, krippendorff_alpha

# Fleiss (1971), table 1 as reproduced in most references: 10 subjects, 14 raters each,
# 5 categories. The published result is kappa = 0.210.
FLEISS_1971 = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_1971_example_by_hand():
    raters, subjects = 14, 10
    # P_i = (sum_j n_ij^2 - n) / (n (n - 1)), exactly, by hand.
    p_i = [Fraction(sum(c * c for c in row) - raters, raters * (raters - 1)) for row in FLEISS_1971]
    assert p_i[0] == 1
    assert p_i[1] == Fraction(60 - 14, 182)  # 0.253
    p_bar = sum(p_i) / subjects
    assert round(float(p_bar), 3) == 0.378
    p_j = [Fraction(sum(col), raters * subjects) for col in zip(*FLEISS_1971, strict=True)]
    assert [round(float(p), 3) for p in p_j] == [0.143, 0.2, 0.279, 0.15, 0.229]
    p_e = sum(p * p for p in p_j)
    assert round(float(p_e), 3) == 0.213
    expected = (p_bar - p_e) / (1 - p_e)
    assert fleiss_kappa(FLEISS_1971) == pytest.approx(float(expected), abs=1e-12)
    assert fleiss_kappa(FLEISS_1971) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_perfect_agreement_and_undefined_cases():
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == pytest.approx(1.0)
    # Everyone always says the same category: expected agreement is 1, kappa undefined.
    assert fleiss_kappa([[3, 0], [3, 0]]) is None
    assert fleiss_kappa([]) is None
    assert fleiss_kappa([[1, 0], [0, 1]]) is None  # no subject with two ratings


def test_fleiss_worst_case_two_raters_always_disagree():
    # Two raters, two categories, always disagreeing and balanced: P = 0, Pe = 1/2, kappa = -1.
    assert fleiss_kappa([[1, 1], [1, 1]]) == pytest.approx(-1.0)


def test_fleiss_variable_raters_skips_single_ratings():
    # A subject with one rating is ignored, whatever its category.
    with_single = fleiss_kappa([[2, 0], [0, 2], [1, 1], [0, 1]])
    without = fleiss_kappa([[2, 0], [0, 2], [1, 1]])
    assert with_single == pytest.approx(without)
    # By hand: P = (1 + 1 + 0) / 3 = 2/3; p = (3/6, 3/6), Pe = 1/2; kappa = (2/3 - 1/2) / (1/2).
    assert without == pytest.approx(1 / 3)


def test_category_counts():
    units = [["correct", "correct", "incorrect"], ["flagged", "other"]]
    assert category_counts(units, ["correct", "incorrect", "flagged"]) == [[2, 1, 0], [0, 0, 1]]


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four
# observers, twelve units, missing values; nominal alpha = 0.743.
KRIPPENDORFF_2011_UNITS = [
    [1, 1, 1],
    [2, 2, 3, 2],
    [3, 3, 3, 3],
    [3, 3, 3, 3],
    [2, 2, 2, 2],
    [1, 2, 3, 4],
    [4, 4, 4, 4],
    [1, 1, 2, 1],
    [2, 2, 2, 2],
    [5, 5, 5],
    [1, 1],
    [3],
]


def test_krippendorff_2011_nominal_example():
    assert krippendorff_alpha(KRIPPENDORFF_2011_UNITS) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_2011_example_by_hand():
    # Coincidence totals by hand: n = 40 pairable values; n_c = (9, 13, 10, 5, 3).
    # Ordered disagreeing pairs / (m_u - 1): unit 2 -> 6/3 = 2; unit 6 -> 12/3 = 4;
    # unit 8 -> 6/3 = 2; so the sum over c != k of o_ck is 8.
    n_c = {1: Fraction(9), 2: Fraction(13), 3: Fraction(10), 4: Fraction(5), 5: Fraction(3)}
    n = sum(n_c.values())
    assert n == 40
    disagreeing = Fraction(2 * 3, 3) + Fraction(12, 3) + Fraction(2 * 3, 3)
    expected_pairs = n * n - sum(v * v for v in n_c.values())
    alpha = 1 - (n - 1) * disagreeing / expected_pairs
    assert krippendorff_alpha(KRIPPENDORFF_2011_UNITS) == pytest.approx(float(alpha), abs=1e-12)


def test_krippendorff_binary_two_coders():
    # Krippendorff (2011), section A: two observers, ten units, binary data; alpha = 0.095.
    coder_a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    coder_b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    units = [list(pair) for pair in zip(coder_a, coder_b, strict=True)]
    assert krippendorff_alpha(units) == pytest.approx(0.095, abs=5e-4)


def test_krippendorff_undefined_and_perfect():
    assert krippendorff_alpha([]) is None
    assert krippendorff_alpha([["a"], ["b"]]) is None
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None  # no variation
    assert krippendorff_alpha([["a", "a"], ["b", "b", "b"]]) == pytest.approx(1.0)


def test_fleiss_and_krippendorff_agree_in_the_large_sample_limit():
    # With complete data both coefficients converge; with many units they are close.
    units = [["x", "x", "y"]] * 50 + [["y", "y", "y"]] * 50 + [["x", "x", "x"]] * 50
    kappa = fleiss_kappa(category_counts(units, ["x", "y"]))
    alpha = krippendorff_alpha(units)
    assert abs(kappa - alpha) < 0.01
