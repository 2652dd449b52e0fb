"""Arena ratings against a reference written from the published method (no DB)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from annotation.arena.ratings import (
    A_WINS,
    ANCHOR,
    B_WINS,
    SCALE,
    TIE,
    ahead_shares,
    arena_ratings,
    battle_matrices,
    fit_strengths,
    identified_models,
    is_tie,
    online_elo,
    pair_counts,
    style_controlled_strengths,
    to_ratings,
)


def draw_battles(strengths, battles, seed, tie_rate=0.1):
    """Battles between random pairs, won with the Bradley-Terry probability; some ties."""
    rng = np.random.default_rng(seed)
    count = len(strengths)
    a = rng.integers(0, count, battles)
    b = (a + rng.integers(1, count, battles)) % count
    p_a = 1.0 / (1.0 + 10.0 ** (np.asarray(strengths)[b] - np.asarray(strengths)[a]))
    wins = rng.random(battles) < p_a
    outcome = np.where(wins, A_WINS, B_WINS)
    outcome[rng.random(battles) < tie_rate] = TIE
    return a, b, outcome


def reference_ratings(a, b, outcome, count):
    """Maximum likelihood of P(A beats B) = 1 / (1 + 10^(s_B - s_A)), battle by battle.

    A tie is half a win to each side. The last model's strength is held at 0 (the likelihood
    only sees differences), then the strengths are centred and put on the 400/1000 scale.
    """
    score = np.where(outcome == A_WINS, 1.0, np.where(outcome == B_WINS, 0.0, 0.5))
    design = np.zeros((len(a), count))
    design[np.arange(len(a)), a] += np.log(10.0)
    design[np.arange(len(a)), b] -= np.log(10.0)
    design = design[:, :-1]

    def loss(theta):
        z = design @ theta
        return np.sum(np.logaddexp(0.0, z) - score * z)

    def gradient(theta):
        p = 1.0 / (1.0 + np.exp(-(design @ theta)))
        return design.T @ (p - score)

    def hessian(theta):
        p = 1.0 / (1.0 + np.exp(-(design @ theta)))
        return (design * (p * (1 - p))[:, None]).T @ design

    fitted = minimize(
        loss,
        np.zeros(count - 1),
        jac=gradient,
        hess=hessian,
        method="trust-exact",
        options={"gtol": 1e-11},
    )
    strengths = np.append(fitted.x, 0.0)
    return SCALE * (strengths - strengths.mean()) + ANCHOR


def test_ratings_equal_the_reference_on_battles_drawn_from_known_strengths():
    truth = np.array([0.6, 0.3, 0.0, -0.1, -0.5, 0.25])
    a, b, outcome = draw_battles(truth, 3000, seed=1)
    ours = to_ratings(fit_strengths(pair_counts(a, b, outcome, len(truth))))
    reference = reference_ratings(a, b, outcome, len(truth))
    assert np.max(np.abs(ours - reference)) < 1e-6
    assert np.isclose(ours.mean(), ANCHOR)


def test_a_resample_of_counts_equals_the_fit_on_the_resampled_battles():
    truth = np.array([0.2, 0.0, -0.3, 0.1])
    a, b, outcome = draw_battles(truth, 800, seed=2)
    picks = np.random.default_rng(3).integers(0, len(a), len(a))
    direct = reference_ratings(a[picks], b[picks], outcome[picks], 4)
    pairs = pair_counts(a, b, outcome, 4)
    resampled = pair_counts(a[picks], b[picks], outcome[picks], 4)
    # The same pairs appear in both: the resample's counts fitted in a batch of one.
    assert np.array_equal(pairs.first, resampled.first)
    batch = fit_strengths(pairs, resampled.counts[None])
    assert np.max(np.abs(to_ratings(batch[0]) - direct)) < 1e-6


def test_permuting_battles_sides_ids_or_names_never_changes_a_rating():
    truth = np.array([0.4, 0.1, -0.2, 0.0, -0.3])
    a, b, outcome = draw_battles(truth, 1500, seed=4)
    base = arena_ratings(pair_counts(a, b, outcome, 5), resamples=50, seed=7)
    order = np.random.default_rng(5).permutation(len(a))
    shuffled_pairs = pair_counts(a[order], b[order], outcome[order], 5)
    shuffled = arena_ratings(shuffled_pairs, resamples=50, seed=7)
    assert np.allclose(base.ratings, shuffled.ratings, atol=1e-9)
    assert np.allclose(base.lows, shuffled.lows, atol=1e-9)
    flipped_outcome = np.where(outcome == TIE, TIE, 1 - outcome)
    flipped = fit_strengths(pair_counts(b, a, flipped_outcome, 5))
    assert np.allclose(to_ratings(flipped), base.ratings, atol=1e-9)
    relabel = np.array([3, 0, 4, 1, 2])  # model i becomes model relabel[i]
    renamed = to_ratings(fit_strengths(pair_counts(relabel[a], relabel[b], outcome, 5)))
    assert np.allclose(renamed[relabel], base.ratings, atol=1e-9)


def test_the_95_percent_intervals_cover_the_true_strengths_about_95_percent_of_the_time():
    truth = np.array([0.35, 0.2, 0.05, 0.0, -0.15, -0.45])
    centred = SCALE * (truth - truth.mean()) + ANCHOR
    covered = []
    for simulation in range(250):
        # No ties here: a tie drawn at random, whatever the strengths, pulls every
        # strength towards 0 (it is half a win to each side), so the truth would move.
        a, b, outcome = draw_battles(truth, 4000, seed=100 + simulation, tie_rate=0.0)
        pairs = pair_counts(a, b, outcome, len(truth))
        result = arena_ratings(pairs, resamples=300, seed=simulation)
        covered.extend((result.lows <= centred) & (centred <= result.highs))
    coverage = float(np.mean(covered))
    assert 0.93 <= coverage <= 0.97, coverage


def test_a_model_that_never_lost_is_not_identified_but_stays_finite():
    a = np.array([0, 0, 1, 1, 2])
    b = np.array([1, 2, 2, 2, 1])
    outcome = np.array([A_WINS, A_WINS, A_WINS, B_WINS, A_WINS])
    pairs = pair_counts(a, b, outcome, 4)
    identified = identified_models(pairs)
    assert identified.tolist() == [False, False, False, False]  # 0 never lost; 3 never played
    assert np.all(np.isfinite(to_ratings(fit_strengths(pairs))))
    pairs = pair_counts([0, 0, 1, 1, 2], [1, 2, 2, 0, 1], [A_WINS] * 5, 4)
    assert identified_models(pairs).tolist() == [True, True, True, False]


def test_a_tie_counts_half_to_each_side():
    pairs = pair_counts([0, 0], [1, 1], [TIE, TIE], 2)
    assert np.allclose(to_ratings(fit_strengths(pairs)), [ANCHOR, ANCHOR])
    # One win and two ties: a score of 2 of 3, so 10^(d) = 2 and d = log10(2) in strengths.
    pairs = pair_counts([0, 0, 1], [1, 1, 0], [A_WINS, TIE, TIE], 2)
    strengths = fit_strengths(pairs)
    # The ridge that keeps undefeated models finite moves it by less than 1e-9 here.
    assert strengths[0] - strengths[1] == pytest.approx(np.log10(2.0), abs=1e-8)


def test_neighbours_are_a_tie_only_when_neither_is_ahead_in_95_percent():
    resamples = np.array([[1.0, 0.0]] * 96 + [[0.0, 1.0]] * 4)
    assert ahead_shares([0, 1], resamples) == [pytest.approx(0.96)]
    assert not is_tie(0.96)
    assert not is_tie(0.04)  # the next one is ahead
    assert is_tie(0.5) and is_tie(0.94) and is_tie(0.06)


def test_online_elo_follows_the_classic_update():
    ratings = online_elo([0], [1], [A_WINS], 2)
    assert ratings.tolist() == [pytest.approx(1002.0), pytest.approx(998.0)]
    ratings = online_elo([0, 1], [1, 0], [A_WINS, TIE], 2)
    expected = 1.0 / (1.0 + 10 ** ((1002.0 - 998.0) / 400.0))
    assert ratings[1] == pytest.approx(998.0 + 4 * (0.5 - expected))


def test_battle_and_win_fraction_matrices():
    pairs = pair_counts([0, 0, 1, 2, 2], [1, 1, 0, 0, 1], [A_WINS, TIE, A_WINS, B_WINS, TIE], 3)
    battles, fraction = battle_matrices(pairs)
    assert battles.tolist() == [[0, 3, 1], [3, 0, 1], [1, 1, 0]]
    assert fraction[0, 1] == 0.5 and fraction[1, 0] == 0.5
    assert fraction[0, 2] == 1.0 and fraction[2, 0] == 0.0
    assert np.isnan(fraction[1, 2]) and np.isnan(fraction[0, 0])


def test_style_control_takes_the_length_advantage_out_of_the_rating():
    rng = np.random.default_rng(9)
    count, battles = 4, 6000
    a = rng.integers(0, count, battles)
    b = (a + rng.integers(1, count, battles)) % count
    verbose = np.array([400.0, 100.0, 100.0, 100.0])  # model 0 answers at length
    length_a = verbose[a] * rng.uniform(0.8, 1.2, battles)
    length_b = verbose[b] * rng.uniform(0.8, 1.2, battles)
    gap = (length_a - length_b) / (length_a + length_b)
    p_a = 1.0 / (1.0 + np.exp(-2.5 * gap))  # equal strengths; length alone wins votes
    outcome = np.where(rng.random(battles) < p_a, A_WINS, B_WINS)
    plain = fit_strengths(pair_counts(a, b, outcome, count))
    controlled, coefficient = style_controlled_strengths(a, b, outcome, length_a, length_b, count)
    assert coefficient > 0.5
    assert plain[0] - plain[1:].mean() > 0.1
    assert abs(controlled[0] - controlled[1:].mean()) < 0.05


def test_bad_battles_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="two different models"):
        pair_counts([0], [0], [A_WINS], 2)
    with pytest.raises(ValueError, match="outside"):
        pair_counts([0], [5], [A_WINS], 2)
    with pytest.raises(ValueError, match="outcome"):
        pair_counts([0], [1], [7], 2)
