"""Which two models meet in the next battle (pure: no DB).

``uniform_pair`` draws every unordered pair with the same chance. ``uncertain_pair`` favours
the pairs whose order the battles so far leave least certain, so that the intervals shrink
fastest: a pair's weight is ``floor + 1 - |2 s - 1|``, where ``s`` is the share of bootstrap
resamples that rate its first model above its second (1 for a pair whose order is a coin
toss, 0 for one that every resample agrees on). Either way, a pair with fewer than
``minimum`` battles is drawn before any other, and the floor keeps every pair's chance
positive, so every model meets every other. The side (A or B) is a fair coin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

FLOOR = 0.05


def all_pairs(models: Sequence[int]) -> list[tuple[int, int]]:
    ordered = sorted(set(models))
    return [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1 :]]


def _starved(pairs, battles: Mapping[tuple[int, int], int], minimum: int):
    return [pair for pair in pairs if battles.get(pair, 0) < minimum]


def _sided(pair: tuple[int, int], rng: np.random.Generator) -> tuple[int, int]:
    return pair if rng.random() < 0.5 else (pair[1], pair[0])


def uniform_pair(
    models: Sequence[int],
    rng: np.random.Generator,
    battles: Mapping[tuple[int, int], int] | None = None,
    minimum: int = 1,
) -> tuple[int, int]:
    """Return (model A, model B): a pair that has met fewer than ``minimum`` times if there is
    one, otherwise any pair, each with the same chance."""
    pairs = all_pairs(models)
    if not pairs:
        raise ValueError("an arena needs at least two models")
    pool = _starved(pairs, battles or {}, minimum) or pairs
    return _sided(pool[int(rng.integers(len(pool)))], rng)


def uncertain_pair(
    models: Sequence[int],
    rng: np.random.Generator,
    battles: Mapping[tuple[int, int], int],
    ahead: Mapping[tuple[int, int], float],
    minimum: int = 1,
    floor: float = FLOOR,
) -> tuple[int, int]:
    """Return (model A, model B), favouring pairs whose order is uncertain.

    ``ahead[(i, j)]`` (``i < j``) is the share of resamples rating ``i`` above ``j``; a pair
    missing from it counts as a coin toss.
    """
    pairs = all_pairs(models)
    if not pairs:
        raise ValueError("an arena needs at least two models")
    starved = _starved(pairs, battles, minimum)
    if starved:
        return _sided(starved[int(rng.integers(len(starved)))], rng)
    share = np.array([ahead.get(pair, 0.5) for pair in pairs])
    weight = floor + 1.0 - np.abs(2.0 * share - 1.0)
    chosen = int(rng.choice(len(pairs), p=weight / weight.sum()))
    return _sided(pairs[chosen], rng)
