"""Pair sampling of the arena (no DB)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from annotation.arena.pairing import all_pairs, uncertain_pair, uniform_pair


def test_uniform_draws_every_pair_about_equally_and_both_sides():
    rng = np.random.default_rng(0)
    draws = [uniform_pair([1, 2, 3, 4], rng, minimum=0) for _ in range(6000)]
    pairs = Counter(tuple(sorted(pair)) for pair in draws)
    assert set(pairs) == set(all_pairs([1, 2, 3, 4]))
    assert all(800 < count < 1200 for count in pairs.values())
    assert 0.45 < np.mean([a < b for a, b in draws]) < 0.55


def test_a_pair_below_the_minimum_is_drawn_first():
    rng = np.random.default_rng(1)
    battles = {(1, 2): 5, (1, 3): 5, (2, 3): 0}
    for _ in range(20):
        assert sorted(uniform_pair([1, 2, 3], rng, battles, minimum=1)) == [2, 3]
        assert sorted(uncertain_pair([1, 2, 3], rng, battles, {}, minimum=1)) == [2, 3]


def test_uncertain_sampling_favours_pairs_whose_order_is_a_coin_toss_but_meets_every_pair():
    rng = np.random.default_rng(2)
    battles = {pair: 10 for pair in all_pairs([1, 2, 3])}
    ahead = {(1, 2): 1.0, (1, 3): 1.0, (2, 3): 0.5}
    draws = Counter(
        tuple(sorted(uncertain_pair([1, 2, 3], rng, battles, ahead))) for _ in range(3000)
    )
    assert draws[(2, 3)] > 5 * draws[(1, 2)]
    assert draws[(1, 2)] > 0 and draws[(1, 3)] > 0


def test_one_model_is_not_an_arena():
    with pytest.raises(ValueError, match="two models"):
        uniform_pair([7], np.random.default_rng(0))
